package svc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.json.JSONException;
import org.json.JSONObject;

/**
 * The demultiplexer of a persistent connection (spec "Client demultiplexer contract"): the
 * connection's single reader hands every incoming {@link ResponseMessage} to {@link #deliver}, which
 * routes it to the waiter of its request uuid or, for a push ({@code request_uri == /svc/event}), to
 * the callback of its subscription.
 *
 * <ul>
 * <li>A request uuid is registered ({@link #expect}) before its bytes are written; no client-side
 * wait cap: only an answer or {@link #stop} completes it.</li>
 * <li>Events of one subscription reach its callback serially, in arrival order, on a pool thread:
 * a slow callback delays only later events of its own subscription, never the reader.</li>
 * <li>Events of a subscription without a callback yet are buffered (at most 64 ids, 1000 events
 * each, oldest dropped) and flushed in order at registration, under the same lock.</li>
 * <li>{@link #stop} fails every waiter with {@link TransportDisconnectedException}, pushes one
 * client-local {@code __disconnected__} event to every registered callback and discards buffers.</li>
 * </ul>
 */
public class MessageDemuxer {
    private static final Logger LOGGER = Logger.getLogger(MessageDemuxer.class.getName());

    /** The push sentinel: a Response with this request_uri is an event, whatever its uuid. */
    public static final String EVENT_URI = "/svc/event";
    /** Synthetic event type of a disconnect (client-local, or sent by a gateway). */
    public static final String EVENT_TYPE_DISCONNECTED = "__disconnected__";
    public static final int MAX_BUFFERED_SUBS = 64;
    public static final int MAX_BUFFERED_EVENTS_PER_SUB = 1000;

    /** Runs event callbacks; shared by every demultiplexer, threads die when idle. */
    private static final ExecutorService CALLBACKS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "svc-event-callback");
        t.setDaemon(true);
        return t;
    });

    /** Callback of a subscription. */
    @FunctionalInterface
    public interface EventCallback {
        void onEvent(AppEvent event);
    }

    /** A server push (or the client-local disconnect event). */
    public static class AppEvent {
        public String subscriptionId;
        public String eventType;
        public String appName;
        public long timestamp;
        public long sequence;
        /** Fields by event type (spec "Events"); empty for REMOVED and the client-local disconnect. */
        public JSONObject data = new JSONObject();

        @Override
        public String toString() {
            return "AppEvent{subscriptionId='" + subscriptionId + "', eventType='" + eventType + "', appName='"
                    + appName + "', sequence=" + sequence + "}";
        }
    }

    private final Map<String, CompletableFuture<ResponseMessage>> pending = new ConcurrentHashMap<>();
    private final Object eventLock = new Object();
    /** Guarded by eventLock. */
    private final Map<String, SerialQueue> callbacks = new HashMap<>();
    /** Guarded by eventLock; insertion order = order of first arrival. */
    private final Map<String, Deque<AppEvent>> buffers = new LinkedHashMap<>();
    private final AtomicLong droppedEvents = new AtomicLong();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private volatile Throwable stopCause;

    /** Registers a request before its bytes are written; the future completes with its answer. */
    public CompletableFuture<ResponseMessage> expect(String uuid) {
        CompletableFuture<ResponseMessage> future = new CompletableFuture<>();
        pending.put(uuid, future);
        // A stop() racing this registration has either seen the entry or set stopCause first.
        if (stopCause != null) {
            pending.remove(uuid);
            future.completeExceptionally(disconnected(stopCause));
        }
        return future;
    }

    /** Withdraws a registered request (nothing was written, or the caller gave up). */
    public void cancel(String uuid, Throwable cause) {
        CompletableFuture<ResponseMessage> f = pending.remove(uuid);
        if (f != null) {
            f.completeExceptionally(cause);
        }
    }

    /** Routes one incoming message (called by the connection's single reader). */
    public void deliver(ResponseMessage response) {
        if (EVENT_URI.equals(response.request_uri)) {
            AppEvent event = parseEvent(response);
            if (event != null) {
                dispatch(event);
            }
            return;
        }
        CompletableFuture<ResponseMessage> f = pending.remove(response.uuid);
        if (f != null) {
            f.complete(response);
        } else {
            LOGGER.fine("answer for an unknown request uuid dropped");
        }
    }

    private static AppEvent parseEvent(ResponseMessage response) {
        JSONObject body;
        try {
            body = new JSONObject(new String(response.body, StandardCharsets.UTF_8));
        } catch (JSONException e) {
            LOGGER.log(Level.WARNING, "event push with a body that is not a JSON object dropped");
            return null;
        }
        AppEvent event = new AppEvent();
        event.subscriptionId = body.optString("subscription_id", "");
        if (event.subscriptionId.isEmpty()) {
            String header = response.header("X-Subscription-Id");
            event.subscriptionId = header == null ? "" : header;
        }
        event.eventType = body.optString("event_type", nonNull(response.header("X-Event-Type")));
        event.appName = body.optString("app_name", nonNull(response.header("X-App-Name")));
        event.timestamp = body.optLong("timestamp", 0);
        event.sequence = body.optLong("sequence", 0);
        JSONObject data = body.optJSONObject("data");
        event.data = data == null ? new JSONObject() : data;
        return event.subscriptionId.isEmpty() ? null : event;
    }

    private static String nonNull(String s) {
        return s == null ? "" : s;
    }

    private void dispatch(AppEvent event) {
        synchronized (eventLock) {
            if (stopCause != null) {
                return;
            }
            SerialQueue queue = callbacks.get(event.subscriptionId);
            if (queue != null) {
                queue.submit(event);
                return;
            }
            Deque<AppEvent> buffer = buffers.get(event.subscriptionId);
            if (buffer == null) {
                if (buffers.size() >= MAX_BUFFERED_SUBS) {
                    droppedEvents.incrementAndGet();
                    return;
                }
                buffer = new ArrayDeque<>();
                buffers.put(event.subscriptionId, buffer);
            }
            if (buffer.size() >= MAX_BUFFERED_EVENTS_PER_SUB) {
                buffer.pollFirst();
                droppedEvents.incrementAndGet();
            }
            buffer.addLast(event);
        }
    }

    /** Registers the callback of a subscription and flushes, in order, what arrived before it. */
    public void registerEventCallback(String subscriptionId, EventCallback callback) {
        synchronized (eventLock) {
            SerialQueue queue = new SerialQueue(callback);
            if (stopCause != null) {
                queue.submit(disconnectEvent(subscriptionId));
                return;
            }
            callbacks.put(subscriptionId, queue);
            Deque<AppEvent> buffer = buffers.remove(subscriptionId);
            if (buffer != null) {
                for (AppEvent e : buffer) {
                    queue.submit(e);
                }
            }
        }
    }

    /** Removes a subscription's callback and discards its buffer. */
    public void unregisterEventCallback(String subscriptionId) {
        synchronized (eventLock) {
            callbacks.remove(subscriptionId);
            buffers.remove(subscriptionId);
        }
    }

    /**
     * Stops the demultiplexer (transport error or close); idempotent. Pending waiters fail with
     * {@link TransportDisconnectedException}; each registered callback gets one {@code __disconnected__}.
     */
    public void stop(Throwable cause) {
        List<SerialQueue> queues;
        List<String> ids;
        synchronized (eventLock) {
            if (stopCause != null) {
                return;
            }
            stopCause = cause == null ? new IllegalStateException("closed") : cause;
            ids = new ArrayList<>(callbacks.keySet());
            queues = new ArrayList<>(callbacks.values());
            callbacks.clear();
            buffers.clear();
        }
        for (String uuid : new ArrayList<>(pending.keySet())) {
            cancel(uuid, disconnected(stopCause));
        }
        for (int i = 0; i < queues.size(); i++) {
            queues.get(i).submit(disconnectEvent(ids.get(i)));
        }
        closed.complete(null);
    }

    private static AppEvent disconnectEvent(String subscriptionId) {
        AppEvent e = new AppEvent();
        e.subscriptionId = subscriptionId;
        e.eventType = EVENT_TYPE_DISCONNECTED;
        e.appName = "";
        return e;
    }

    static TransportDisconnectedException disconnected(Throwable cause) {
        if (cause instanceof TransportDisconnectedException) {
            return new TransportDisconnectedException(cause.getMessage(), cause);
        }
        return new TransportDisconnectedException("transport disconnected: " + cause.getMessage(), cause);
    }

    public boolean isRunning() {
        return stopCause == null;
    }

    /** Completes when the demultiplexer stopped (the transport is closed). */
    public CompletableFuture<Void> closedFuture() {
        return closed;
    }

    /** Events dropped by the pre-registration buffer caps. */
    public long getDroppedEvents() {
        return droppedEvents.get();
    }

    /** Subscription ids whose events are buffered, waiting for a callback. */
    public int getBufferedSubscriptions() {
        synchronized (eventLock) {
            return buffers.size();
        }
    }

    /** Subscriptions with a registered callback. */
    int registeredCallbacks() {
        synchronized (eventLock) {
            return callbacks.size();
        }
    }

    /** Requests registered and not yet answered. */
    public int getPendingRequests() {
        return pending.size();
    }

    /** Delivers the events of one subscription to its callback one at a time, in submission order. */
    private static final class SerialQueue {
        private final EventCallback callback;
        private final Deque<AppEvent> queue = new ArrayDeque<>();
        private boolean running;

        SerialQueue(EventCallback callback) {
            this.callback = callback;
        }

        void submit(AppEvent event) {
            synchronized (this) {
                queue.addLast(event);
                if (running) {
                    return;
                }
                running = true;
            }
            CALLBACKS.execute(this::drain);
        }

        private void drain() {
            while (true) {
                AppEvent next;
                synchronized (this) {
                    next = queue.pollFirst();
                    if (next == null) {
                        running = false;
                        return;
                    }
                }
                try {
                    callback.onEvent(next);
                } catch (RuntimeException e) {
                    LOGGER.log(Level.WARNING, "event callback failed", e);
                }
            }
        }
    }
}
