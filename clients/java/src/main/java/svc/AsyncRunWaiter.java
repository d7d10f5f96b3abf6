package svc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.json.JSONObject;

/**
 * {@code waitForAsyncRun} (spec "Run-wait contract"). Over TCP and WSS ({@link #viaEvents}):
 * <ol>
 * <li>subscribe STDOUT, EXIT and REMOVED for the run's app;</li>
 * <li>backfill the output from position 0 until no new bytes (this also detects an exit that
 * happened before the subscription);</li>
 * <li>deliver each output byte once, deduplicated by byte position;</li>
 * <li>wait for EXIT (exit code, may be negative), REMOVED ({@link AppRemovedException}),
 * {@code __disconnected__} ({@link TransportDisconnectedException}) or the caller's timeout (null);</li>
 * <li>clean up: unsubscribe unless the transport is dead; delete the run app only after an observed
 * exit, never after REMOVED or a disconnect.</li>
 * </ol>
 * Over REST ({@link #poll}) the output is long-polled until the exit code appears.
 */
final class AsyncRunWaiter {
    private static final int POLL_SECONDS = 5;

    private AsyncRunWaiter() {
    }

    /** Delivers output to the handler, each byte position once. */
    private static final class OutputSink {
        private final SvcClient.OutputHandler handler;
        private long deliveredUntil;

        OutputSink(SvcClient.OutputHandler handler) {
            this.handler = handler;
        }

        synchronized void deliver(byte[] chunk, long position) {
            long end = position + chunk.length;
            if (chunk.length == 0 || end <= deliveredUntil) {
                return;
            }
            int skip = (int) Math.max(0, deliveredUntil - position);
            long start = position + skip;
            deliveredUntil = end;
            if (handler != null) {
                handler.handle(new String(chunk, skip, chunk.length - skip, StandardCharsets.UTF_8), start);
            }
        }
    }

    /** A settled outcome: an exit code or a failure. */
    private static final class Outcome {
        final Integer exitCode;
        final IOException failure;

        Outcome(Integer exitCode, IOException failure) {
            this.exitCode = exitCode;
            this.failure = failure;
        }
    }

    static Integer viaEvents(SvcClient client, SvcClient.AppRun run, SvcClient.OutputHandler handler,
            Duration timeout) throws IOException {
        String app = run.getAppName();
        OutputSink sink = new OutputSink(handler);
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        MessageDemuxer.EventCallback callback = event -> {
            switch (event.eventType) {
                case "STDOUT":
                    sink.deliver(event.data.optString("output", "").getBytes(StandardCharsets.UTF_8),
                            event.data.optLong("position", 0));
                    break;
                case "EXIT":
                    Object code = event.data.opt("exit_code");
                    if (code instanceof Number) {
                        outcome.complete(new Outcome(((Number) code).intValue(), null));
                    } else {
                        outcome.complete(new Outcome(null,
                                new IOException("EXIT event of " + app + " without an integer exit_code")));
                    }
                    break;
                case "REMOVED":
                    outcome.complete(new Outcome(null,
                            new AppRemovedException("application " + app + " was removed before its process exited")));
                    break;
                case MessageDemuxer.EVENT_TYPE_DISCONNECTED:
                    outcome.complete(new Outcome(null, new TransportDisconnectedException(
                            "transport disconnected while waiting for " + app + " to exit")));
                    break;
                default:
                    break;
            }
        };
        JSONObject sub;
        try {
            sub = client.subscribe(app, new String[] { "STDOUT", "EXIT", "REMOVED" }, callback);
        } catch (SvcApiException e) {
            if (e.getErrorCode() == SvcErrorCode.APP_NOT_FOUND) {
                throw new AppRemovedException("application " + app + " was removed before its process exited");
            }
            throw e;
        }
        String subscriptionId = sub.optString("subscription_id", "");
        Outcome result = null;
        try {
            backfill(client, run, sink, outcome);
            result = awaitOutcome(outcome, timeout);
        } catch (TransportDisconnectedException e) {
            result = new Outcome(null, e);
        } finally {
            boolean dead = result != null && result.failure instanceof TransportDisconnectedException;
            MessageDemuxer demux = client.demuxerOrNull();
            if (!dead && demux != null && demux.isRunning() && !subscriptionId.isEmpty()) {
                try {
                    client.unsubscribe(subscriptionId);
                } catch (IOException | RuntimeException e) {
                    // best effort
                }
            }
            if (result != null && result.failure == null && result.exitCode != null) {
                try {
                    client.deleteApp(app);
                } catch (IOException | RuntimeException e) {
                    // best effort
                }
            }
        }
        if (result == null) {
            return null;
        }
        if (result.failure != null) {
            throw result.failure;
        }
        return result.exitCode;
    }

    private static void backfill(SvcClient client, SvcClient.AppRun run, OutputSink sink,
            CompletableFuture<Outcome> outcome) throws IOException {
        long position = 0;
        while (!outcome.isDone()) {
            SvcClient.AppOutput out;
            try {
                out = client.getAppOutput(run.getAppName(), position, 0, 0, run.getProcessUuid(), 0);
            } catch (SvcApiException e) {
                if (e.getErrorCode() == SvcErrorCode.APP_NOT_FOUND) {
                    outcome.complete(new Outcome(null, new AppRemovedException(
                            "application " + run.getAppName() + " was removed before its process exited")));
                }
                return; // other failures: the events still tell the outcome
            }
            byte[] bytes = out.bytes;
            sink.deliver(bytes, position);
            long next = out.getOutputPosition() != null ? out.getOutputPosition() : position + bytes.length;
            if (out.getExitCode() != null) {
                outcome.complete(new Outcome(out.getExitCode(), null));
                return;
            }
            if (next <= position) {
                return;
            }
            position = next;
        }
    }

    private static Outcome awaitOutcome(CompletableFuture<Outcome> outcome, Duration timeout) throws IOException {
        try {
            if (timeout == null || timeout.isZero() || timeout.isNegative()) {
                return outcome.get();
            }
            return outcome.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for the run");
        } catch (ExecutionException e) {
            throw SvcClient.rethrow(e.getCause());
        }
    }

    /** REST: long-poll the output until the exit code appears, the app disappears or the time is up. */
    static Integer poll(SvcClient client, SvcClient.AppRun run, SvcClient.OutputHandler handler, Duration timeout)
            throws IOException {
        OutputSink sink = new OutputSink(handler);
        long deadline = timeout == null || timeout.isZero() ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
        long position = 0;
        while (true) {
            long leftSeconds = (deadline - System.nanoTime()) / 1_000_000_000L;
            if (deadline != Long.MAX_VALUE && System.nanoTime() >= deadline) {
                return null;
            }
            int wait = (int) Math.max(0, Math.min(POLL_SECONDS, leftSeconds));
            SvcClient.AppOutput out;
            try {
                out = client.getAppOutput(run.getAppName(), position, 0, 0, run.getProcessUuid(), wait);
            } catch (SvcApiException e) {
                if (e.getErrorCode() == SvcErrorCode.APP_NOT_FOUND) {
                    throw new AppRemovedException(
                            "application " + run.getAppName() + " was removed before its process exited");
                }
                throw e;
            }
            sink.deliver(out.bytes, position);
            position = out.getOutputPosition() != null ? out.getOutputPosition() : position + out.bytes.length;
            if (out.getExitCode() != null) {
                try {
                    client.deleteApp(run.getAppName());
                } catch (IOException | RuntimeException e) {
                    // best effort
                }
                return out.getExitCode();
            }
        }
    }
}
