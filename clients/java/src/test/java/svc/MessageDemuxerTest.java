package svc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** The demultiplexer's rules (spec "Client demultiplexer contract") on hand-made messages. */
class MessageDemuxerTest {
    private static ResponseMessage push(String subscriptionId, long sequence, String type) {
        ResponseMessage r = new ResponseMessage();
        r.uuid = "event-" + subscriptionId + "-" + sequence;
        r.request_uri = MessageDemuxer.EVENT_URI;
        r.http_status = 200;
        r.body = new JSONObject().put("subscription_id", subscriptionId).put("event_type", type)
                .put("app_name", "a").put("sequence", sequence).put("timestamp", 1).put("data", new JSONObject())
                .toString().getBytes(StandardCharsets.UTF_8);
        return r;
    }

    private static ResponseMessage answer(String uuid) {
        ResponseMessage r = new ResponseMessage();
        r.uuid = uuid;
        r.request_uri = "/svc/self";
        r.http_status = 200;
        return r;
    }

    /** Collects events; done completes at the count. */
    private static final class Collector implements MessageDemuxer.EventCallback {
        final List<MessageDemuxer.AppEvent> events = Collections.synchronizedList(new ArrayList<>());
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final int count;

        Collector(int count) {
            this.count = count;
        }

        @Override
        public void onEvent(MessageDemuxer.AppEvent event) {
            events.add(event);
            if (events.size() >= count) {
                done.complete(null);
            }
        }

        List<Long> sequences() throws Exception {
            done.get(30, TimeUnit.SECONDS);
            List<Long> out = new ArrayList<>();
            synchronized (events) {
                for (MessageDemuxer.AppEvent e : events) {
                    out.add(e.sequence);
                }
            }
            return out;
        }
    }

    @Test
    void earlyEventsAreBufferedAndFlushedInOrderAtRegistration() throws Exception {
        MessageDemuxer d = new MessageDemuxer();
        for (long s = 1; s <= 3; s++) {
            d.deliver(push("s4", s, "STDOUT"));
        }
        assertEquals(1, d.getBufferedSubscriptions());
        Collector c = new Collector(4);
        d.registerEventCallback("s4", c);
        d.deliver(push("s4", 4, "EXIT"));
        assertEquals(List.of(1L, 2L, 3L, 4L), c.sequences());
        assertEquals(0, d.getBufferedSubscriptions());
    }

    @Test
    void aFloodForNeverRegisteredSubscriptionsIsBoundedBy64IdsAnd1000Events() throws Exception {
        MessageDemuxer d = new MessageDemuxer();
        for (long s = 1; s <= 1100; s++) {
            for (int id = 0; id < 70; id++) {
                d.deliver(push("flood-" + id, s, "STDOUT"));
            }
        }
        assertEquals(64, d.getBufferedSubscriptions());
        assertEquals(6 * 1100 + 64 * 100, d.getDroppedEvents());
        Collector c = new Collector(1000);
        d.registerEventCallback("flood-0", c);
        List<Long> got = c.sequences();
        assertEquals(1000, got.size());
        assertEquals(101L, got.get(0));
        assertEquals(1100L, got.get(999));
        d.unregisterEventCallback("flood-1");
        assertEquals(62, d.getBufferedSubscriptions(), "unsubscribing discards a buffer");
        d.stop(new TransportDisconnectedException("test"));
        assertEquals(0, d.getBufferedSubscriptions(), "stopping discards every buffer");
    }

    @Test
    void aPushIsRoutedByItsRequestUriAloneAndFallsBackToTheHeader() throws Exception {
        MessageDemuxer d = new MessageDemuxer();
        CompletableFuture<ResponseMessage> pending = d.expect("same-uuid");
        ResponseMessage p = push("x", 1, "START");
        p.uuid = "same-uuid";
        p.body = "{\"event_type\":\"START\",\"sequence\":1}".getBytes(StandardCharsets.UTF_8);
        p.headers.put("X-Subscription-Id", "from-header");
        Collector c = new Collector(1);
        d.registerEventCallback("from-header", c);
        d.deliver(p);
        assertEquals(List.of(1L), c.sequences());
        assertFalse(pending.isDone(), "a push never answers a request, even with its uuid");
        d.deliver(answer("same-uuid"));
        assertEquals(200, pending.get(5, TimeUnit.SECONDS).http_status);
        assertEquals(0, d.getPendingRequests());
    }

    @Test
    void aSlowCallbackDelaysOnlyItsOwnSubscription() throws Exception {
        MessageDemuxer d = new MessageDemuxer();
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch slowEntered = new CountDownLatch(1);
        List<Long> slow = Collections.synchronizedList(new ArrayList<>());
        d.registerEventCallback("slow", e -> {
            slowEntered.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            slow.add(e.sequence);
        });
        Collector fast = new Collector(2);
        d.registerEventCallback("fast", fast);
        CompletableFuture<ResponseMessage> request = d.expect("r1");
        d.deliver(push("slow", 1, "STDOUT"));
        d.deliver(push("slow", 2, "STDOUT"));
        assertTrue(slowEntered.await(30, TimeUnit.SECONDS));
        d.deliver(push("fast", 1, "STDOUT"));
        d.deliver(answer("r1"));
        d.deliver(push("fast", 2, "STDOUT"));
        assertEquals(List.of(1L, 2L), fast.sequences(), "other subscriptions go on");
        assertEquals(200, request.get(30, TimeUnit.SECONDS).http_status, "answers go on");
        assertEquals(List.of(), slow);
        release.countDown();
        ConformanceTest.eventually(() -> slow.size() == 2, "the slow subscription's events");
        assertEquals(List.of(1L, 2L), slow, "in order");
    }

    @Test
    void stopFailsWaitersAndSendsOneDisconnectToEachCallback() throws Exception {
        MessageDemuxer d = new MessageDemuxer();
        CompletableFuture<ResponseMessage> pending = d.expect("r1");
        Collector a = new Collector(1);
        Collector b = new Collector(1);
        d.registerEventCallback("a", a);
        d.registerEventCallback("b", b);
        d.deliver(push("buffered", 1, "STDOUT"));
        d.stop(new TransportDisconnectedException("connection reset"));
        d.stop(new TransportDisconnectedException("second stop is a no-op"));
        ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                () -> pending.get(5, TimeUnit.SECONDS));
        assertTrue(failed.getCause() instanceof TransportDisconnectedException);
        for (Collector c : List.of(a, b)) {
            c.done.get(5, TimeUnit.SECONDS);
            assertEquals(1, c.events.size());
            assertEquals(MessageDemuxer.EVENT_TYPE_DISCONNECTED, c.events.get(0).eventType);
        }
        assertEquals("a", a.events.get(0).subscriptionId);
        assertEquals(0, d.getBufferedSubscriptions());
        assertFalse(d.isRunning());
        CompletableFuture<ResponseMessage> late = d.expect("r2");
        assertTrue(late.isCompletedExceptionally(), "a request after the stop fails at once");
        assertSame(null, d.closedFuture().getNow(null));
        assertTrue(d.closedFuture().isDone());
    }

    @Test
    void aMalformedPushIsDroppedWithoutStoppingTheDemultiplexer() throws Exception {
        MessageDemuxer d = new MessageDemuxer();
        ResponseMessage bad = push("x", 1, "START");
        bad.body = "not json".getBytes(StandardCharsets.UTF_8);
        d.deliver(bad);
        ResponseMessage noId = push("x", 1, "START");
        noId.body = "{}".getBytes(StandardCharsets.UTF_8);
        d.deliver(noId);
        assertTrue(d.isRunning());
        assertEquals(0, d.getBufferedSubscriptions());
    }
}
