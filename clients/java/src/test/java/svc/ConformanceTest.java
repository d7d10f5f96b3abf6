package svc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Conformance scenarios S1–S8 run from their language-neutral data (spec/conformance/S&lt;n&gt;.json,
 * format in spec/README.md) against a real svcd from the test daemon command, over each transport a
 * scenario names. This class only maps the data's steps onto the Java client.
 *
 * <p>{@code advance_clock}: the Java client holds no timer on a demultiplexed request, so there is
 * no clock to advance; instead every persistent client here is built with a receive timeout of 1 s
 * ({@code readTimeoutMs(1000)}), shorter than the daemon's 2 s long poll of S1: a client that capped
 * a demultiplexed request by its receive timeout would fail S1.
 */
class ConformanceTest {
    private static final List<String> IDS = List.of("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8");
    private static final Duration EVENTUALLY = Duration.ofSeconds(30);

    @Test
    void everyScenarioHasDaemonSteps() {
        for (String id : IDS) {
            JSONObject s = Spec.object("spec/conformance/" + id + ".json");
            assertEquals(id, s.getString("id"));
            assertTrue(s.getJSONObject("daemon").getJSONArray("steps").length() > 0, id);
        }
    }

    @TestFactory
    Stream<DynamicTest> scenarios() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String id : IDS) {
            JSONObject s = Spec.object("spec/conformance/" + id + ".json");
            JSONArray transports = s.getJSONArray("transports");
            for (int i = 0; i < transports.length(); i++) {
                String transport = transports.getString(i);
                tests.add(DynamicTest.dynamicTest(id + " over " + transport + ": " + s.getString("title"),
                        () -> runScenario(s, transport)));
            }
        }
        return tests.stream();
    }

    private static void runScenario(JSONObject scenario, String transport) throws Exception {
        JSONObject daemonPart = scenario.getJSONObject("daemon");
        boolean fresh = daemonPart.optBoolean("fresh", false);
        TestDaemon daemon = fresh ? TestDaemon.start() : TestDaemon.shared();
        Run run = new Run(daemon, transport);
        try {
            JSONArray steps = daemonPart.getJSONArray("steps");
            for (int i = 0; i < steps.length(); i++) {
                JSONObject step = steps.getJSONObject(i);
                try {
                    run.perform(step);
                } catch (AssertionError | Exception e) {
                    throw new AssertionError("step " + (i + 1) + " " + step + ": " + e, e);
                }
            }
        } finally {
            for (SvcClient c : run.clients.values()) {
                c.close();
            }
            if (fresh) {
                daemon.close();
            }
        }
    }

    /** Outcome of a run-wait or of a call that may fail. */
    static final class Outcome {
        final Object value;
        final Throwable error;

        Outcome(Object value, Throwable error) {
            this.value = value;
            this.error = error;
        }
    }

    /** The state of one scenario run: named results and clients, and the calls each client made. */
    static final class Run {
        final TestDaemon daemon;
        final String transport;
        final Map<String, Object> vars = new LinkedHashMap<>();
        final Map<String, SvcClient> clients = new LinkedHashMap<>();
        final Map<String, List<String[]>> calls = new LinkedHashMap<>();
        long killedAt;

        Run(TestDaemon daemon, String transport) {
            this.daemon = daemon;
            this.transport = transport;
            vars.put("transport", transport);
            vars.put("admin_principal", daemon.principal("svc-admin"));
        }

        SvcClient client(JSONObject step) {
            SvcClient c = clients.get(step.getString("client"));
            assertNotNull(c, "no client " + step.getString("client"));
            return c;
        }

        /** `${name}` / `${name.field}` substitution; a string that is only `${x}` keeps x's type. */
        Object resolve(Object value) {
            if (value instanceof String) {
                String s = (String) value;
                Matcher whole = Pattern.compile("^\\$\\{([^}]+)\\}$").matcher(s);
                if (whole.matches()) {
                    return lookup(whole.group(1));
                }
                Matcher m = Pattern.compile("\\$\\{([^}]+)\\}").matcher(s);
                StringBuilder sb = new StringBuilder();
                while (m.find()) {
                    m.appendReplacement(sb, Matcher.quoteReplacement(String.valueOf(lookup(m.group(1)))));
                }
                m.appendTail(sb);
                return sb.toString();
            }
            if (value instanceof JSONObject) {
                JSONObject in = (JSONObject) value;
                JSONObject out = new JSONObject();
                for (String k : in.keySet()) {
                    out.put(k, in.get(k) instanceof JSONObject && "while".equals(k) ? in.get(k) : resolve(in.get(k)));
                }
                return out;
            }
            if (value instanceof JSONArray) {
                JSONArray in = (JSONArray) value;
                JSONArray out = new JSONArray();
                for (int i = 0; i < in.length(); i++) {
                    out.put(resolve(in.get(i)));
                }
                return out;
            }
            return value;
        }

        Object lookup(String path) {
            String[] parts = path.split("\\.");
            Object v = vars.get(parts[0]);
            for (int i = 1; i < parts.length; i++) {
                if (v instanceof Outcome) {
                    v = ((Outcome) v).value;
                }
                if (v instanceof Map) {
                    v = ((Map<?, ?>) v).get(parts[i]);
                } else if (v instanceof JSONObject) {
                    v = ((JSONObject) v).opt(parts[i]);
                } else {
                    return null;
                }
            }
            return v;
        }

        void keep(JSONObject step, Object value) {
            if (step.has("as")) {
                vars.put(step.getString("as"), value);
            }
        }

        void perform(JSONObject raw) throws Exception {
            JSONObject step = (JSONObject) resolve(raw);
            switch (step.getString("do")) {
                case "connect":
                    connect(step);
                    return;
                case "register":
                    register(step);
                    return;
                case "run": {
                    SvcClient.AppRun r = client(step).runAppAsync(step.getJSONObject("app"), 600, 300);
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("name", r.getAppName());
                    m.put("process_uuid", r.getProcessUuid());
                    m.put("run", r);
                    keep(step, m);
                    return;
                }
                case "wait_run":
                    waitRun(step);
                    return;
                case "await_subscribed": {
                    SvcClient c = client(step);
                    eventually(() -> {
                        MessageDemuxer d = c.demuxerOrNull();
                        return d != null && d.registeredCallbacks() > 0;
                    }, "the run-wait's subscription is in place");
                    return;
                }
                case "output": {
                    SvcClient.AppOutput out = client(step).getAppOutput(step.getString("name"),
                            step.getLong("position"), 0, 0, null, step.getInt("timeout_seconds"));
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("bytes", out.getBytes().length);
                    if (out.getExitCode() != null) {
                        m.put("exit_code", out.getExitCode());
                    }
                    keep(step, m);
                    return;
                }
                case "advance_clock":
                    // See the class comment: the clients' receive timeout (1 s) is shorter than this step.
                    perform(step.getJSONObject("while"));
                    return;
                case "request":
                    request(step);
                    return;
                case "disable":
                    client(step).disableApp(step.getString("name"));
                    return;
                case "delete_app":
                    client(step).deleteApp(step.getString("name"));
                    return;
                case "unsubscribe":
                    client(step).unsubscribe(step.getString("id"));
                    return;
                case "get_app":
                    try {
                        keep(step, new Outcome(client(step).getApp(step.getString("name")), null));
                    } catch (IOException e) {
                        keep(step, new Outcome(null, e));
                    }
                    return;
                case "await_event": {
                    @SuppressWarnings("unchecked")
                    List<MessageDemuxer.AppEvent> events = (List<MessageDemuxer.AppEvent>) vars.get(step.getString("events"));
                    String type = step.getString("event_type");
                    eventually(() -> {
                        synchronized (events) {
                            return events.stream().anyMatch(e -> type.equals(e.eventType));
                        }
                    }, "an event " + type);
                    return;
                }
                case "kill_daemon":
                    killedAt = System.nanoTime();
                    daemon.killDaemon();
                    return;
                case "await_closed":
                    ((PersistentSvcClient) client(step)).closedFuture().get(30, TimeUnit.SECONDS);
                    assertTrue(!((PersistentSvcClient) client(step)).isConnected());
                    return;
                case "close":
                    client(step).close();
                    return;
                case "expect":
                    check(step);
                    return;
                default:
                    fail("unknown step " + step.getString("do"));
            }
        }

        private void connect(JSONObject step) {
            String name = step.getString("as");
            String kind = step.optString("transport", transport);
            SvcClient c;
            switch (kind) {
                case "tcp":
                    c = new SvcClientTCP.Builder().host("127.0.0.1").port(daemon.tcpPort()).caCert(daemon.ca())
                            .jwtToken(daemon.admin()).readTimeoutMs(1000).build();
                    break;
                case "wss":
                    c = new SvcClientWSS.Builder().host("127.0.0.1").port(daemon.restPort()).caCert(daemon.ca())
                            .jwtToken(daemon.admin()).readTimeoutMs(1000).build();
                    break;
                default:
                    c = daemon.restClient(daemon.admin());
            }
            List<String[]> log = Collections.synchronizedList(new ArrayList<>());
            c.requestObserver = req -> log.add(new String[] { req.http_method, req.request_uri });
            calls.put(name, log);
            clients.put(name, c);
        }

        private void register(JSONObject step) throws IOException {
            SvcClient c = client(step);
            JSONArray subscribe = step.optJSONArray("subscribe");
            String[] events = null;
            if (subscribe != null) {
                events = new String[subscribe.length()];
                for (int i = 0; i < events.length; i++) {
                    events[i] = subscribe.getString(i);
                }
            }
            JSONObject app = c.addApp(step.getString("name"), step.getJSONObject("app"), events);
            if (step.has("events_as")) {
                List<MessageDemuxer.AppEvent> collected = Collections.synchronizedList(new ArrayList<>());
                vars.put(step.getString("events_as"), collected);
                c.demuxerOrNull().registerEventCallback(app.getString("subscription_id"), collected::add);
            }
            keep(step, app);
        }

        private void waitRun(JSONObject step) throws Exception {
            SvcClient c = client(step);
            @SuppressWarnings("unchecked")
            Map<String, Object> r = (Map<String, Object>) vars.get(step.getString("run"));
            SvcClient.AppRun run = (SvcClient.AppRun) r.get("run");
            List<String> output = Collections.synchronizedList(new ArrayList<>());
            if (step.has("output_as")) {
                vars.put(step.getString("output_as"), output);
            }
            CompletableFuture<Integer> wait = c.waitForAsyncRunAsync(run, (text, position) -> output.add(text),
                    Duration.ofMillis(step.getLong("timeout_ms")));
            CompletableFuture<Outcome> settled = wait.handle((v, e) -> new Outcome(v, e));
            if (step.optBoolean("background", false)) {
                keep(step, settled);
            } else {
                keep(step, settled.get(120, TimeUnit.SECONDS));
            }
        }

        private void request(JSONObject step) throws Exception {
            SvcClient c = client(step);
            int count = step.optInt("count", 1);
            Map<String, String> query = null;
            if (step.has("query")) {
                query = new LinkedHashMap<>();
                JSONObject q = step.getJSONObject("query");
                for (String k : q.keySet()) {
                    query.put(k, q.getString(k));
                }
            }
            List<Object> answers = new ArrayList<>();
            if (step.optBoolean("sequential", false)) {
                for (int i = 0; i < count; i++) {
                    answers.add(json(SvcClient.ok(c.request(step.getString("method"), step.getString("path"), null,
                            null, query))));
                }
            } else {
                List<CompletableFuture<ResponseMessage>> all = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    all.add(c.requestAsync(step.getString("method"), step.getString("path"), null, null, query));
                }
                for (CompletableFuture<ResponseMessage> f : all) {
                    answers.add(json(SvcClient.ok(f.get(60, TimeUnit.SECONDS))));
                }
            }
            keep(step, answers);
        }

        private static Object json(ResponseMessage r) {
            return new JSONObject(r.text()).toMap();
        }

        private void check(JSONObject step) throws Exception {
            if (step.has("calls")) {
                String[] parts = step.getString("calls").split("\\.");
                List<String> args = callsOf(parts[0], parts[1]);
                if (step.has("count")) {
                    assertEquals(step.getInt("count"), args.size(), step.getString("calls") + " calls " + args);
                }
                if (step.has("with")) {
                    JSONArray with = step.getJSONArray("with");
                    assertTrue(args.contains(with.getString(0)), step.getString("calls") + " with " + with + ": " + args);
                }
                return;
            }
            if (step.has("demux")) {
                MessageDemuxer d = clients.get(step.getString("demux")).demuxerOrNull();
                assertNotNull(d, "no demultiplexer");
                JSONObject wanted = step.getJSONObject("equals");
                BooleanSupplier matches = () -> counters(d, wanted).equals(wanted.toMap());
                if (step.optBoolean("eventually", false)) {
                    eventually(matches, "demux " + wanted + " (now " + counters(d, wanted) + ")");
                } else {
                    assertEquals(wanted.toMap(), counters(d, wanted));
                }
                return;
            }
            String of = step.getString("of");
            Object value = lookup(of);
            if (value instanceof CompletableFuture) {
                value = ((CompletableFuture<?>) value).get(120, TimeUnit.SECONDS);
            }
            if (step.has("error")) {
                assertTrue(value instanceof Outcome && ((Outcome) value).error != null,
                        of + " fails with " + step.getString("error") + ", was " + describe(value));
                Throwable error = unwrap(((Outcome) value).error);
                assertTrue(errorMatches(error, step.getString("error")), of + ": " + error);
                if (step.has("within_ms_of_kill")) {
                    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
                    assertTrue(ms < step.getLong("within_ms_of_kill"), "failed " + ms + " ms after the kill");
                }
                return;
            }
            if (value instanceof Outcome) {
                Outcome o = (Outcome) value;
                if (o.error != null) {
                    throw new AssertionError(of + " failed", o.error);
                }
                value = o.value;
            }
            if (value instanceof List && step.opt("equals") instanceof String) {
                StringBuilder sb = new StringBuilder();
                for (Object o : new ArrayList<>((List<?>) value)) {
                    sb.append(o);
                }
                value = sb.toString();
            }
            if (step.has("equals")) {
                assertEquals(normalize(step.get("equals")), normalize(value), of);
            }
            if (step.optBoolean("absent", false)) {
                assertNull(value, of + " is absent");
            }
            if (step.has("type")) {
                assertEquals("string", step.getString("type"));
                assertTrue(value instanceof String, of + " is a string: " + value);
            }
            if (step.has("every")) {
                Map<String, Object> every = step.getJSONObject("every").toMap();
                for (Object item : (List<?>) value) {
                    for (Map.Entry<String, Object> e : every.entrySet()) {
                        assertEquals(e.getValue(), ((Map<?, ?>) item).get(e.getKey()), of + " every " + every);
                    }
                }
            }
            if (step.has("until")) {
                @SuppressWarnings("unchecked")
                List<MessageDemuxer.AppEvent> events = new ArrayList<>((List<MessageDemuxer.AppEvent>) value);
                checkEvents(events, step);
            }
        }

        private List<String> callsOf(String client, String method) {
            List<String> args = new ArrayList<>();
            for (String[] call : new ArrayList<>(calls.get(client))) {
                String m = call[0];
                String path = call[1];
                Matcher app = Pattern.compile("^/svc/app/([^/]+)$").matcher(path);
                switch (method) {
                    case "deleteApplication":
                        if ("DELETE".equals(m) && app.matches()) {
                            args.add(app.group(1));
                        }
                        break;
                    case "getApplication":
                        if ("GET".equals(m) && app.matches()) {
                            args.add(app.group(1));
                        }
                        break;
                    case "unsubscribe":
                        if ("DELETE".equals(m) && path.endsWith("/subscribe")) {
                            args.add(path);
                        }
                        break;
                    default:
                        fail("no record of " + method);
                }
            }
            return args;
        }

        private static Map<String, Object> counters(MessageDemuxer d, JSONObject wanted) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (String k : wanted.keySet()) {
                switch (k) {
                    case "dropped_events":
                        out.put(k, (int) d.getDroppedEvents());
                        break;
                    case "buffered_subscriptions":
                        out.put(k, d.getBufferedSubscriptions());
                        break;
                    case "pending_requests":
                        out.put(k, d.getPendingRequests());
                        break;
                    default:
                        fail("unknown demux counter " + k);
                }
            }
            return out;
        }

        private static void checkEvents(List<MessageDemuxer.AppEvent> all, JSONObject step) {
            String until = step.getString("until");
            int end = 0;
            while (end < all.size() && !until.equals(all.get(end).eventType)) {
                end++;
            }
            assertTrue(end < all.size(), "an event " + until + " among " + all);
            List<MessageDemuxer.AppEvent> events = all.subList(0, end + 1);
            if (step.optBoolean("sequences_gapless", false)) {
                for (int i = 0; i < events.size(); i++) {
                    assertEquals(i + 1, events.get(i).sequence, "gapless sequences: " + events);
                }
            }
            if (step.has("first_type")) {
                assertEquals(step.getString("first_type"), events.get(0).eventType);
            }
            StringBuilder stdout = new StringBuilder();
            MessageDemuxer.AppEvent last = null;
            for (MessageDemuxer.AppEvent e : events) {
                if ("STDOUT".equals(e.eventType)) {
                    stdout.append(e.data.optString("output", ""));
                    last = e;
                }
            }
            if (step.has("stdout_text")) {
                assertEquals(step.getString("stdout_text"), stdout.toString());
            }
            if (step.optBoolean("last_stdout_finished", false)) {
                assertNotNull(last, "a STDOUT event");
                assertTrue(last.data.optBoolean("finished", false), "last STDOUT has finished: true");
            }
        }
    }

    static boolean errorMatches(Throwable error, String name) {
        switch (name) {
            case "app_removed":
                return error instanceof AppRemovedException;
            case "transport_disconnected":
                return error instanceof TransportDisconnectedException;
            default:
                return error instanceof SvcApiException && ((SvcApiException) error).getErrorCode() != null
                        && ((SvcApiException) error).getErrorCode().code().equals(name);
        }
    }

    private static Throwable unwrap(Throwable e) {
        while ((e instanceof java.util.concurrent.CompletionException
                || e instanceof java.util.concurrent.ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static String describe(Object value) {
        if (value instanceof Outcome) {
            Outcome o = (Outcome) value;
            return o.error != null ? "error " + o.error : "value " + o.value;
        }
        return String.valueOf(value);
    }

    private static Object normalize(Object v) {
        if (v == JSONObject.NULL) {
            return null;
        }
        if (v instanceof Number) {
            return ((Number) v).longValue();
        }
        return v;
    }

    static void eventually(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + EVENTUALLY.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }
}
