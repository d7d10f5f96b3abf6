package svc

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func pushResponse(id string, seq int, headerID string) *Response {
	body := map[string]any{"event_type": "STDOUT", "app_name": "a", "sequence": seq, "data": map[string]any{}}
	if id != "" {
		body["subscription_id"] = id
	}
	raw, _ := json.Marshal(body)
	headers := map[string]string{}
	if headerID != "" {
		headers["X-Subscription-Id"] = headerID
	}
	return &Response{UUID: newUUID(), RequestUri: EVENT_URI, HttpStatus: 200, Headers: headers, Body: raw}
}

func collect() (EventCallback, func() []AppEvent) {
	var mu sync.Mutex
	var got []AppEvent
	return func(e AppEvent) {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}, func() []AppEvent {
			mu.Lock()
			defer mu.Unlock()
			return append([]AppEvent{}, got...)
		}
}

func TestDemuxRoutesAnswersByUUIDAndPushesByURI(t *testing.T) {
	d := newDemuxer()
	ch, err := d.expect("u1")
	if err != nil {
		t.Fatal(err)
	}
	// A push carrying the same uuid as a waiter is still a push (routed by request_uri alone).
	p := pushResponse("s", 1, "")
	p.UUID = "u1"
	d.deliver(p)
	d.deliver(&Response{UUID: "u1", RequestUri: "/svc/self", HttpStatus: 200})
	if r := <-ch; r.RequestUri != "/svc/self" {
		t.Fatalf("waiter got %+v", r)
	}
	if s := d.stats(); s.PendingRequests != 0 || s.BufferedSubscriptions != 1 {
		t.Fatalf("stats %+v", s)
	}
	if _, err := d.expect("u2"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.expect("u2"); err == nil {
		t.Fatal("a duplicate uuid must be refused")
	}
	d.deliver(&Response{UUID: "unknown", RequestUri: "/x", HttpStatus: 200}) // a late answer: dropped
}

func TestDemuxSubscriptionIdFallsBackToHeader(t *testing.T) {
	d := newDemuxer()
	cb, got := collect()
	if err := d.register("h", cb); err != nil {
		t.Fatal(err)
	}
	d.deliver(pushResponse("", 1, "h"))
	eventually(t, "the event", func() bool { return len(got()) == 1 && got()[0].SubscriptionID == "h" })
}

func TestDemuxHostilePushesAreDropped(t *testing.T) {
	d := newDemuxer()
	for _, body := range []string{"", "not json", "[1]", `{"event_type":"STDOUT"}`, `{"subscription_id": 5}`} {
		d.deliver(&Response{UUID: "x", RequestUri: EVENT_URI, HttpStatus: 200, Body: []byte(body)})
	}
	if s := d.stats(); s.BufferedSubscriptions != 0 || s.DroppedEvents != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDemuxBufferCapsAndOrder(t *testing.T) {
	d := newDemuxer()
	// The id cap: 70 ids, one event each: 64 buffered, 6 dropped.
	for i := 0; i < 70; i++ {
		d.deliver(pushResponse(fmt.Sprintf("f%d", i), 1, ""))
	}
	if s := d.stats(); s.BufferedSubscriptions != MaxBufferedSubscriptions || s.DroppedEvents != 6 {
		t.Fatalf("stats %+v", s)
	}
	// The per-id cap: 1100 events for f0 keep the newest 1000.
	for seq := 2; seq <= 1100; seq++ {
		d.deliver(pushResponse("f0", seq, ""))
	}
	if s := d.stats(); s.DroppedEvents != 6+100 {
		t.Fatalf("stats %+v", s)
	}
	cb, got := collect()
	if err := d.register("f0", cb); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the buffered events", func() bool { return len(got()) == 1000 })
	for i, e := range got() {
		if e.Sequence != uint64(101+i) {
			t.Fatalf("event %d has sequence %d", i, e.Sequence)
		}
	}
	d.unregister("f1")
	if s := d.stats(); s.BufferedSubscriptions != 62 {
		t.Fatalf("unsubscribe must discard the buffer: %+v", s)
	}
	d.deliver(pushResponse("f1", 2000, "")) // late event of an unsubscribed id: dropped, not buffered
	if s := d.stats(); s.BufferedSubscriptions != 62 {
		t.Fatalf("a forgotten id was buffered again: %+v", s)
	}
	d.stop(nil)
	if s := d.stats(); s.BufferedSubscriptions != 0 {
		t.Fatalf("stop must discard every buffer: %+v", s)
	}
}

// A slow callback delays only later events of its own subscription: never the reader, other
// subscriptions or answers.
func TestDemuxSlowCallbackBlocksOnlyItsSubscription(t *testing.T) {
	d := newDemuxer()
	release := make(chan struct{})
	var slowSeen []uint64
	var mu sync.Mutex
	if err := d.register("slow", func(e AppEvent) {
		<-release
		mu.Lock()
		slowSeen = append(slowSeen, e.Sequence)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	fast, got := collect()
	if err := d.register("fast", fast); err != nil {
		t.Fatal(err)
	}
	ch, _ := d.expect("req")
	delivered := make(chan struct{})
	go func() {
		for seq := 1; seq <= 5; seq++ {
			d.deliver(pushResponse("slow", seq, ""))
			d.deliver(pushResponse("fast", seq, ""))
		}
		d.deliver(&Response{UUID: "req", RequestUri: "/svc/self", HttpStatus: 200})
		close(delivered)
	}()
	select {
	case <-delivered:
	case <-time.After(10 * time.Second):
		t.Fatal("a slow callback blocked the reader")
	}
	<-ch
	eventually(t, "the other subscription's events", func() bool { return len(got()) == 5 })
	close(release)
	eventually(t, "the slow subscription's events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(slowSeen) == 5
	})
	for i, s := range slowSeen {
		if s != uint64(i+1) {
			t.Fatalf("slow subscription out of order: %v", slowSeen)
		}
	}
}

func TestDemuxStopWakesWaitersAndTellsEveryCallbackOnce(t *testing.T) {
	d := newDemuxer()
	a, gotA := collect()
	b, gotB := collect()
	_ = d.register("a", a)
	_ = d.register("b", b)
	ch, _ := d.expect("r")
	d.stop(errors.New("reset by peer"))
	d.stop(errors.New("again")) // idempotent
	if _, ok := <-ch; ok {
		t.Fatal("a waiter must be woken with the disconnect")
	}
	if !errors.Is(d.err(), ErrTransportDisconnected) {
		t.Fatalf("err %v", d.err())
	}
	if _, err := d.expect("later"); !errors.Is(err, ErrTransportDisconnected) {
		t.Fatalf("a later request: %v", err)
	}
	late, gotLate := collect()
	_ = d.register("late", late)
	for _, got := range []func() []AppEvent{gotA, gotB, gotLate} {
		eventually(t, "__disconnected__", func() bool { return len(got()) == 1 })
		if e := got()[0]; e.EventType != EventTypeDisconnected || e.SubscriptionID == "" || e.Data != nil {
			t.Fatalf("event %+v", e)
		}
	}
	d.deliver(pushResponse("a", 9, "")) // nothing after the stop
	if len(gotA()) != 1 {
		t.Fatal("an event after stop was delivered")
	}
}

func TestDemuxPanickingCallbackDoesNotStopDelivery(t *testing.T) {
	d := newDemuxer()
	var n int
	var mu sync.Mutex
	_ = d.register("p", func(e AppEvent) {
		mu.Lock()
		n++
		mu.Unlock()
		if e.Sequence == 1 {
			panic("callback bug")
		}
	})
	d.deliver(pushResponse("p", 1, ""))
	d.deliver(pushResponse("p", 2, ""))
	eventually(t, "both events", func() bool { mu.Lock(); defer mu.Unlock(); return n == 2 })
}
