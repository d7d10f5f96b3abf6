"""The demultiplexer of a persistent connection (TCP or WSS).

One background reader routes every incoming ``Response``:

    reader ──┬─ request_uri == "/svc/event" ─▶ subscription id (body, else X-Subscription-Id)
             │      ├─ callback registered ─▶ that subscription's serial queue ─▶ callback
             │      └─ not yet ─────────────▶ pre-registration buffer (64 ids × 1000 events)
             └─ otherwise ─▶ the waiter registered under the response's uuid (unknown: dropped)

Rules: a request's uuid is registered before its bytes are written; a request has no wait cap of
its own; when the reader stops (transport error or close) every waiter wakes with a disconnect
(``SvcConnectionError``, never a timeout) and every registered callback receives one client-local
``__disconnected__`` event. Callbacks of one subscription run serially in arrival order on a
thread of that subscription, so a slow callback delays only its own subscription, never the
reader, other subscriptions or request answers.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import SvcConnectionError
from .messages import MessageError, ResponseMessage
from .transports import Transport

__all__ = ["EVENT_TYPE_DISCONNECTED", "EVENT_URI", "AppEvent", "Demux", "DemuxStats", "EventCallback"]

logger = logging.getLogger(__name__)

EVENT_URI = "/svc/event"
EVENT_TYPE_DISCONNECTED = "__disconnected__"
MAX_BUFFERED_SUBSCRIPTIONS = 64
MAX_BUFFERED_EVENTS = 1000


@dataclass
class AppEvent:
    """A server push (or the client-local ``__disconnected__``)."""

    subscription_id: str = ""
    event_type: str = ""
    app_name: str = ""
    timestamp: int = 0
    sequence: int = 0
    data: dict[str, Any] = field(default_factory=dict)


EventCallback = Callable[[AppEvent], None]


@dataclass(frozen=True)
class DemuxStats:
    pending_requests: int
    buffered_subscriptions: int
    buffered_events: int
    dropped_events: int
    registered_subscriptions: int


class _SerialQueue:
    """Runs one subscription's callback on its events, one at a time, in order, off the reader."""

    def __init__(self, callback: EventCallback) -> None:
        self.callback = callback
        self._events: deque[AppEvent] = deque()
        self._running = False
        self._lock = threading.Lock()

    def put(self, event: AppEvent) -> None:
        with self._lock:
            self._events.append(event)
            if self._running:
                return
            self._running = True
        threading.Thread(target=self._drain, name="svc-event-callback", daemon=True).start()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._events:
                    self._running = False
                    return
                event = self._events.popleft()
            try:
                self.callback(event)
            except Exception:
                logger.exception("event callback raised (subscription %s)", event.subscription_id)


class Demux:
    def __init__(self, transport: Transport, on_stop: Callable[[], None] | None = None) -> None:
        self._transport = transport
        self._on_stop = on_stop
        self._lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self._queues: dict[str, _SerialQueue] = {}
        self._buffers: dict[str, deque[AppEvent]] = {}
        self._dropped = 0
        self._running = False
        self._stopped = False
        self._reader: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._running or self._stopped:
                return
            self._running = True
        self._reader = threading.Thread(target=self._read_loop, name="svc-demux-reader", daemon=True)
        self._reader.start()

    @property
    def running(self) -> bool:
        return self._running

    def stop(self) -> None:
        """Stop routing: wake every waiter with a disconnect, push ``__disconnected__`` to every
        callback, discard the pre-registration buffers. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._running = False
            waiters = list(self._waiters.values())
            self._waiters.clear()
            queues = list(self._queues.items())
            self._buffers.clear()
        self._transport.close()
        for waiter in waiters:
            waiter.wake(None)
        for subscription_id, queue in queues:
            queue.put(AppEvent(subscription_id=subscription_id, event_type=EVENT_TYPE_DISCONNECTED))
        if self._on_stop is not None:
            self._on_stop()

    def join(self, timeout: float = 5.0) -> None:
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout)

    # -- requests -------------------------------------------------------------------------------

    def request(self, uuid: str, body: bytes) -> ResponseMessage:
        """Send one encoded request and wait for its answer, without a time limit of its own."""
        waiter = _Waiter()
        with self._lock:
            if not self._running:
                raise SvcConnectionError(f"{self._transport.name} connection is closed")
            self._waiters[uuid] = waiter  # registered before a single byte is written
        try:
            self._transport.send(body)
        except SvcConnectionError:
            self.stop()
            raise
        response = waiter.wait()
        if response is None:
            raise SvcConnectionError(f"{self._transport.name} connection lost while waiting for the answer")
        return response

    # -- subscriptions --------------------------------------------------------------------------

    def register(self, subscription_id: str, callback: EventCallback) -> None:
        """Attach a callback; events buffered for this id are delivered first, in order."""
        with self._lock:
            queue = _SerialQueue(callback)
            self._queues[subscription_id] = queue
            buffered = self._buffers.pop(subscription_id, None)
            stopped = self._stopped
            # Enqueued under the lock, so they precede every later live event.
            for event in buffered or ():
                queue.put(event)
        if stopped:
            queue.put(AppEvent(subscription_id=subscription_id, event_type=EVENT_TYPE_DISCONNECTED))

    def unregister(self, subscription_id: str) -> None:
        with self._lock:
            self._queues.pop(subscription_id, None)
            self._buffers.pop(subscription_id, None)

    def stats(self) -> DemuxStats:
        with self._lock:
            return DemuxStats(
                pending_requests=len(self._waiters),
                buffered_subscriptions=len(self._buffers),
                buffered_events=sum(len(b) for b in self._buffers.values()),
                dropped_events=self._dropped,
                registered_subscriptions=len(self._queues),
            )

    # -- reader ---------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        try:
            while self._running:
                body = self._transport.receive()
                if not body:
                    continue  # idle receive timeout, or an empty frame: keep reading
                try:
                    response = ResponseMessage.decode(body)
                except MessageError as error:
                    logger.warning("dropping an undecodable message: %s", error)
                    continue
                if response.request_uri == EVENT_URI:
                    self._route_event(response)
                else:
                    self._route_answer(response)
        except SvcConnectionError as error:
            if self._running:
                logger.info("%s", error)
        except Exception:
            logger.exception("demultiplexer reader failed")
        finally:
            self.stop()

    def _route_answer(self, response: ResponseMessage) -> None:
        with self._lock:
            waiter = self._waiters.pop(response.uuid, None)
        if waiter is not None:
            waiter.wake(response)

    def _route_event(self, response: ResponseMessage) -> None:
        event = parse_event(response)
        if event is None:
            return
        with self._lock:
            queue = self._queues.get(event.subscription_id)
            if queue is not None:
                queue.put(event)
                return
            buffer = self._buffers.get(event.subscription_id)
            if buffer is None:
                if len(self._buffers) >= MAX_BUFFERED_SUBSCRIPTIONS:
                    self._dropped += 1
                    return
                buffer = self._buffers[event.subscription_id] = deque()
            if len(buffer) >= MAX_BUFFERED_EVENTS:
                buffer.popleft()
                self._dropped += 1
            buffer.append(event)


def parse_event(response: ResponseMessage) -> AppEvent | None:
    """The event of a push; the subscription id comes from the body, else X-Subscription-Id."""
    try:
        body = json.loads(response.body.decode("utf-8")) if response.body else {}
    except (UnicodeDecodeError, ValueError):
        logger.warning("dropping a push whose body is not JSON")
        return None
    if not isinstance(body, dict):
        body = {}
    headers = {k.lower(): v for k, v in response.headers.items()}
    subscription_id = body.get("subscription_id")
    if not isinstance(subscription_id, str) or not subscription_id:
        subscription_id = headers.get("x-subscription-id", "")
    if not subscription_id:
        return None
    data = body.get("data")
    return AppEvent(
        subscription_id=subscription_id,
        event_type=_str(body.get("event_type")) or headers.get("x-event-type", ""),
        app_name=_str(body.get("app_name")) or headers.get("x-app-name", ""),
        timestamp=_int(body.get("timestamp")),
        sequence=_int(body.get("sequence")),
        data=data if isinstance(data, dict) else {},
    )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _Waiter:
    def __init__(self) -> None:
        self._event = threading.Event()
        self._response: ResponseMessage | None = None

    def wake(self, response: ResponseMessage | None) -> None:
        self._response = response
        self._event.set()

    def wait(self) -> ResponseMessage | None:
        self._event.wait()
        return self._response
