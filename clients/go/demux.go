package svc

// The client demultiplexer (spec "Client demultiplexer contract"), shared by TCP and WSS:
//
//	reader goroutine ─▶ deliver(Response)
//	    ├─ request_uri == /svc/event ─▶ subscription id (body, else X-Subscription-Id)
//	    │     ├─ callback registered ─▶ its queue, drained by one goroutine at a time (serial,
//	    │     │                           arrival order; a slow callback never blocks the reader)
//	    │     └─ not yet ─▶ buffer (≤ 64 ids, ≤ 1000 events per id, oldest dropped)
//	    └─ uuid of a waiting request ─▶ that request
//	stop(cause) ─▶ every waiter gets ErrTransportDisconnected, every callback one client-local
//	               __disconnected__ event, buffers are discarded.
//
// A request has no timer of its own: it ends with its answer, its context, or stop.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// EVENT_URI is the request_uri of a server push.
const EVENT_URI = "/svc/event"

// EventTypeDisconnected is the synthetic event pushed to every callback when the transport stops
// (client-local, only subscription_id and event_type) or, from a gateway, when a forwarded route
// failed (with data.message; not proof that the local transport is down).
const EventTypeDisconnected = "__disconnected__"

// Caps of the pre-registration buffer.
const (
	MaxBufferedSubscriptions         = 64
	MaxBufferedEventsPerSubscription = 1000
	forgottenIDs                     = 1024
)

// AppEvent is one event of a subscription.
type AppEvent struct {
	SubscriptionID string          `json:"subscription_id"`
	EventType      string          `json:"event_type"`
	AppName        string          `json:"app_name,omitempty"`
	Timestamp      int64           `json:"timestamp,omitempty"`
	Sequence       uint64          `json:"sequence,omitempty"`
	Data           json.RawMessage `json:"data,omitempty"`
}

// EventCallback receives the events of one subscription, one at a time, in arrival order.
type EventCallback func(event AppEvent)

// DemuxStats are the demultiplexer's counters.
type DemuxStats struct {
	PendingRequests         int
	RegisteredSubscriptions int
	BufferedSubscriptions   int
	DroppedEvents           int
}

type subscriptionSlot struct {
	callback EventCallback
	queue    []AppEvent
	draining bool
	detached bool
}

type demuxer struct {
	mu        sync.Mutex
	waiters   map[string]chan *Response
	slots     map[string]*subscriptionSlot
	buffered  map[string][]AppEvent
	forgotten map[string]struct{}
	forgetLog []string
	dropped   int
	stopped   error
	done      chan struct{}
}

func newDemuxer() *demuxer {
	return &demuxer{
		waiters:   map[string]chan *Response{},
		slots:     map[string]*subscriptionSlot{},
		buffered:  map[string][]AppEvent{},
		forgotten: map[string]struct{}{},
		done:      make(chan struct{}),
	}
}

// expect registers a request uuid; call it before the request's bytes are written.
func (d *demuxer) expect(uuid string) (chan *Response, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped != nil {
		return nil, d.stopped
	}
	if _, dup := d.waiters[uuid]; dup {
		return nil, fmt.Errorf("svc: request uuid %s is already pending", uuid)
	}
	ch := make(chan *Response, 1)
	d.waiters[uuid] = ch
	return ch, nil
}

// cancel forgets a waiter (write failed, context done); a late answer is dropped.
func (d *demuxer) cancel(uuid string) {
	d.mu.Lock()
	delete(d.waiters, uuid)
	d.mu.Unlock()
}

// err is the disconnect error once stopped, else nil.
func (d *demuxer) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}

// deliver routes one incoming Response (called by the single reader).
func (d *demuxer) deliver(r *Response) {
	if r.RequestUri == EVENT_URI {
		d.deliverEvent(r)
		return
	}
	d.mu.Lock()
	ch, ok := d.waiters[r.UUID]
	if ok {
		delete(d.waiters, r.UUID)
	}
	d.mu.Unlock()
	if ok {
		ch <- r
	}
}

func (d *demuxer) deliverEvent(r *Response) {
	var event AppEvent
	if err := json.Unmarshal(r.Body, &event); err != nil {
		return
	}
	if event.SubscriptionID == "" {
		for k, v := range r.Headers {
			if strings.EqualFold(k, "X-Subscription-Id") {
				event.SubscriptionID = v
			}
		}
	}
	if event.SubscriptionID == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped != nil {
		return
	}
	if slot, ok := d.slots[event.SubscriptionID]; ok {
		d.enqueueLocked(slot, event)
		return
	}
	if _, gone := d.forgotten[event.SubscriptionID]; gone {
		return
	}
	buf, ok := d.buffered[event.SubscriptionID]
	if !ok && len(d.buffered) >= MaxBufferedSubscriptions {
		d.dropped++
		return
	}
	buf = append(buf, event)
	if len(buf) > MaxBufferedEventsPerSubscription {
		buf = buf[1:]
		d.dropped++
	}
	d.buffered[event.SubscriptionID] = buf
}

// register attaches the callback of a subscription and flushes its buffered events in order,
// under the same lock. After stop, the callback gets __disconnected__ at once.
func (d *demuxer) register(id string, cb EventCallback) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.slots[id]; dup {
		return fmt.Errorf("svc: subscription %s already has a callback", id)
	}
	slot := &subscriptionSlot{callback: cb}
	d.slots[id] = slot
	delete(d.forgotten, id)
	if d.stopped != nil {
		d.enqueueLocked(slot, AppEvent{SubscriptionID: id, EventType: EventTypeDisconnected})
		return nil
	}
	for _, e := range d.buffered[id] {
		d.enqueueLocked(slot, e)
	}
	delete(d.buffered, id)
	return nil
}

// unregister detaches a subscription and discards its buffer; later events for it are dropped.
func (d *demuxer) unregister(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if slot, ok := d.slots[id]; ok {
		slot.detached = true
		slot.queue = nil
		delete(d.slots, id)
	}
	delete(d.buffered, id)
	if _, ok := d.forgotten[id]; !ok {
		d.forgotten[id] = struct{}{}
		d.forgetLog = append(d.forgetLog, id)
		if len(d.forgetLog) > forgottenIDs {
			delete(d.forgotten, d.forgetLog[0])
			d.forgetLog = d.forgetLog[1:]
		}
	}
}

// stop wakes every waiter with ErrTransportDisconnected (wrapping cause), sends __disconnected__
// to every callback and discards the buffers. Idempotent.
func (d *demuxer) stop(cause error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped != nil {
		return
	}
	if cause == nil || errors.Is(cause, ErrTransportDisconnected) {
		d.stopped = ErrTransportDisconnected
	} else {
		d.stopped = fmt.Errorf("%w: %v", ErrTransportDisconnected, cause)
	}
	for uuid, ch := range d.waiters {
		close(ch)
		delete(d.waiters, uuid)
	}
	d.buffered = map[string][]AppEvent{}
	for id, slot := range d.slots {
		d.enqueueLocked(slot, AppEvent{SubscriptionID: id, EventType: EventTypeDisconnected})
	}
	close(d.done)
}

func (d *demuxer) stats() DemuxStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DemuxStats{
		PendingRequests:         len(d.waiters),
		RegisteredSubscriptions: len(d.slots),
		BufferedSubscriptions:   len(d.buffered),
		DroppedEvents:           d.dropped,
	}
}

func (d *demuxer) enqueueLocked(slot *subscriptionSlot, e AppEvent) {
	slot.queue = append(slot.queue, e)
	if !slot.draining {
		slot.draining = true
		go d.drain(slot)
	}
}

// drain runs a slot's callback on its queued events, one at a time, until the queue is empty.
func (d *demuxer) drain(slot *subscriptionSlot) {
	for {
		d.mu.Lock()
		if slot.detached || len(slot.queue) == 0 {
			slot.draining = false
			d.mu.Unlock()
			return
		}
		e := slot.queue[0]
		slot.queue = slot.queue[1:]
		d.mu.Unlock()
		func() {
			defer func() { _ = recover() }() // a panicking callback must not kill the client
			slot.callback(e)
		}()
	}
}
