package svc;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The worker side of the task loop (spec "Worker task loop"), for a process the daemon manages:
 * {@link #fetchTask()} takes the next payload sent with {@code runTask}, {@link #sendTaskResult}
 * answers it. The process key ({@code SVC_PROCESS_KEY}) travels only in {@code X-Svc-Process-Key}.
 *
 * <pre>
 * fetching ── 200 ─▶ payload returned          204 (long poll ended) ─▶ fetching
 *    │ 412 ─▶ ProcessSupersededException     400 ─▶ IllegalStateException      (never retried)
 *    │ other failure ─▶ retry, at most one attempt per 100 ms, unlimited
 *    └ stop() or interrupt ─▶ null
 * </pre>
 */
public class SvcWorker {
    private static final Logger LOGGER = Logger.getLogger(SvcWorker.class.getName());
    /** Fixed floor between two attempts after a failure (no backoff). */
    public static final long RETRY_DELAY_MS = 100;
    static final String PROCESS_KEY_HEADER = "X-Svc-Process-Key";
    /** Long poll of one fetch, seconds. */
    static final int FETCH_POLL_SECONDS = 30;

    protected final SvcClient client;
    private final Map<String, String> env;
    private volatile boolean stopped;
    private volatile CompletableFuture<ResponseMessage> inflight;
    private volatile String lastTaskId;

    /** A worker over REST to {@code SVC_DAEMON_URL} (injected by the daemon), trusting the JVM's trust store. */
    public SvcWorker() {
        this(new SvcClient.Builder().baseURL(envOr(System.getenv(), "SVC_DAEMON_URL", "https://127.0.0.1:6060"))
                .build());
    }

    /** A worker over an existing client (REST, {@link SvcClientTCP} or {@link SvcClientWSS}). */
    public SvcWorker(SvcClient client) {
        this(client, System.getenv());
    }

    /** A worker reading {@code SVC_PROCESS_KEY} and {@code SVC_APPLICATION_NAME} from {@code env}. */
    public SvcWorker(SvcClient client, Map<String, String> env) {
        this.client = client;
        this.env = env;
    }

    private static String envOr(Map<String, String> env, String name, String fallback) {
        String v = env.get(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    private String requireEnv(String name) {
        String v = env.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException(name + " is not set: this is not a process managed by svc");
        }
        return v;
    }

    /** Cancels the fetch loop from any thread: a waiting {@link #fetchTask()} returns null. */
    public void stop() {
        stopped = true;
        CompletableFuture<ResponseMessage> f = inflight;
        if (f != null) {
            f.cancel(true);
        }
    }

    /**
     * Fetches the next task payload: blocks until one arrives (null once {@link #stop()} was called or
     * the thread was interrupted).
     *
     * @throws ProcessSupersededException on 412: this process's key belongs to a superseded process
     * @throws IllegalStateException on 400 (invalid request), or at once when the environment lacks
     *         {@code SVC_PROCESS_KEY} or {@code SVC_APPLICATION_NAME}
     */
    public byte[] fetchTask() {
        String key = requireEnv("SVC_PROCESS_KEY");
        String path = SvcClient.appPath(requireEnv("SVC_APPLICATION_NAME")) + "/task";
        Map<String, String> query = new LinkedHashMap<>();
        query.put("timeout", String.valueOf(FETCH_POLL_SECONDS));
        while (!stopped && !Thread.currentThread().isInterrupted()) {
            long started = System.nanoTime();
            ResponseMessage resp = null;
            try {
                CompletableFuture<ResponseMessage> f = client.requestAsync("GET", path, null, keyHeader(key), query);
                inflight = f;
                if (stopped) {
                    f.cancel(true);
                }
                resp = SvcClient.await(f);
            } catch (CancellationException e) {
                return null;
            } catch (java.io.InterruptedIOException e) {
                return null;
            } catch (IOException e) {
                LOGGER.log(Level.FINE, "fetchTask failed, retrying", e);
            } finally {
                inflight = null;
            }
            if (resp != null) {
                if (resp.http_status == 200) {
                    lastTaskId = resp.header("X-Task-Id");
                    return resp.body;
                }
                if (resp.http_status == 204) {
                    continue;
                }
                stopOnPermanent(resp);
                LOGGER.log(Level.FINE, "fetchTask answered {0}, retrying", resp.http_status);
            }
            long left = RETRY_DELAY_MS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            if (left > 0) {
                try {
                    Thread.sleep(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return null;
                }
            }
        }
        return null;
    }

    /** Returns the result of the task last fetched to its submitter, as-is. */
    public void sendTaskResult(byte[] result) throws IOException {
        String key = requireEnv("SVC_PROCESS_KEY");
        String path = SvcClient.appPath(requireEnv("SVC_APPLICATION_NAME")) + "/task";
        Map<String, String> headers = keyHeader(key);
        String taskId = lastTaskId;
        if (taskId != null && !taskId.isEmpty()) {
            headers.put("X-Task-Id", taskId);
        }
        ResponseMessage resp = client.request("PUT", path, result == null ? new byte[0] : result, headers, null);
        stopOnPermanent(resp);
        SvcClient.ok(resp);
    }

    private static Map<String, String> keyHeader(String key) {
        Map<String, String> h = new LinkedHashMap<>();
        h.put(PROCESS_KEY_HEADER, key);
        return h;
    }

    private static void stopOnPermanent(ResponseMessage resp) {
        if (resp.http_status == 412) {
            throw new ProcessSupersededException("the process key belongs to a superseded process (412)",
                    SvcApiException.from(resp));
        }
        if (resp.http_status == 400) {
            throw new IllegalStateException("the daemon rejected the worker request (400)", SvcApiException.from(resp));
        }
    }
}
