package svc;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;

import javax.net.ssl.SSLContext;

import org.json.JSONArray;
import org.json.JSONObject;

/**
 * svc client over HTTPS REST (the JDK's {@link HttpClient}). {@link SvcClientTCP} and
 * {@link SvcClientWSS} carry the same calls over a persistent, demultiplexed connection and add
 * event subscriptions and the event-driven {@link #waitForAsyncRun}.
 *
 * <p>Bearer-only (spec "Client token contract" rule 5): the access token is set with
 * {@link Builder#jwtToken}, {@link #setToken} and removed with {@link #clearToken}; it is kept in
 * memory and never refreshed. Every call that fails on the daemon's side throws
 * {@link SvcApiException} with the code of spec/errors.json.
 */
public class SvcClient implements Closeable {
    static final String USER_AGENT = "svc/java";
    static final String JSON_CONTENT_TYPE = "application/json";

    private final String baseURL;
    private final SSLContext sslContext;
    private final int connectTimeoutMs;
    private final int readTimeoutMs;
    private volatile String token;
    private volatile String forwardTo;
    private volatile HttpClient http;
    /** Test hook: told about every request before it is sent (package-private on purpose). */
    volatile Consumer<RequestMessage> requestObserver;

    protected SvcClient(Builder builder) {
        this.baseURL = stripSlash(Objects.requireNonNull(builder.baseURL, "baseURL"));
        this.sslContext = TlsSupport.context(builder.caCertFilePath, builder.disableSSLVerification);
        this.connectTimeoutMs = builder.connectTimeoutMs;
        this.readTimeoutMs = builder.readTimeoutMs;
        this.token = builder.jwtToken;
    }

    private static String stripSlash(String url) {
        return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    }

    /** Builder of {@link SvcClient}; {@link SvcClientTCP.Builder} and {@link SvcClientWSS.Builder} extend it. */
    public static class Builder {
        String baseURL = "https://127.0.0.1:6060";
        String caCertFilePath;
        boolean disableSSLVerification;
        String jwtToken;
        int connectTimeoutMs = 30_000;
        int readTimeoutMs = 300_000;

        /** The REST base address, e.g. {@code https://127.0.0.1:6060} (the agent) or the daemon's. */
        public Builder baseURL(String baseURL) {
            this.baseURL = baseURL;
            return this;
        }

        /** PEM file of the CA that signed the daemon's certificate (default: the JVM's trust store). */
        public Builder caCert(String caCertFilePath) {
            this.caCertFilePath = caCertFilePath;
            return this;
        }

        /** Accept any server certificate: for tests only. */
        public Builder disableSSLVerify() {
            this.disableSSLVerification = true;
            return this;
        }

        /** The OAuth access token sent as {@code Authorization: Bearer}. */
        public Builder jwtToken(String jwtToken) {
            this.jwtToken = jwtToken;
            return this;
        }

        public Builder connectTimeoutMs(int ms) {
            this.connectTimeoutMs = ms;
            return this;
        }

        /**
         * Receive timeout of one REST call (0 = none). Requests over TCP and WSS are demultiplexed
         * and have no client-side wait cap (spec: demultiplexer rule 3).
         */
        public Builder readTimeoutMs(int ms) {
            this.readTimeoutMs = ms;
            return this;
        }

        public SvcClient build() {
            return new SvcClient(this);
        }
    }

    /** Receives output chunks: the text and the byte position of its first byte. */
    @FunctionalInterface
    public interface OutputHandler {
        void handle(String data, long position);
    }

    /** Prints output to standard output. */
    public static final OutputHandler PRINT_OUTPUT_HANDLER = (data, position) -> System.out.print(data);

    /** One read of an application's output ({@link #getAppOutput}). */
    public static class AppOutput {
        boolean httpSuccess;
        String httpBody;
        Long outputPosition;
        Integer exitCode;
        byte[] bytes = new byte[0];

        /** Whether the daemon answered 200. */
        public boolean isSuccess() {
            return httpSuccess;
        }

        /** The output chunk as text (the error body when {@link #isSuccess()} is false). */
        public String getOutput() {
            return httpBody;
        }

        /** The chunk's raw bytes. */
        public byte[] getBytes() {
            return bytes.clone();
        }

        /** The next read position ({@code X-Output-Position}), or null when the daemon sent none. */
        public Long getOutputPosition() {
            return outputPosition;
        }

        /** The exit code ({@code X-Exit-Code}) once the process exited, else null. */
        public Integer getExitCode() {
            return exitCode;
        }
    }

    /** An asynchronous run ({@link #runAppAsync}): the transient application and its process. */
    public static class AppRun {
        private final SvcClient client;
        private final String appName;
        private final String processUuid;

        public AppRun(SvcClient client, String appName, String processUuid) {
            this.client = client;
            this.appName = appName;
            this.processUuid = processUuid;
        }

        public String getAppName() {
            return appName;
        }

        public String getProcessUuid() {
            return processUuid;
        }

        public SvcClient getClient() {
            return client;
        }

        /** {@link SvcClient#waitForAsyncRun} on this run. */
        public Integer wait(OutputHandler stdoutHandler, int timeoutSeconds) throws IOException {
            return client.waitForAsyncRun(this, stdoutHandler, timeoutSeconds);
        }
    }

    /** Result of {@link #runAppSync}: the exit code (null when the run did not finish) and the output. */
    public static final class SyncRunResult {
        private final Integer exitCode;
        private final String output;

        SyncRunResult(Integer exitCode, String output) {
            this.exitCode = exitCode;
            this.output = output;
        }

        public Integer getExitCode() {
            return exitCode;
        }

        public String getOutput() {
            return output;
        }
    }

    // ------------------------------------------------------------------ token and forwarding

    /** Sets the bearer used by later requests (in memory only; WSS needs a new client, see README). */
    public void setToken(String token) {
        this.token = token;
    }

    /** Removes the bearer: later requests are sent without one. */
    public void clearToken() {
        this.token = null;
    }

    /** Forwards later requests to another instance ({@code X-Target-Host}); null stops forwarding. */
    public void setForwardTo(String host) {
        this.forwardTo = host;
    }

    public String getForwardTo() {
        return forwardTo;
    }

    protected String getToken() {
        return token;
    }

    protected String getBaseURL() {
        return baseURL;
    }

    protected SSLContext getSslContext() {
        return sslContext;
    }

    protected int getConnectTimeoutMs() {
        return connectTimeoutMs;
    }

    @Override
    public void close() {
        this.token = null;
    }

    // ------------------------------------------------------------------ requests

    /**
     * One request; the answer whatever its status. {@code body}: a {@link JSONObject} or
     * {@link JSONArray} (sent as JSON), a String (text), byte[] (octet-stream) or null.
     */
    public ResponseMessage request(String method, String path, Object body, Map<String, String> headers,
            Map<String, String> params) throws IOException {
        return await(requestAsync(method, path, body, headers, params));
    }

    /** {@link #request} without blocking. */
    public CompletableFuture<ResponseMessage> requestAsync(String method, String path, Object body,
            Map<String, String> headers, Map<String, String> params) {
        RequestMessage req = new RequestMessage();
        req.uuid = UUID.randomUUID().toString();
        req.http_method = method.toUpperCase(java.util.Locale.ROOT);
        req.request_uri = path;
        req.headers = commonHeaders();
        if (params != null) {
            req.query = new LinkedHashMap<>(params);
        }
        if (body instanceof JSONObject || body instanceof JSONArray) {
            req.body = body.toString().getBytes(StandardCharsets.UTF_8);
            req.headers.put("Content-Type", JSON_CONTENT_TYPE);
        } else if (body instanceof String) {
            req.body = ((String) body).getBytes(StandardCharsets.UTF_8);
            req.headers.put("Content-Type", "text/plain; charset=utf-8");
        } else if (body instanceof byte[]) {
            req.body = (byte[]) body;
            req.headers.put("Content-Type", "application/octet-stream");
        } else if (body != null) {
            req.body = body.toString().getBytes(StandardCharsets.UTF_8);
        }
        if (headers != null) {
            req.headers.putAll(headers);
        }
        Consumer<RequestMessage> observer = requestObserver;
        if (observer != null) {
            observer.accept(req);
        }
        try {
            return send(req);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Sends one request over this client's transport (REST here; TCP and WSS override it). */
    protected CompletableFuture<ResponseMessage> send(RequestMessage req) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(baseURL + req.request_uri + queryString(req.query)));
        if (readTimeoutMs > 0) {
            b.timeout(Duration.ofMillis(readTimeoutMs));
        }
        for (Map.Entry<String, String> h : req.headers.entrySet()) {
            b.header(h.getKey(), h.getValue());
        }
        b.method(req.http_method, req.body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(req.body));
        return httpClient().sendAsync(b.build(), HttpResponse.BodyHandlers.ofByteArray()).thenApply(r -> {
            ResponseMessage resp = new ResponseMessage();
            resp.uuid = req.uuid;
            resp.request_uri = req.request_uri;
            resp.http_status = r.statusCode();
            resp.body = r.body() == null ? new byte[0] : r.body();
            r.headers().map().forEach((k, v) -> {
                if (!v.isEmpty()) {
                    resp.headers.put(k, v.get(0));
                }
            });
            resp.body_msg_type = r.headers().firstValue("content-type").orElse("");
            return resp;
        });
    }

    /** This client's HTTP client (REST calls and the WSS upgrade share it). */
    protected HttpClient httpClient() {
        HttpClient c = http;
        if (c == null) {
            synchronized (this) {
                if (http == null) {
                    http = HttpClient.newBuilder().sslContext(sslContext)
                            .connectTimeout(Duration.ofMillis(Math.max(1, connectTimeoutMs)))
                            .version(HttpClient.Version.HTTP_1_1).build();
                }
                c = http;
            }
        }
        return c;
    }

    static String queryString(Map<String, String> query) {
        if (query == null || query.isEmpty()) {
            return "";
        }
        StringBuilder sb = new StringBuilder("?");
        for (Map.Entry<String, String> e : query.entrySet()) {
            if (sb.length() > 1) {
                sb.append('&');
            }
            sb.append(encode(e.getKey())).append('=').append(encode(e.getValue()));
        }
        return sb.toString();
    }

    /** Percent-encodes one path segment or query component (JavaScript's encodeURIComponent). */
    static String encode(String value) {
        return URLEncoder.encode(value == null ? "" : value, StandardCharsets.UTF_8).replace("+", "%20")
                .replace("%21", "!").replace("%27", "'").replace("%28", "(").replace("%29", ")")
                .replace("%7E", "~");
    }

    /** Headers of every request: bearer, user agent, forwarding target. */
    protected Map<String, String> commonHeaders() {
        Map<String, String> h = new LinkedHashMap<>();
        h.put("User-Agent", USER_AGENT);
        String t = token;
        if (t != null && !t.isEmpty()) {
            h.put("Authorization", "Bearer " + t);
        }
        String target = forwardTo;
        if (target != null && !target.isEmpty()) {
            h.put("X-Target-Host", target);
        }
        return h;
    }

    /** Waits for a future, turning its failure back into the exception the call threw. */
    static <T> T await(CompletableFuture<T> future) throws IOException {
        try {
            return future.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            InterruptedIOException io = new InterruptedIOException("interrupted while waiting for the daemon");
            io.initCause(e);
            throw io;
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        }
    }

    static IOException rethrow(Throwable cause) {
        while (cause instanceof CompletionException || cause instanceof ExecutionException) {
            if (cause.getCause() == null) {
                break;
            }
            cause = cause.getCause();
        }
        if (cause instanceof IOException) {
            return (IOException) cause;
        }
        if (cause instanceof RuntimeException) {
            throw (RuntimeException) cause;
        }
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        return new IOException(cause);
    }

    /** The answer when it is 2xx, else {@link SvcApiException}. */
    static ResponseMessage ok(ResponseMessage resp) throws SvcApiException {
        if (!resp.isSuccess()) {
            throw SvcApiException.from(resp);
        }
        return resp;
    }

    /** True for 2xx, false for 404, else {@link SvcApiException}. */
    static boolean okOrNotFound(ResponseMessage resp) throws SvcApiException {
        if (resp.http_status == 404) {
            return false;
        }
        ok(resp);
        return true;
    }

    private ResponseMessage call(String method, String path) throws IOException {
        return ok(request(method, path, null, null, null));
    }

    private JSONObject jsonObject(String method, String path, Object body, Map<String, String> query)
            throws IOException {
        return new JSONObject(ok(request(method, path, body, null, query)).text());
    }

    static String appPath(String appName) {
        return "/svc/app/" + encode(appName);
    }

    private static Map<String, String> query(String... keyValues) {
        Map<String, String> q = new LinkedHashMap<>();
        for (int i = 0; i + 1 < keyValues.length; i += 2) {
            if (keyValues[i + 1] != null) {
                q.put(keyValues[i], keyValues[i + 1]);
            }
        }
        return q;
    }

    // ------------------------------------------------------------------ labels

    /** {@code GET /svc/labels}. */
    public Map<String, String> listLabels() throws IOException {
        JSONObject json = jsonObject("GET", "/svc/labels", null, null);
        Map<String, String> labels = new LinkedHashMap<>();
        for (String key : json.keySet()) {
            labels.put(key, json.getString(key));
        }
        return labels;
    }

    /** {@code PUT /svc/label/{key}?value=}. */
    public boolean addLabel(String key, String value) throws IOException {
        ok(request("PUT", "/svc/label/" + encode(key), null, null, query("value", value)));
        return true;
    }

    /** {@code DELETE /svc/label/{key}}; false when there is no such label. */
    public boolean deleteLabel(String key) throws IOException {
        return okOrNotFound(request("DELETE", "/svc/label/" + encode(key), null, null, null));
    }

    // ------------------------------------------------------------------ applications

    /** {@code GET /svc/applications}. */
    public JSONArray listApps() throws IOException {
        return new JSONArray(call("GET", "/svc/applications").text());
    }

    /** {@code GET /svc/app/{name}}; {@link SvcApiException} {@code app_not_found} when missing. */
    public JSONObject getApp(String appName) throws IOException {
        return new JSONObject(call("GET", appPath(appName)).text());
    }

    /** {@code GET /svc/app/{name}/health}: true when healthy (body {@code 0}). */
    public boolean checkAppHealth(String appName) throws IOException {
        ResponseMessage resp = request("GET", appPath(appName) + "/health", null, null, null);
        return resp.http_status == 200 && "0".equals(resp.text().trim());
    }

    /** {@code POST /svc/app/{name}/enable}. */
    public boolean enableApp(String appName) throws IOException {
        call("POST", appPath(appName) + "/enable");
        return true;
    }

    /** {@code POST /svc/app/{name}/disable}. */
    public boolean disableApp(String appName) throws IOException {
        call("POST", appPath(appName) + "/disable");
        return true;
    }

    /** {@code DELETE /svc/app/{name}}; false when there is no such application. */
    public boolean deleteApp(String appName) throws IOException {
        return okOrNotFound(request("DELETE", appPath(appName), null, null, null));
    }

    /** {@code PUT /svc/app/{name}}: register or replace. */
    public JSONObject addApp(String appName, JSONObject appJson) throws IOException {
        return addApp(appName, appJson, (String[]) null);
    }

    /**
     * Registers an application and, with {@code subscribeEvents}, subscribes atomically (TCP and WSS
     * only; 405 over REST): the answer carries {@code subscription_id}, and events that arrive before
     * the callback is registered ({@link MessageDemuxer#registerEventCallback}) are buffered.
     */
    public JSONObject addApp(String appName, JSONObject appJson, String... subscribeEvents) throws IOException {
        Map<String, String> q = null;
        if (subscribeEvents != null && subscribeEvents.length > 0) {
            q = query("subscribe_events", String.join(",", subscribeEvents));
        }
        return jsonObject("PUT", appPath(appName), appJson, q);
    }

    /** Subscribes to events of an application ({@code null} or {@code "*"}: all applications). */
    public JSONObject subscribe(String appName, String... events) throws IOException {
        return subscribe(appName, events, null);
    }

    /**
     * Subscribes and registers {@code callback} for the subscription (TCP and WSS; the daemon answers
     * 405 {@code persistent_connection_required} over REST).
     */
    public JSONObject subscribe(String appName, String[] events, MessageDemuxer.EventCallback callback)
            throws IOException {
        String path = appName == null || appName.isEmpty() || "*".equals(appName) ? "/svc/subscribe"
                : appPath(appName) + "/subscribe";
        Map<String, String> q = query("events", events == null ? "" : String.join(",", events));
        JSONObject result = jsonObject("POST", path, null, q);
        MessageDemuxer demuxer = demuxerOrNull();
        if (callback != null && demuxer != null && result.has("subscription_id")) {
            demuxer.registerEventCallback(result.getString("subscription_id"), callback);
        }
        return result;
    }

    /** {@code DELETE /svc/subscribe?subscription_id=}: removes the subscription and its callback. */
    public boolean unsubscribe(String subscriptionId) throws IOException {
        MessageDemuxer demuxer = demuxerOrNull();
        if (demuxer != null) {
            demuxer.unregisterEventCallback(subscriptionId);
        }
        ok(request("DELETE", "/svc/subscribe", null, null, query("subscription_id", subscriptionId)));
        return true;
    }

    /** True for the persistent transports (TCP, WSS), which carry events. */
    protected boolean demuxerCapable() {
        return false;
    }

    /** The demultiplexer of the persistent connection, or null (REST). */
    protected MessageDemuxer demuxerOrNull() {
        return null;
    }

    // ------------------------------------------------------------------ output and runs

    /**
     * {@code GET /svc/app/{name}/output}: output from byte {@code stdoutPosition} of the current
     * ({@code stdoutIndex} 0) or an older output file; {@code timeout} seconds of long poll.
     * {@code stdoutMaxsize} 0 and {@code processUuid} null are left out.
     */
    public AppOutput getAppOutput(String appName, long stdoutPosition, int stdoutIndex, int stdoutMaxsize,
            String processUuid, int timeout) throws IOException {
        Map<String, String> q = query("stdout_position", String.valueOf(stdoutPosition), "stdout_index",
                String.valueOf(stdoutIndex), "stdout_maxsize", stdoutMaxsize > 0 ? String.valueOf(stdoutMaxsize) : null,
                "process_uuid", processUuid == null || processUuid.isEmpty() ? null : processUuid, "timeout",
                String.valueOf(timeout));
        ResponseMessage resp = request("GET", appPath(appName) + "/output", null, null, q);
        AppOutput out = new AppOutput();
        out.httpSuccess = resp.http_status == 200;
        out.bytes = resp.body;
        out.httpBody = resp.text();
        out.exitCode = parseInt(resp.header("X-Exit-Code"));
        String pos = resp.header("X-Output-Position");
        if (pos != null && !pos.isEmpty()) {
            try {
                out.outputPosition = Long.parseLong(pos.trim());
            } catch (NumberFormatException e) {
                out.outputPosition = null;
            }
        }
        if (!out.httpSuccess && resp.http_status != 204) {
            throw SvcApiException.from(resp);
        }
        return out;
    }

    private static Integer parseInt(String s) {
        if (s == null || s.trim().isEmpty()) {
            return null;
        }
        try {
            return Integer.valueOf(s.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** {@code POST /svc/app/syncrun}: runs and waits; {@code lifecycle} 0 keeps the daemon's default. */
    public SyncRunResult runAppSync(JSONObject appJson, int maxTime, int lifecycle) throws IOException {
        Map<String, String> q = query("timeout", String.valueOf(maxTime), "lifecycle",
                lifecycle > 0 ? String.valueOf(lifecycle) : null);
        ResponseMessage resp = ok(request("POST", "/svc/app/syncrun", appJson, null, q));
        return new SyncRunResult(parseInt(resp.header("X-Exit-Code")), resp.text());
    }

    public SyncRunResult runAppSync(JSONObject appJson, int maxTime) throws IOException {
        return runAppSync(appJson, maxTime, 0);
    }

    /** {@code POST /svc/app/run}: starts a run; wait for it with {@link #waitForAsyncRun}. */
    public AppRun runAppAsync(JSONObject appJson, long maxTimeSeconds, long lifecycleSeconds) throws IOException {
        return runAppAsync(appJson, String.valueOf(maxTimeSeconds), String.valueOf(lifecycleSeconds));
    }

    /** As {@link #runAppAsync(JSONObject, long, long)} with ISO 8601 durations (e.g. {@code PT1H}). */
    public AppRun runAppAsync(JSONObject appJson, String maxTime, String lifecycle) throws IOException {
        JSONObject json = jsonObject("POST", "/svc/app/run", appJson, query("timeout", maxTime, "lifecycle", lifecycle));
        return new AppRun(this, json.getString("name"), json.getString("process_uuid"));
    }

    /**
     * Waits for a run to exit, streaming its output to {@code stdoutHandler} (each byte once).
     * Returns the exit code (negative when killed by a signal), or null after
     * {@code timeoutSeconds} (0 = no limit). The run application is deleted after an observed exit.
     * Over TCP and WSS this is event-driven and throws {@link AppRemovedException} or
     * {@link TransportDisconnectedException}; over REST it long-polls the output.
     */
    public Integer waitForAsyncRun(AppRun run, OutputHandler stdoutHandler, int timeoutSeconds) throws IOException {
        return waitForAsyncRun(run, stdoutHandler, Duration.ofSeconds(Math.max(0, timeoutSeconds)));
    }

    /** {@link #waitForAsyncRun(AppRun, OutputHandler, int)} with a {@link Duration} (zero = no limit). */
    public Integer waitForAsyncRun(AppRun run, OutputHandler stdoutHandler, Duration timeout) throws IOException {
        if (demuxerCapable()) {
            return AsyncRunWaiter.viaEvents(this, run, stdoutHandler, timeout);
        }
        return AsyncRunWaiter.poll(this, run, stdoutHandler, timeout);
    }

    /** {@link #waitForAsyncRun(AppRun, OutputHandler, Duration)} on its own thread. */
    public CompletableFuture<Integer> waitForAsyncRunAsync(AppRun run, OutputHandler stdoutHandler, Duration timeout) {
        CompletableFuture<Integer> result = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                result.complete(waitForAsyncRun(run, stdoutHandler, timeout));
            } catch (IOException | RuntimeException e) {
                result.completeExceptionally(e);
            }
        }, "svc-wait-" + run.getAppName());
        t.setDaemon(true);
        t.start();
        return result;
    }

    // ------------------------------------------------------------------ tasks

    /** {@code POST /svc/app/{name}/task}: sends a payload to the app's worker and returns its result. */
    public String runTask(String appName, String data, int timeout) throws IOException {
        int t = timeout <= 0 ? 300 : timeout;
        return ok(request("POST", appPath(appName) + "/task", data, null, query("timeout", String.valueOf(t)))).text();
    }

    /** {@code DELETE /svc/app/{name}/task}: cancels the app's pending tasks; true when one was cancelled. */
    public boolean cancelTask(String appName) throws IOException {
        JSONObject json = jsonObject("DELETE", appPath(appName) + "/task", null, null);
        JSONArray cancelled = json.optJSONArray("cancelled");
        return cancelled != null && cancelled.length() > 0;
    }

    // ------------------------------------------------------------------ files

    /**
     * {@code GET /svc/file/download}: writes the remote file to {@code localFile} (through a temporary
     * file and a rename); with {@code applyFileAttributes} its mode is applied too.
     */
    public boolean downloadFile(String remoteFile, String localFile, boolean applyFileAttributes)
            throws IOException {
        Map<String, String> h = new LinkedHashMap<>();
        h.put("X-File-Path", encode(remoteFile));
        ResponseMessage resp = ok(request("GET", "/svc/file/download", null, h, null));
        Path target = Path.of(localFile).toAbsolutePath();
        Path tmp = Files.createTempFile(target.getParent(), ".svc-download-", ".tmp");
        try {
            Files.write(tmp, resp.body);
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
        if (applyFileAttributes) {
            String mode = resp.header("X-File-Mode");
            if (mode != null) {
                try {
                    Files.setPosixFilePermissions(target, permissions(Integer.parseInt(mode.trim())));
                } catch (NumberFormatException | UnsupportedOperationException e) {
                    // best effort, as App Mesh: attributes are advisory
                }
            }
        }
        return true;
    }

    /** Downloads to a local file of the same name in the working directory. */
    public boolean downloadFile(String remoteFile, boolean applyFileAttributes) throws IOException {
        return downloadFile(remoteFile, new File(remoteFile).getName(), applyFileAttributes);
    }

    /**
     * {@code POST /svc/file/upload}: writes the local file to {@code remoteFile} on the daemon's host;
     * with {@code preservePermissions} its mode is sent in {@code X-File-Mode}.
     */
    public boolean uploadFile(File localFile, String remoteFile, boolean preservePermissions) throws IOException {
        if (!localFile.isFile()) {
            throw new IOException("File not found: " + localFile.getAbsolutePath());
        }
        Map<String, String> h = new LinkedHashMap<>();
        h.put("X-File-Path", encode(remoteFile));
        if (preservePermissions) {
            try {
                PosixFileAttributes attrs = Files.readAttributes(localFile.toPath(), PosixFileAttributes.class);
                h.put("X-File-Mode", String.valueOf(mode(attrs.permissions())));
            } catch (UnsupportedOperationException e) {
                // no POSIX attributes on this file system
            }
        }
        ok(request("POST", "/svc/file/upload", Files.readAllBytes(localFile.toPath()), h, null));
        return true;
    }

    public boolean uploadFile(String localFilePath, String remoteFile, boolean preservePermissions)
            throws IOException {
        return uploadFile(new File(localFilePath), remoteFile, preservePermissions);
    }

    static int mode(Set<PosixFilePermission> perms) {
        int m = 0;
        for (PosixFilePermission p : perms) {
            m |= 1 << (8 - p.ordinal());
        }
        return m;
    }

    static Set<PosixFilePermission> permissions(int mode) {
        Set<PosixFilePermission> set = new LinkedHashSet<>();
        for (PosixFilePermission p : PosixFilePermission.values()) {
            if ((mode & (1 << (8 - p.ordinal()))) != 0) {
                set.add(p);
            }
        }
        return set;
    }

    // ------------------------------------------------------------------ host

    /** {@code GET /svc/resources}. */
    public JSONObject getHostResources() throws IOException {
        return jsonObject("GET", "/svc/resources", null, null);
    }

    /** {@code GET /svc/config}. */
    public JSONObject getConfig() throws IOException {
        return jsonObject("GET", "/svc/config", null, null);
    }

    /** {@code POST /svc/config}: merges a partial configuration; returns the whole. */
    public JSONObject setConfig(JSONObject config) throws IOException {
        return jsonObject("POST", "/svc/config", config, null);
    }

    /** Sets {@code BaseConfig.LogLevel}; returns the level now in effect. */
    public String setLogLevel(String level) throws IOException {
        JSONObject cfg = setConfig(new JSONObject().put("BaseConfig", new JSONObject().put("LogLevel", level)));
        return cfg.getJSONObject("BaseConfig").getString("LogLevel");
    }

    /** {@code GET /svc/metrics}: Prometheus text. */
    public String getMetrics() throws IOException {
        return call("GET", "/svc/metrics").text();
    }

    // ------------------------------------------------------------------ authorization

    /** {@code GET /svc/principal/self}: the caller's principal ({@code principal_id}, roles, permissions...). */
    public JSONObject getCurrentPrincipal() throws IOException {
        return jsonObject("GET", "/svc/principal/self", null, null);
    }

    /** {@code GET /svc/principal/self/permissions}. */
    public Set<String> getPrincipalPermissions() throws IOException {
        return stringSet(new JSONArray(call("GET", "/svc/principal/self/permissions").text()));
    }

    /** {@code GET /svc/permissions}: every permission. */
    public Set<String> listPermissions() throws IOException {
        return stringSet(new JSONArray(call("GET", "/svc/permissions").text()));
    }

    private static Set<String> stringSet(JSONArray array) {
        Set<String> set = new LinkedHashSet<>();
        for (int i = 0; i < array.length(); i++) {
            set.add(array.getString(i));
        }
        return set;
    }

    /** {@code GET /svc/roles}: role name to permissions. */
    public JSONObject listRoles() throws IOException {
        return jsonObject("GET", "/svc/roles", null, null);
    }

    /** {@code POST /svc/role/{role}}: creates or replaces a role with these permissions. */
    public boolean updateRole(String roleName, Collection<String> permissions) throws IOException {
        ok(request("POST", "/svc/role/" + encode(roleName), new JSONArray(permissions), null, null));
        return true;
    }

    /** {@code DELETE /svc/role/{role}}; false when there is no such role. */
    public boolean deleteRole(String roleName) throws IOException {
        return okOrNotFound(request("DELETE", "/svc/role/" + encode(roleName), null, null, null));
    }

    /** {@code GET /svc/principals}: principal id to record. */
    public JSONObject listPrincipals() throws IOException {
        return jsonObject("GET", "/svc/principals", null, null);
    }

    /** {@code POST /svc/principal/{id}} with e.g. {@code {"roles": [...]}}; returns the record. */
    public JSONObject updatePrincipal(String principalId, JSONObject principalData) throws IOException {
        return jsonObject("POST", "/svc/principal/" + encode(principalId), principalData, null);
    }

    /** {@code POST /svc/principal/{id}} setting only the roles. */
    public JSONObject updatePrincipal(String principalId, List<String> roles) throws IOException {
        return updatePrincipal(principalId, new JSONObject().put("roles", new JSONArray(roles)));
    }

    /** {@code DELETE /svc/principal/{id}}: tombstones the record; returns it. */
    public JSONObject deletePrincipal(String principalId) throws IOException {
        return jsonObject("DELETE", "/svc/principal/" + encode(principalId), null, null);
    }

    // ------------------------------------------------------------------ cluster (cluster mode only)

    /** {@code GET /svc/cluster/applications}: every cluster task by name, with its placements. */
    public JSONObject listClusterApps() throws IOException {
        return jsonObject("GET", "/svc/cluster/applications", null, null);
    }

    /** {@code GET /svc/cluster/app/{name}}: one cluster task. */
    public JSONObject getClusterApp(String appName) throws IOException {
        return jsonObject("GET", "/svc/cluster/app/" + encode(appName), null, null);
    }

    /** {@code PUT /svc/cluster/app/{name}}: defines or replaces a cluster task ({@code replication}, {@code content}, ...). */
    public JSONObject addClusterApp(String appName, JSONObject task) throws IOException {
        return jsonObject("PUT", "/svc/cluster/app/" + encode(appName), task, null);
    }

    /** {@code DELETE /svc/cluster/app/{name}}; false when there is no such task. */
    public boolean deleteClusterApp(String appName) throws IOException {
        return okOrNotFound(request("DELETE", "/svc/cluster/app/" + encode(appName), null, null, null));
    }

    /** {@code GET /svc/cluster/nodes}: the node reports by host name. */
    public JSONObject listClusterNodes() throws IOException {
        return jsonObject("GET", "/svc/cluster/nodes", null, null);
    }

    /** {@code GET /svc/cluster/topology}: the leader's schedule, host name to placed entries. */
    public JSONObject getClusterTopology() throws IOException {
        return jsonObject("GET", "/svc/cluster/topology", null, null);
    }

    // ------------------------------------------------------------------ discovery (public)

    /** {@code GET /svc/auth/config}: the sign-in flows and issuer (no bearer needed). */
    public JSONObject getAuthConfig() throws IOException {
        return jsonObject("GET", "/svc/auth/config", null, null);
    }

    /** {@code GET /.well-known/oauth-protected-resource} (RFC 9728). */
    public JSONObject getProtectedResourceMetadata() throws IOException {
        return jsonObject("GET", "/.well-known/oauth-protected-resource", null, null);
    }

    /** {@code GET /openapi.json}: the daemon's OpenAPI document. */
    public JSONObject getOpenApi() throws IOException {
        return jsonObject("GET", "/openapi.json", null, null);
    }
}
