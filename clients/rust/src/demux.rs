//! The demultiplexer of a persistent transport (spec "Client demultiplexer contract").
//!
//! ```text
//!   reader task ──route()──┬─ request_uri == /svc/event ─► callback queue of subscription_id
//!                          │                               (or the pre-registration buffer)
//!                          └─ otherwise ─► pending waiter of uuid
//!   stop() ─► one __disconnected__ per callback, pending waiters woken, buffers dropped
//! ```
//!
//! Callbacks run on one thread per subscription, serially and in arrival order, so a slow
//! callback never blocks the reader, other subscriptions or request answers.

use std::collections::{HashMap, VecDeque};
use std::sync::{mpsc as std_mpsc, Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::error::{Result, SvcError};
use crate::models::{AppEvent, EventCallback, EVENT_TYPE_DISCONNECTED};
use crate::wire::ResponseMessage;

/// The request_uri of a server push.
pub const EVENT_REQUEST_URI: &str = "/svc/event";
/// At most this many distinct unregistered subscription ids are buffered.
pub const MAX_BUFFERED_SUBSCRIPTIONS: usize = 64;
/// At most this many events are buffered per unregistered id (the oldest are dropped).
pub const MAX_BUFFERED_EVENTS: usize = 1000;

/// Counters of a demultiplexer (what S5 checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DemuxStats {
    pub dropped_events: u64,
    pub buffered_subscriptions: usize,
    pub pending_requests: usize,
    /// Subscriptions with a registered callback.
    pub subscriptions: usize,
}

#[derive(Default)]
struct State {
    stopped: bool,
    pending: HashMap<String, oneshot::Sender<ResponseMessage>>,
    callbacks: HashMap<String, std_mpsc::Sender<AppEvent>>,
    buffers: HashMap<String, VecDeque<AppEvent>>,
    dropped_events: u64,
}

/// Routes answers to waiters and pushes to subscription callbacks.
#[derive(Default)]
pub struct Demux {
    state: Mutex<State>,
}

impl Demux {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere never leaves the state half-updated in a way that matters here.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a waiter for `uuid`; must be called before the request's bytes are written.
    pub fn register_request(&self, uuid: &str) -> Result<oneshot::Receiver<ResponseMessage>> {
        let mut state = self.lock();
        if state.stopped {
            return Err(SvcError::TransportDisconnected);
        }
        let (tx, rx) = oneshot::channel();
        state.pending.insert(uuid.to_string(), tx);
        Ok(rx)
    }

    pub fn unregister_request(&self, uuid: &str) {
        self.lock().pending.remove(uuid);
    }

    /// Routes one incoming message (called by the reader only).
    pub fn route(&self, message: ResponseMessage) {
        if message.request_uri == EVENT_REQUEST_URI {
            if let Some(event) = AppEvent::from_push(&message) {
                self.deliver(event);
            }
            return;
        }
        let waiter = self.lock().pending.remove(&message.uuid);
        if let Some(waiter) = waiter {
            let _ = waiter.send(message);
        }
    }

    fn deliver(&self, event: AppEvent) {
        let mut state = self.lock();
        if state.stopped {
            return;
        }
        if let Some(callback) = state.callbacks.get(&event.subscription_id) {
            let _ = callback.send(event);
            return;
        }
        let buffered_ids = state.buffers.len();
        let State {
            buffers,
            dropped_events,
            ..
        } = &mut *state;
        match buffers.get_mut(&event.subscription_id) {
            Some(queue) => {
                if queue.len() >= MAX_BUFFERED_EVENTS {
                    queue.pop_front();
                    *dropped_events += 1;
                }
                queue.push_back(event);
            }
            None if buffered_ids >= MAX_BUFFERED_SUBSCRIPTIONS => *dropped_events += 1,
            None => {
                buffers.insert(event.subscription_id.clone(), VecDeque::from([event]));
            }
        }
    }

    /// Registers the callback of a subscription; events buffered for it are delivered first, in
    /// order, under the same lock as live routing. On a stopped demultiplexer the callback gets
    /// the `__disconnected__` event at once.
    pub fn register_callback(&self, subscription_id: &str, callback: EventCallback) {
        let (tx, rx) = std_mpsc::channel::<AppEvent>();
        std::thread::Builder::new()
            .name(format!("svc-events-{subscription_id}"))
            .spawn(move || {
                for event in rx {
                    callback(event);
                }
            })
            .expect("spawn an event dispatch thread");
        let mut state = self.lock();
        if state.stopped {
            let _ = tx.send(AppEvent::disconnected(subscription_id));
            return;
        }
        for event in state.buffers.remove(subscription_id).unwrap_or_default() {
            let _ = tx.send(event);
        }
        state.callbacks.insert(subscription_id.to_string(), tx);
    }

    /// Removes a subscription's callback and discards its buffer.
    pub fn unregister_callback(&self, subscription_id: &str) {
        let mut state = self.lock();
        state.callbacks.remove(subscription_id);
        state.buffers.remove(subscription_id);
    }

    /// Stops routing: each callback gets one `__disconnected__`, pending waiters are woken with
    /// the disconnect (their channel closes), buffers are discarded. Idempotent.
    pub fn stop(&self) {
        let mut state = self.lock();
        if state.stopped {
            return;
        }
        state.stopped = true;
        for (id, callback) in state.callbacks.drain() {
            let _ = callback.send(AppEvent::disconnected(&id));
        }
        state.pending.clear();
        state.buffers.clear();
    }

    pub fn is_stopped(&self) -> bool {
        self.lock().stopped
    }

    pub fn stats(&self) -> DemuxStats {
        let state = self.lock();
        DemuxStats {
            dropped_events: state.dropped_events,
            buffered_subscriptions: state.buffers.len(),
            pending_requests: state.pending.len(),
            subscriptions: state.callbacks.len(),
        }
    }
}

impl AppEvent {
    /// A client-local disconnect event carrying only the subscription id and the event type.
    pub fn disconnected(subscription_id: &str) -> Self {
        AppEvent {
            subscription_id: subscription_id.to_string(),
            event_type: EVENT_TYPE_DISCONNECTED.to_string(),
            ..AppEvent::default()
        }
    }

    /// The event of a push: its JSON body, the subscription id falling back to the header.
    pub fn from_push(message: &ResponseMessage) -> Option<Self> {
        let body: serde_json::Value = serde_json::from_slice(&message.body).unwrap_or_default();
        let text = |key: &str| body.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let subscription_id = text("subscription_id")
            .filter(|s| !s.is_empty())
            .or_else(|| message.header("X-Subscription-Id").map(str::to_string))?;
        Some(AppEvent {
            subscription_id,
            event_type: text("event_type")
                .or_else(|| message.header("X-Event-Type").map(str::to_string))
                .unwrap_or_default(),
            app_name: text("app_name")
                .or_else(|| message.header("X-App-Name").map(str::to_string))
                .unwrap_or_default(),
            timestamp: body.get("timestamp").and_then(|v| v.as_i64()).unwrap_or(0),
            sequence: body.get("sequence").and_then(|v| v.as_u64()).unwrap_or(0),
            data: body.get("data").cloned().unwrap_or(serde_json::Value::Null),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Receiver};
    use std::time::Duration;

    fn push(id: Option<&str>, sequence: u64, body: Option<&[u8]>) -> ResponseMessage {
        let json = serde_json::json!({ "subscription_id": id, "event_type": "STDOUT", "sequence": sequence });
        ResponseMessage {
            uuid: "u".into(),
            request_uri: EVENT_REQUEST_URI.into(),
            http_status: 200,
            body: body
                .map(<[u8]>::to_vec)
                .unwrap_or_else(|| serde_json::to_vec(&json).unwrap()),
            ..ResponseMessage::default()
        }
    }

    fn collect(demux: &Demux, id: &str) -> Receiver<AppEvent> {
        let (tx, rx) = channel();
        let tx = Mutex::new(tx);
        demux.register_callback(id, Arc::new(move |e| tx.lock().unwrap().send(e).unwrap()));
        rx
    }

    fn sequences(rx: &Receiver<AppEvent>, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).expect("an event").sequence)
            .collect()
    }

    #[test]
    fn buffers_within_the_caps_and_flushes_in_order_at_registration() {
        let demux = Demux::new();
        for sequence in 1..=1100 {
            for id in 0..70 {
                demux.route(push(Some(&format!("flood-{id}")), sequence, None));
            }
        }
        let stats = demux.stats();
        assert_eq!(stats.buffered_subscriptions, MAX_BUFFERED_SUBSCRIPTIONS);
        assert_eq!(stats.dropped_events, 6 * 1100 + 64 * 100);
        let rx = collect(&demux, "flood-0");
        assert_eq!(sequences(&rx, 1000), (101..=1100).collect::<Vec<_>>());
        demux.route(push(Some("flood-0"), 1101, None));
        assert_eq!(sequences(&rx, 1), vec![1101]);
        demux.unregister_callback("flood-1");
        assert_eq!(demux.stats().buffered_subscriptions, 62);
        demux.stop();
        assert_eq!(demux.stats().buffered_subscriptions, 0);
    }

    #[test]
    fn hostile_pushes_are_dropped_or_routed_by_the_header() {
        let demux = Demux::new();
        // No subscription id anywhere, a body that is not JSON, an empty id: nothing buffered.
        demux.route(push(None, 1, None));
        demux.route(push(None, 1, Some(b"\xff\x00 not json")));
        demux.route(push(Some(""), 1, None));
        assert_eq!(demux.stats().buffered_subscriptions, 0);
        // The header names the subscription when the body does not.
        let mut message = push(None, 7, Some(b"{}"));
        message.headers = vec![("x-subscription-id".into(), "s".into())];
        demux.route(message);
        let rx = collect(&demux, "s");
        let event = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!((event.subscription_id.as_str(), event.sequence), ("s", 0));
        // An answer for no pending request is ignored.
        demux.route(ResponseMessage {
            uuid: "nobody".into(),
            request_uri: "/svc/self".into(),
            ..Default::default()
        });
        assert_eq!(demux.stats().pending_requests, 0);
    }

    #[test]
    fn stop_wakes_waiters_and_tells_each_callback_once() {
        let demux = Demux::new();
        let waiter = demux.register_request("r1").unwrap();
        let rx = collect(&demux, "s1");
        demux.stop();
        demux.stop();
        assert!(
            waiter.blocking_recv().is_err(),
            "the waiter is woken with the disconnect"
        );
        let event = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(event, AppEvent::disconnected("s1"));
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "exactly one __disconnected__"
        );
        assert!(matches!(
            demux.register_request("r2"),
            Err(SvcError::TransportDisconnected)
        ));
    }

    #[test]
    fn answers_reach_their_own_waiter() {
        let demux = Demux::new();
        let a = demux.register_request("a").unwrap();
        let b = demux.register_request("b").unwrap();
        demux.route(ResponseMessage {
            uuid: "b".into(),
            request_uri: "/x".into(),
            http_status: 201,
            ..Default::default()
        });
        demux.route(ResponseMessage {
            uuid: "a".into(),
            request_uri: "/x".into(),
            http_status: 200,
            ..Default::default()
        });
        assert_eq!(a.blocking_recv().unwrap().http_status, 200);
        assert_eq!(b.blocking_recv().unwrap().http_status, 201);
    }
}
