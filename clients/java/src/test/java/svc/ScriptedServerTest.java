package svc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The scripted-server halves of spec/conformance (S1, S2, S4, S5, S7): a TLS server speaking the TCP
 * framing plays the server's side of one connection from the transcript, against
 * {@link SvcClientTCP}; also the receive bound (a header announcing more than 1 GiB ends the
 * connection as a disconnect). {@code client_clock} has nothing to move in the Java client (no
 * timer on a demultiplexed request); the {@code pending} check that follows it still runs.
 */
class ScriptedServerTest {
    private static final String TOKEN = "test-token";
    private static Path keyStore;
    private static Path caPem;

    @BeforeAll
    static void certificate() throws Exception {
        Path dir = Files.createTempDirectory("svc-java-scripted-");
        dir.toFile().deleteOnExit();
        keyStore = dir.resolve("server.p12");
        caPem = dir.resolve("server.pem");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        run(keytool, "-genkeypair", "-alias", "server", "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12", "-keystore",
                keyStore.toString(), "-storepass", "changeit", "-keypass", "changeit");
        run(keytool, "-exportcert", "-rfc", "-alias", "server", "-keystore", keyStore.toString(), "-storepass",
                "changeit", "-file", caPem.toString());
        keyStore.toFile().deleteOnExit();
        caPem.toFile().deleteOnExit();
    }

    private static void run(String... argv) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", argv) + ": " + out);
    }

    /** One listening socket; the server's side of the one connection the client opens. */
    static final class ScriptedServer implements AutoCloseable {
        final SSLServerSocket listener;
        SSLSocket socket;
        OutputStream out;
        final BlockingQueue<RequestMessage> requests = new LinkedBlockingQueue<>();
        volatile JSONObject answerEvery;
        RequestMessage last;

        ScriptedServer() throws Exception {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(keyStore)) {
                ks.load(in, "changeit".toCharArray());
            }
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, "changeit".toCharArray());
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            listener = (SSLServerSocket) ctx.getServerSocketFactory().createServerSocket(0, 1,
                    java.net.InetAddress.getLoopbackAddress());
        }

        int port() {
            return listener.getLocalPort();
        }

        void accept() throws IOException {
            socket = (SSLSocket) listener.accept();
            out = socket.getOutputStream();
            Thread reader = new Thread(this::readLoop, "scripted-server-reader");
            reader.setDaemon(true);
            reader.start();
        }

        private void readLoop() {
            try {
                InputStream in = socket.getInputStream();
                FrameDecoder decoder = new FrameDecoder(FrameDecoder.CLIENT_MAX_BODY_BYTES);
                byte[] buffer = new byte[64 * 1024];
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    decoder.push(buffer, 0, n, body -> {
                        try {
                            RequestMessage req = RequestMessage.deserialize(body);
                            JSONObject every = answerEvery;
                            if (every != null) {
                                write(frame(answerOf(req, every)));
                            } else {
                                requests.add(req);
                            }
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    });
                }
            } catch (IOException | RuntimeException e) {
                // the connection ended (reset by a step, or the client closed)
            }
        }

        synchronized void write(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
        }

        RequestMessage next() throws InterruptedException {
            RequestMessage r = requests.poll(30, TimeUnit.SECONDS);
            assertNotNull(r, "the client sent a request");
            return r;
        }

        void reset() throws IOException {
            socket.setSoLinger(true, 0);
            socket.close();
        }

        @Override
        public void close() throws IOException {
            if (socket != null) {
                socket.close();
            }
            listener.close();
        }
    }

    static byte[] frame(ResponseMessage r) throws WireFormatException {
        return FrameDecoder.encode(r.serialize(), FrameDecoder.CLIENT_MAX_BODY_BYTES);
    }

    static ResponseMessage answerOf(RequestMessage req, JSONObject entry) {
        ResponseMessage r = new ResponseMessage();
        r.uuid = req.uuid;
        r.request_uri = req.request_uri;
        r.http_status = entry.getInt("status");
        r.body_msg_type = "application/json";
        JSONObject body = entry.getJSONObject("body");
        if ("request_uri".equals(body.optString("echo", null))) {
            body = new JSONObject().put("name", req.request_uri);
        }
        r.body = body.toString().getBytes(StandardCharsets.UTF_8);
        return r;
    }

    static ResponseMessage pushOf(JSONObject entry) {
        String id = entry.getString("subscription_id");
        String type = entry.optString("event_type", "STDOUT");
        ResponseMessage r = new ResponseMessage();
        r.uuid = UUID.randomUUID().toString();
        r.request_uri = MessageDemuxer.EVENT_URI;
        r.http_status = 200;
        r.body_msg_type = "application/json";
        r.headers.put("X-Subscription-Id", id);
        r.headers.put("X-Event-Type", type);
        r.headers.put("X-App-Name", "a");
        r.body = new JSONObject().put("subscription_id", id).put("event_type", type).put("app_name", "a")
                .put("timestamp", 1_767_225_600_000L).put("sequence", entry.getLong("sequence"))
                .put("data", entry.optJSONObject("data") == null ? new JSONObject() : entry.getJSONObject("data"))
                .toString().getBytes(StandardCharsets.UTF_8);
        return r;
    }

    /** The client's side of one transcript run. */
    static final class Script {
        final ScriptedServer server;
        final SvcClientTCP client;
        final Map<String, Object> vars = new LinkedHashMap<>();

        Script(ScriptedServer server, SvcClientTCP client) {
            this.server = server;
            this.client = client;
        }

        void step(JSONObject entry) throws Exception {
            if (entry.has("client")) {
                clientStep(entry);
            } else if (entry.has("server")) {
                serverStep(entry);
            } else if (entry.has("client_clock")) {
                return; // no client clock: see the class comment
            } else {
                expectation(entry.getJSONObject("expect"));
            }
        }

        private void clientStep(JSONObject e) throws Exception {
            switch (e.getString("client")) {
                case "request": {
                    int count = e.optInt("count", 1);
                    List<CompletableFuture<Object>> all = new ArrayList<>();
                    for (int i = 0; i < count; i++) {
                        all.add(client.requestAsync(e.getString("method"), e.getString("path").replace("${i}",
                                String.valueOf(i)), null, null, null).thenApply(r -> new JSONObject(r.text()).toMap()));
                    }
                    vars.put(e.getString("as"), count == 1 ? all.get(0)
                            : CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).thenApply(v -> {
                                List<Object> list = new ArrayList<>();
                                all.forEach(f -> list.add(f.join()));
                                return list;
                            }));
                    return;
                }
                case "subscribe": {
                    List<MessageDemuxer.AppEvent> events = Collections.synchronizedList(new ArrayList<>());
                    vars.put(e.getString("events_as"), events);
                    JSONArray ev = e.getJSONArray("events");
                    String[] names = new String[ev.length()];
                    for (int i = 0; i < names.length; i++) {
                        names[i] = ev.getString(i);
                    }
                    vars.put("subscribe", CompletableFuture.supplyAsync(() -> {
                        try {
                            return client.subscribe(e.getString("app"), names, events::add);
                        } catch (IOException ex) {
                            throw new java.util.concurrent.CompletionException(ex);
                        }
                    }));
                    return;
                }
                case "await":
                    ((CompletableFuture<?>) vars.get(e.getString("of"))).get(60, TimeUnit.SECONDS);
                    return;
                default:
                    fail("unknown client step " + e);
            }
        }

        private void serverStep(JSONObject e) throws Exception {
            switch (e.getString("server")) {
                case "expect": {
                    RequestMessage r = server.next();
                    assertEquals(e.getString("method"), r.http_method);
                    assertEquals(e.getString("path"), r.request_uri);
                    JSONObject headers = e.optJSONObject("headers");
                    if (headers != null) {
                        for (String name : headers.keySet()) {
                            String got = null;
                            for (Map.Entry<String, String> h : r.headers.entrySet()) {
                                if (h.getKey().equalsIgnoreCase(name)) {
                                    got = h.getValue();
                                }
                            }
                            assertEquals(headers.getString(name), got, "header " + name);
                        }
                    }
                    server.last = r;
                    return;
                }
                case "answer":
                    server.write(frame(answerOf(server.last, e)));
                    return;
                case "answer_every_request":
                    server.answerEvery = e;
                    return;
                case "push":
                    server.write(frame(pushOf(e)));
                    return;
                case "burst": {
                    ByteArrayOutputStream all = new ByteArrayOutputStream();
                    JSONArray frames = e.getJSONArray("frames");
                    for (int i = 0; i < frames.length(); i++) {
                        JSONObject f = frames.getJSONObject(i);
                        all.write(frame(f.has("push") ? pushOf(f.getJSONObject("push"))
                                : answerOf(server.last, f.getJSONObject("answer"))));
                    }
                    server.write(all.toByteArray());
                    return;
                }
                case "flood": {
                    // 77,000 pushes: built from a string template (same shape as pushOf), not JSONObject.
                    JSONObject ids = e.getJSONObject("ids");
                    JSONObject seq = e.getJSONObject("sequences");
                    ByteArrayOutputStream all = new ByteArrayOutputStream();
                    long n = 0;
                    for (long s = seq.getLong("from"); s <= seq.getLong("to"); s++) {
                        for (int i = 0; i < ids.getInt("count"); i++) {
                            String id = ids.getString("prefix") + i;
                            ResponseMessage r = new ResponseMessage();
                            r.uuid = "flood-push-" + n++;
                            r.request_uri = MessageDemuxer.EVENT_URI;
                            r.http_status = 200;
                            r.body_msg_type = "application/json";
                            r.headers.put("X-Subscription-Id", id);
                            r.body = ("{\"subscription_id\":\"" + id + "\",\"event_type\":\"STDOUT\",\"app_name\":\"a\","
                                    + "\"timestamp\":1767225600000,\"sequence\":" + s + ",\"data\":{}}")
                                    .getBytes(StandardCharsets.UTF_8);
                            all.write(frame(r));
                        }
                    }
                    server.write(all.toByteArray());
                    return;
                }
                case "reset":
                    server.reset();
                    return;
                default:
                    fail("unknown server step " + e);
            }
        }

        private void expectation(JSONObject spec) throws Exception {
            MessageDemuxer demux = client.getDemuxer();
            if (spec.has("demux")) {
                long actual;
                switch (spec.getString("demux")) {
                    case "dropped_events":
                        actual = demux.getDroppedEvents();
                        break;
                    case "buffered_subscriptions":
                        actual = demux.getBufferedSubscriptions();
                        break;
                    case "pending_requests":
                        actual = demux.getPendingRequests();
                        break;
                    default:
                        throw new AssertionError("unknown counter " + spec);
                }
                assertEquals(spec.getLong("equals"), actual, spec.getString("demux"));
                return;
            }
            String name = spec.getString("of");
            Object v = vars.get(name);
            if (spec.optBoolean("pending", false)) {
                assertTrue(v instanceof CompletableFuture && !((CompletableFuture<?>) v).isDone(), name + " pending");
                return;
            }
            if (spec.has("error")) {
                assertEquals("transport_disconnected", spec.getString("error"));
                ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> ((CompletableFuture<?>) v).get(30, TimeUnit.SECONDS));
                assertTrue(failed.getCause() instanceof TransportDisconnectedException, String.valueOf(failed.getCause()));
                assertFalse(failed.getCause().getMessage().toLowerCase(java.util.Locale.ROOT).contains("timeout"));
                return;
            }
            // Events reach their callbacks on pool threads (only the JavaScript client dispatches
            // inline), so a check of collected events waits for them to arrive.
            boolean events = v instanceof List && (((List<?>) v).isEmpty()
                    || ((List<?>) v).get(0) instanceof MessageDemuxer.AppEvent);
            if (spec.optBoolean("eventually", false) || events) {
                ConformanceTest.eventually(() -> {
                    try {
                        check(spec, vars.get(name));
                        return true;
                    } catch (AssertionError | Exception e) {
                        return false;
                    }
                }, spec.toString());
            }
            check(spec, v);
        }

        private static void check(JSONObject spec, Object v) throws Exception {
            Object value = v instanceof CompletableFuture ? ((CompletableFuture<?>) v).get(30, TimeUnit.SECONDS) : v;
            if (spec.has("sequences")) {
                List<Long> got = new ArrayList<>();
                for (Object e : new ArrayList<>((List<?>) value)) {
                    got.add(((MessageDemuxer.AppEvent) e).sequence);
                }
                List<Long> want = new ArrayList<>();
                JSONArray s = spec.getJSONArray("sequences");
                for (int i = 0; i < s.length(); i++) {
                    want.add(s.getLong(i));
                }
                assertEquals(want, got);
            }
            if (spec.has("count")) {
                assertEquals(spec.getInt("count"), ((List<?>) value).size());
            }
            if (spec.has("equals")) {
                Object want = spec.get("equals");
                if (want instanceof JSONArray) {
                    JSONArray items = (JSONArray) want;
                    List<?> list = new ArrayList<>((List<?>) value);
                    assertEquals(items.length(), list.size(), "items " + list);
                    for (int i = 0; i < items.length(); i++) {
                        matches(items.getJSONObject(i), asMap(list.get(i)));
                    }
                } else {
                    matches((JSONObject) want, asMap(value));
                }
            }
        }

        private static Map<?, ?> asMap(Object o) {
            if (o instanceof MessageDemuxer.AppEvent) {
                MessageDemuxer.AppEvent e = (MessageDemuxer.AppEvent) o;
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("subscription_id", e.subscriptionId);
                m.put("event_type", e.eventType);
                return m;
            }
            return (Map<?, ?>) o;
        }

        private static void matches(JSONObject want, Map<?, ?> got) {
            for (String k : want.keySet()) {
                assertEquals(want.get(k), got.get(k), k + " of " + got);
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> transcripts() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String id : List.of("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8")) {
            JSONObject s = Spec.object("spec/conformance/" + id + ".json");
            if (!s.has("scripted")) {
                continue;
            }
            tests.add(DynamicTest.dynamicTest(id + " scripted: " + s.getString("title"), () -> {
                JSONArray transcript = s.getJSONObject("scripted").getJSONArray("transcript");
                try (ScriptedServer server = new ScriptedServer();
                        SvcClientTCP client = new SvcClientTCP.Builder().host("127.0.0.1").port(server.port())
                                .caCert(caPem.toString()).jwtToken(TOKEN).readTimeoutMs(1000).build()) {
                    CompletableFuture<Void> accepted = CompletableFuture.runAsync(() -> {
                        try {
                            server.accept();
                        } catch (IOException e) {
                            throw new java.util.concurrent.CompletionException(e);
                        }
                    });
                    client.connect();
                    accepted.get(30, TimeUnit.SECONDS);
                    Script script = new Script(server, client);
                    for (int i = 0; i < transcript.length(); i++) {
                        JSONObject entry = transcript.getJSONObject(i);
                        try {
                            script.step(entry);
                        } catch (AssertionError | Exception e) {
                            throw new AssertionError("entry " + (i + 1) + " " + entry + ": " + e, e);
                        }
                    }
                }
            }));
        }
        assertEquals(5, tests.size(), "scripted transcripts of S1, S2, S4, S5, S7");
        return tests.stream();
    }

    @Test
    void aHeaderAboveTheReceiveBoundEndsTheConnectionAsADisconnect() throws Exception {
        try (ScriptedServer server = new ScriptedServer();
                SvcClientTCP client = new SvcClientTCP.Builder().host("127.0.0.1").port(server.port())
                        .caCert(caPem.toString()).jwtToken(TOKEN).build()) {
            CompletableFuture<Void> accepted = CompletableFuture.runAsync(() -> {
                try {
                    server.accept();
                } catch (IOException e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            });
            client.connect();
            accepted.get(30, TimeUnit.SECONDS);
            CompletableFuture<ResponseMessage> pending = client.requestAsync("GET", "/svc/self", null, null, null);
            server.next();
            // 0x07C707F8, then a length of 1 GiB + 1, and no body: the client must not wait for it.
            server.write(new byte[] { 0x07, (byte) 0xc7, 0x07, (byte) 0xf8, 0x40, 0, 0, 1 });
            ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> pending.get(30, TimeUnit.SECONDS));
            assertTrue(failed.getCause() instanceof TransportDisconnectedException, String.valueOf(failed.getCause()));
            client.closedFuture().get(30, TimeUnit.SECONDS);
            assertFalse(client.isConnected());
            CompletableFuture<ResponseMessage> later = client.requestAsync("GET", "/svc/self", null, null, null);
            ExecutionException again = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> later.get(5, TimeUnit.SECONDS));
            assertTrue(again.getCause() instanceof TransportDisconnectedException, "later calls fail at once");
        }
    }

    @Test
    void aServerThatNeverCompletesTheHandshakeIsAConnectError() throws Exception {
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
                SvcClientTCP client = new SvcClientTCP.Builder().host("127.0.0.1").port(silent.getLocalPort())
                        .caCert(caPem.toString()).jwtToken(TOKEN).connectTimeoutMs(500).build()) {
            // The listener accepts the TCP connection (backlog) and never says anything.
            CompletableFuture<ResponseMessage> call = client.requestAsync("GET", "/svc/self", null, null, null);
            ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> call.get(30, TimeUnit.SECONDS));
            assertTrue(failed.getCause() instanceof TransportDisconnectedException, String.valueOf(failed.getCause()));
        }
    }

    @Test
    void aMalformedMessageFromTheServerEndsTheConnection() throws Exception {
        try (ScriptedServer server = new ScriptedServer();
                SvcClientTCP client = new SvcClientTCP.Builder().host("127.0.0.1").port(server.port())
                        .caCert(caPem.toString()).jwtToken(TOKEN).build()) {
            CompletableFuture<Void> accepted = CompletableFuture.runAsync(() -> {
                try {
                    server.accept();
                } catch (IOException e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            });
            client.connect();
            accepted.get(30, TimeUnit.SECONDS);
            CompletableFuture<ResponseMessage> pending = client.requestAsync("GET", "/svc/self", null, null, null);
            server.next();
            server.write(FrameDecoder.encode(new byte[] { (byte) 0xc1 }, 16));
            ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> pending.get(30, TimeUnit.SECONDS));
            assertTrue(failed.getCause() instanceof TransportDisconnectedException, String.valueOf(failed.getCause()));
        }
    }
}
