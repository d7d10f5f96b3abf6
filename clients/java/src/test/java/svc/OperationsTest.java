package svc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every operation of spec/openapi.json called through the library against a real daemon, over REST,
 * TCP and WSS; the last case reads openapi.json and fails if an operation was never sent.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OperationsTest {
    private static final Set<String> SENT = ConcurrentHashMap.newKeySet();
    private static final Map<String, Pattern> OPERATIONS = new LinkedHashMap<>();
    private static TestDaemon daemon;

    @BeforeAll
    static void start() throws IOException {
        daemon = TestDaemon.shared();
        JSONObject paths = Spec.object("spec/openapi.json").getJSONObject("paths");
        for (String path : paths.keySet()) {
            JSONObject ops = paths.getJSONObject(path);
            for (String method : ops.keySet()) {
                if (ops.get(method) instanceof JSONObject && ops.getJSONObject(method).has("operationId")) {
                    String regex = "^" + method.toUpperCase() + " "
                            + Pattern.quote(path).replaceAll("\\{[^}]+\\}", "\\\\E[^/]+\\\\Q") + "$";
                    OPERATIONS.put(ops.getJSONObject(method).getString("operationId"), Pattern.compile(regex));
                }
            }
        }
    }

    /** A client whose every request is recorded as the openapi operation it calls. */
    private static <C extends SvcClient> C recorded(C client) {
        client.requestObserver = req -> {
            String line = req.http_method + " " + req.request_uri;
            OPERATIONS.forEach((id, p) -> {
                if (p.matcher(line).matches()) {
                    SENT.add(id);
                }
            });
        };
        return client;
    }

    private static SvcClient client(String transport) {
        return recorded(daemon.client(transport, daemon.admin()));
    }

    private static JSONObject shell(String command) {
        return new JSONObject().put("command", command).put("shell", true);
    }

    private static SvcApiException apiError(Class<? extends Throwable> unused, ThrowingCall call) {
        try {
            call.run();
        } catch (SvcApiException e) {
            return e;
        } catch (Exception e) {
            fail("expected SvcApiException, got " + e);
        }
        return fail("expected SvcApiException, the call succeeded");
    }

    @FunctionalInterface
    interface ThrowingCall {
        void run() throws Exception;
    }

    @Order(1)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void applications(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            String name = "java-ops-" + transport;
            JSONObject app = c.addApp(name, shell("echo hello; sleep 300"));
            assertEquals(name, app.getString("name"));
            boolean listed = false;
            JSONArray apps = c.listApps();
            for (int i = 0; i < apps.length(); i++) {
                listed |= name.equals(apps.getJSONObject(i).getString("name"));
            }
            assertTrue(listed, "listApps holds " + name);
            assertEquals(name, c.getApp(name).getString("name"));
            SvcClient.AppOutput out = c.getAppOutput(name, 0, 0, 0, null, 10);
            assertTrue(out.isSuccess());
            assertEquals("hello\n", out.getOutput());
            assertEquals(6L, out.getOutputPosition());
            assertNull(out.getExitCode());
            assertTrue(c.checkAppHealth(name));
            assertTrue(c.disableApp(name));
            assertFalse(c.getApp(name).getBoolean("enabled"));
            assertTrue(c.enableApp(name));
            assertTrue(c.deleteApp(name));
            assertFalse(c.deleteApp(name), "deleting a missing app answers false");
            SvcApiException missing = apiError(SvcApiException.class, () -> c.getApp(name));
            assertEquals(SvcErrorCode.APP_NOT_FOUND, missing.getErrorCode());
            assertEquals(404, missing.getStatus());
            SvcApiException badName = apiError(SvcApiException.class, () -> c.getApp("bad name!"));
            assertEquals(SvcErrorCode.INVALID_NAME, badName.getErrorCode());
            // A hostile name stays one path segment: it never reaches another operation.
            for (String hostile : List.of("../applications", "x/../../labels", "x?stdout_position=1", "%2e%2e")) {
                SvcApiException e = apiError(SvcApiException.class, () -> c.getApp(hostile));
                assertTrue(e.getStatus() == 400 || e.getStatus() == 404, hostile + ": " + e.getMessage());
            }
        }
    }

    @Order(2)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void runs(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            SvcClient.SyncRunResult sync = c.runAppSync(shell("echo sync; exit 4"), 30);
            assertEquals(4, sync.getExitCode());
            assertEquals("sync\n", sync.getOutput());
            SvcClient.AppRun run = c.runAppAsync(shell("printf 'one\\n'; printf 'two\\n'; exit 3"), 60, 300);
            StringBuilder text = new StringBuilder();
            Integer code = run.wait((data, position) -> text.append(data), 60);
            assertEquals(3, code);
            assertEquals("one\ntwo\n", text.toString());
            SvcApiException gone = apiError(SvcApiException.class, () -> c.getApp(run.getAppName()));
            assertEquals(SvcErrorCode.APP_NOT_FOUND, gone.getErrorCode(), "the run app is deleted after its exit");
            // Waiting for a run whose app is already gone: app-removed, not an API error.
            SvcClient.AppRun gone2 = c.runAppAsync(shell("sleep 300"), 60, 300);
            assertTrue(c.deleteApp(gone2.getAppName()));
            assertThrows(AppRemovedException.class, () -> c.waitForAsyncRun(gone2, null, 30));
            SvcClient.AppRun timed = c.runAppAsync(shell("sleep 300"), "PT5M", "PT10M");
            assertNull(c.waitForAsyncRunAsync(timed, null, Duration.ofMillis(300)).get(30, TimeUnit.SECONDS));
            assertTrue(c.deleteApp(timed.getAppName()), "a timed-out wait leaves the app");
        }
    }

    @Order(3)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void hostLabelsAndConfig(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            assertTrue(c.addLabel("zone", "z-" + transport));
            assertEquals("z-" + transport, c.listLabels().get("zone"));
            assertTrue(c.deleteLabel("zone"));
            assertFalse(c.listLabels().containsKey("zone"));
            assertTrue(c.getConfig().has("BaseConfig"));
            assertEquals("DEBUG", c.setLogLevel("DEBUG"));
            assertEquals("INFO", c.setLogLevel("INFO"));
            assertTrue(c.getHostResources().length() > 0);
            assertTrue(c.getMetrics().contains("# "), "Prometheus text");
        }
    }

    @Order(4)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void authorization(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            JSONObject self = c.getCurrentPrincipal();
            assertEquals(daemon.principal("svc-admin"), self.getString("principal_id"));
            JSONObject alias = new JSONObject(SvcClient.ok(c.request("GET", "/svc/self", null, null, null)).text());
            assertEquals(self.getString("principal_id"), alias.getString("principal_id"));
            Set<String> mine = c.getPrincipalPermissions();
            assertTrue(mine.contains("app-reg"));
            assertEquals(27, c.listPermissions().size());
            assertTrue(c.listRoles().has("svc-viewer"));
            String role = "java-role-" + transport;
            assertTrue(c.updateRole(role, List.of("app-view", "label-view")));
            assertEquals(2, c.listRoles().getJSONArray(role).length());
            assertTrue(c.deleteRole(role));
            assertFalse(c.deleteRole(role), "deleting a missing role answers false");
            String principal = "java-principal-" + transport;
            JSONObject record = c.updatePrincipal(principal, List.of("svc-viewer"));
            assertEquals("active", record.getString("status"));
            assertTrue(c.listPrincipals().has(principal));
            assertEquals("tombstoned", c.deletePrincipal(principal).getString("status"));
        }
    }

    @Order(5)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void discoveryNeedsNoToken(String transport) throws Exception {
        try (SvcClient c = recorded(daemon.client(transport, null))) {
            assertTrue(c.getAuthConfig().getJSONArray("flows") != null);
            assertTrue(c.getProtectedResourceMetadata().has("resource"));
            assertTrue(c.getOpenApi().getString("openapi").startsWith("3.1"));
        }
    }

    @Order(6)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void files(String transport) throws Exception {
        Path root = Files.createTempDirectory("svc-java-files-");
        try (SvcClient c = client(transport)) {
            c.setConfig(new JSONObject().put("BaseConfig",
                    new JSONObject().put("FileTransferRoots", new JSONArray().put(root.toString()))));
            File local = Files.createTempFile("svc-java-upload-", ".bin").toFile();
            byte[] content = new byte[70_000];
            for (int i = 0; i < content.length; i++) {
                content[i] = (byte) (i * 31);
            }
            Files.write(local.toPath(), content);
            local.setExecutable(true, true);
            String remote = root.resolve("dir with space é.bin").toString();
            assertTrue(c.uploadFile(local, remote, true));
            assertArrayEquals(content, Files.readAllBytes(Path.of(remote)));
            File back = new File(local.getPath() + ".back");
            assertTrue(c.downloadFile(remote, back.getPath(), true));
            assertArrayEquals(content, Files.readAllBytes(back.toPath()));
            assertTrue(back.canExecute(), "the mode came back with the file");
            // App Mesh 3.0's data-channel aliases of the same operations
            Map<String, String> h = new LinkedHashMap<>();
            h.put("X-File-Path", SvcClient.encode(root.resolve("alias.txt").toString()));
            SvcClient.ok(c.request("POST", "/svc/file/upload/ws", "alias".getBytes(StandardCharsets.UTF_8), h, null));
            assertEquals("alias", SvcClient.ok(c.request("GET", "/svc/file/download/ws", null, h, null)).text());
            SvcApiException outside = apiError(SvcApiException.class,
                    () -> c.uploadFile(local, "/etc/svc-java-should-not-exist", false));
            assertEquals(403, outside.getStatus(), outside.getMessage());
            Files.delete(local.toPath());
            Files.delete(back.toPath());
        } finally {
            try (SvcClient c = client("rest")) {
                c.setConfig(new JSONObject().put("BaseConfig", new JSONObject().put("FileTransferRoots", new JSONArray())));
            }
        }
    }

    @Order(6)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "tcp", "wss" })
    void aFirstRequestAboveOneMebibyteOnANewConnection(String transport) throws Exception {
        Path root = Files.createTempDirectory("svc-java-large-");
        try (SvcClient admin = client("rest")) {
            admin.setConfig(new JSONObject().put("BaseConfig",
                    new JSONObject().put("FileTransferRoots", new JSONArray().put(root.toString()))));
            byte[] content = new byte[2 * 1024 * 1024 + 7];
            java.util.Arrays.fill(content, (byte) 'x');
            File local = Files.createTempFile("svc-java-large-", ".bin").toFile();
            Files.write(local.toPath(), content);
            // The daemon takes at most 1 MiB before a connection has authenticated: the client
            // authenticates with a small request first.
            try (SvcClient fresh = client(transport)) {
                assertTrue(fresh.uploadFile(local, root.resolve("large.bin").toString(), false));
            }
            assertArrayEquals(content, Files.readAllBytes(root.resolve("large.bin")));
            Files.delete(local.toPath());
        } finally {
            try (SvcClient c = client("rest")) {
                c.setConfig(new JSONObject().put("BaseConfig", new JSONObject().put("FileTransferRoots", new JSONArray())));
            }
        }
    }

    @Order(7)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "tcp", "wss" })
    void subscriptions(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            String name = "java-sub-" + transport;
            c.addApp(name, shell("sleep 300"));
            List<MessageDemuxer.AppEvent> events = new ArrayList<>();
            CompletableFuture<MessageDemuxer.AppEvent> status = new CompletableFuture<>();
            JSONObject sub = c.subscribe(name, new String[] { "STATUS" }, e -> {
                events.add(e);
                status.complete(e);
            });
            JSONObject all = c.subscribe("*", "STATUS");
            c.disableApp(name);
            MessageDemuxer.AppEvent e = status.get(30, TimeUnit.SECONDS);
            assertEquals("STATUS", e.eventType);
            assertEquals(name, e.appName);
            assertFalse(e.data.getBoolean("enabled"));
            assertTrue(c.unsubscribe(all.getString("subscription_id")));
            Map<String, String> q = Map.of("subscription_id", sub.getString("subscription_id"));
            assertTrue(new JSONObject(SvcClient.ok(c.request("DELETE", SvcClient.appPath(name) + "/subscribe", null,
                    null, q)).text()).getBoolean("removed"));
            c.deleteApp(name);
        }
    }

    @Order(8)
    @Test
    void subscriptionsNeedAPersistentConnection() throws Exception {
        try (SvcClient c = client("rest")) {
            SvcApiException e = apiError(SvcApiException.class, () -> c.subscribe("x", "ALL"));
            assertEquals(SvcErrorCode.PERSISTENT_CONNECTION_REQUIRED, e.getErrorCode());
            assertEquals(405, e.getStatus());
            SvcApiException reg = apiError(SvcApiException.class,
                    () -> c.addApp("java-sub-rest", shell("true"), "ALL"));
            assertEquals(SvcErrorCode.PERSISTENT_CONNECTION_REQUIRED, reg.getErrorCode());
        }
    }

    @Order(9)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void bearerOnlyTokenSetterAndClearer(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            assertTrue(c.listApps().length() >= 0);
            c.clearToken();
            if ("wss".equals(transport)) {
                // The WSS session stays pinned to the principal of its upgrade.
                assertTrue(c.listApps().length() >= 0);
            } else {
                SvcApiException e = apiError(SvcApiException.class, c::listApps);
                assertEquals(401, e.getStatus());
                assertTrue(e.getErrorCode() == SvcErrorCode.UNAUTHORIZED, e.getMessage());
            }
            c.setToken("not-a-jwt");
            if (!"wss".equals(transport)) {
                SvcApiException e = apiError(SvcApiException.class, c::listApps);
                assertEquals(SvcErrorCode.INVALID_TOKEN, e.getErrorCode());
            }
            c.setToken(daemon.admin());
            assertTrue(c.listApps().length() >= 0);
        }
        try (SvcClient viewer = recorded(daemon.client(transport, daemon.token("svc-viewer")))) {
            SvcApiException e = apiError(SvcApiException.class, () -> viewer.addApp("java-denied", shell("true")));
            assertEquals(SvcErrorCode.FORBIDDEN, e.getErrorCode());
        }
        try (SvcClient machine = recorded(daemon.client(transport, daemon.token("machine")))) {
            SvcApiException e = apiError(SvcApiException.class,
                    () -> machine.runAppAsync(shell("true"), 10, 10));
            assertEquals(403, e.getStatus(), "the machine identity may not run commands");
        }
    }

    @Order(9)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void forwardingWithXTargetHost(String transport) throws Exception {
        String self = "127.0.0.1:" + daemon.tcpPort();
        try (SvcClient c = client(transport)) {
            c.setForwardTo("127.0.0.1:1");
            SvcApiException refused = apiError(SvcApiException.class, c::getCurrentPrincipal);
            assertEquals(SvcErrorCode.TARGET_NOT_ALLOWED, refused.getErrorCode());
            c.setForwardTo(null);
            c.setConfig(new JSONObject().put("REST", new JSONObject().put("ForwardTargets", new JSONArray().put(self))));
            c.setForwardTo(self);
            assertEquals(daemon.principal("svc-admin"), c.getCurrentPrincipal().getString("principal_id"));
            c.setForwardTo(null);
        } finally {
            try (SvcClient c = client("rest")) {
                c.setConfig(new JSONObject().put("REST", new JSONObject().put("ForwardTargets", new JSONArray())));
            }
        }
    }

    @Order(10)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void tasksAndTheWorkerLoop(String transport) throws Exception {
        // The worker's client has no bearer: the process key alone authorizes the task RPC (over WSS
        // a session without a bearer is limited to it).
        try (SvcClient c = client(transport); SvcClient workerClient = recorded(daemon.client(transport, null))) {
            String name = "java-task-" + transport;
            // The app hands its process key to the test through an owner-only file (never its output).
            Path keyDir = Files.createTempDirectory("svc-java-key-");
            Path keyFile = keyDir.resolve("key");
            c.addApp(name, shell("umask 077; printf %s \"$SVC_PROCESS_KEY\" > '" + keyFile + ".tmp' && mv '"
                    + keyFile + ".tmp' '" + keyFile + "'; exec sleep 300"));
            ConformanceTest.eventually(() -> Files.exists(keyFile), "the process key file");
            String key = Files.readString(keyFile);
            Files.delete(keyFile);
            Files.delete(keyDir);
            Map<String, String> env = Map.of("SVC_PROCESS_KEY", key, "SVC_APPLICATION_NAME", name);
            SvcWorker worker = new SvcWorker(workerClient, env);

            CompletableFuture<String> result = CompletableFuture.supplyAsync(() -> {
                try {
                    return c.runTask(name, "hello", 60);
                } catch (IOException e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            });
            byte[] payload = worker.fetchTask();
            assertEquals("hello", new String(payload, StandardCharsets.UTF_8));
            worker.sendTaskResult(("result:" + new String(payload, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
            assertEquals("result:hello", result.get(60, TimeUnit.SECONDS));

            // A task nobody fetches, cancelled by the client: its submitter gets 409 task_cancelled.
            CompletableFuture<String> pending = CompletableFuture.supplyAsync(() -> {
                try {
                    return c.runTask(name, "never", 60);
                } catch (IOException e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            });
            ConformanceTest.eventually(() -> {
                try {
                    return c.cancelTask(name);
                } catch (IOException e) {
                    return false;
                }
            }, "a pending task to cancel");
            Throwable cancelled = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> pending.get(60, TimeUnit.SECONDS)).getCause();
            assertTrue(cancelled instanceof SvcApiException
                    && ((SvcApiException) cancelled).getErrorCode() == SvcErrorCode.TASK_CANCELLED, String.valueOf(cancelled));

            // stop() from another thread ends a fetch that is waiting in its long poll (30 s): null.
            java.util.concurrent.CountDownLatch fetching = new java.util.concurrent.CountDownLatch(1);
            java.util.function.Consumer<RequestMessage> recorder = workerClient.requestObserver;
            workerClient.requestObserver = req -> {
                recorder.accept(req);
                if ("GET".equals(req.http_method)) {
                    fetching.countDown();
                }
            };
            CompletableFuture<byte[]> idle = CompletableFuture.supplyAsync(worker::fetchTask);
            assertTrue(fetching.await(30, TimeUnit.SECONDS), "the fetch was sent");
            long stopped = System.nanoTime();
            worker.stop();
            assertNull(idle.get(20, TimeUnit.SECONDS));
            assertTrue(System.nanoTime() - stopped < TimeUnit.SECONDS.toNanos(20), "without waiting for the long poll");

            // The app restarts: the old key belongs to a superseded process (412).
            c.disableApp(name);
            c.enableApp(name);
            SvcWorker old = new SvcWorker(workerClient, env);
            ProcessSupersededException superseded = assertThrows(ProcessSupersededException.class, old::fetchTask);
            assertEquals(SvcErrorCode.PROCESS_SUPERSEDED, ((SvcApiException) superseded.getCause()).getErrorCode());
            c.deleteApp(name);
        }
    }

    @Order(11)
    @Test
    void workerRejectionsAreImmediateAndNeverRetried() throws Exception {
        try (SvcClient c = client("rest")) {
            List<String> sent = new ArrayList<>();
            c.requestObserver = req -> sent.add(req.http_method + " " + req.request_uri);
            IllegalStateException noEnv = assertThrows(IllegalStateException.class,
                    () -> new SvcWorker(c, Map.of()).fetchTask());
            assertTrue(noEnv.getMessage().contains("SVC_PROCESS_KEY"));
            assertThrows(IllegalStateException.class,
                    () -> new SvcWorker(c, Map.of("SVC_PROCESS_KEY", "k")).fetchTask());
            assertEquals(List.of(), sent, "nothing is sent without the environment");
            // 400 (an application name the daemon refuses): the loop stops at once.
            IllegalStateException rejected = assertThrows(IllegalStateException.class,
                    () -> new SvcWorker(c, Map.of("SVC_PROCESS_KEY", "k", "SVC_APPLICATION_NAME", "bad name!"))
                            .fetchTask());
            assertEquals(SvcErrorCode.INVALID_NAME, ((SvcApiException) rejected.getCause()).getErrorCode());
            assertEquals(1, sent.size(), "one attempt, no retry: " + sent);
        }
    }

    @Order(11)
    @Test
    void otherWorkerFailuresAreRetriedWithA100MillisecondFloorUntilStop() throws Exception {
        try (SvcClient c = client("rest")) {
            List<Long> attempts = java.util.Collections.synchronizedList(new ArrayList<>());
            java.util.function.Consumer<RequestMessage> recorder = c.requestObserver;
            c.requestObserver = req -> {
                recorder.accept(req);
                attempts.add(System.nanoTime());
            };
            // Not the key of any process (403): neither 400 nor 412, so the loop keeps trying.
            SvcWorker worker = new SvcWorker(c, Map.of("SVC_PROCESS_KEY", "0".repeat(64), "SVC_APPLICATION_NAME",
                    "java-retry"));
            CompletableFuture<byte[]> fetch = CompletableFuture.supplyAsync(worker::fetchTask);
            ConformanceTest.eventually(() -> attempts.size() >= 4, "four attempts");
            worker.stop();
            assertNull(fetch.get(20, TimeUnit.SECONDS));
            List<Long> at = new ArrayList<>(attempts);
            for (int i = 1; i < at.size(); i++) {
                long gapMs = TimeUnit.NANOSECONDS.toMillis(at.get(i) - at.get(i - 1));
                // The floor is 100 ms between attempt starts; the margin absorbs scheduling delay
                // on a loaded machine (without a floor the local 403s would come ~1 ms apart).
                assertTrue(gapMs >= 50, "attempts " + i + " and " + (i + 1) + " only " + gapMs + " ms apart");
            }
        }
    }

    @Order(12)
    @ParameterizedTest(name = "over {0}")
    @ValueSource(strings = { "rest", "tcp", "wss" })
    void clusterOperationsOnAStandAloneDaemon(String transport) throws Exception {
        try (SvcClient c = client(transport)) {
            List<ThrowingCall> calls = List.of(c::listClusterApps, () -> c.getClusterApp("java-cluster"),
                    () -> c.addClusterApp("java-cluster", new JSONObject().put("replication", 1).put("port", 0)
                            .put("memoryMB", 0).put("condition", new JSONObject())
                            .put("content", shell("sleep 60").put("name", "java-cluster"))),
                    () -> c.deleteClusterApp("java-cluster"), c::listClusterNodes, c::getClusterTopology);
            // The test daemon is not in cluster mode: 404 not_found, a typed refusal (deleteClusterApp
            // answers false, as every delete of something missing).
            for (ThrowingCall call : calls.subList(0, 3)) {
                assertEquals(SvcErrorCode.NOT_FOUND, apiError(SvcApiException.class, call).getErrorCode());
            }
            assertFalse(c.deleteClusterApp("java-cluster"));
            for (ThrowingCall call : calls.subList(4, 6)) {
                assertEquals(SvcErrorCode.NOT_FOUND, apiError(SvcApiException.class, call).getErrorCode());
            }
        }
    }

    @Order(Integer.MAX_VALUE)
    @Test
    void everyOperationOfOpenapiIsCalled() {
        Set<String> missing = new TreeSet<>(OPERATIONS.keySet());
        missing.removeAll(SENT);
        assertTrue(OPERATIONS.size() > 30, "openapi.json lists the operations");
        assertEquals(new TreeSet<>(), missing, "operations of spec/openapi.json never called");
    }
}
