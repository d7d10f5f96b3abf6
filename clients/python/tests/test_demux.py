"""The demultiplexer against an in-memory transport (pure routing logic; real sockets elsewhere)."""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any

import pytest
from conftest import eventually

from svc.demux import EVENT_TYPE_DISCONNECTED, MAX_BUFFERED_EVENTS, MAX_BUFFERED_SUBSCRIPTIONS, AppEvent, Demux
from svc.errors import SvcConnectionError
from svc.messages import RequestMessage, ResponseMessage
from svc.transports import Transport


class FakeTransport(Transport):
    """Bodies the test pushes are what ``receive`` returns; ``sent`` records what was sent."""

    name = "fake"

    def __init__(self, on_send: Any = None) -> None:
        super().__init__(receive_timeout=0.05)
        self.inbox: queue.Queue[bytes | None] = queue.Queue()
        self.sent: list[RequestMessage] = []
        self.on_send = on_send
        self.closed = False

    def connect(self, bearer: str | None) -> None:
        del bearer

    @property
    def connected(self) -> bool:
        return not self.closed

    def _send(self, body: bytes) -> None:
        if self.closed:
            raise SvcConnectionError("closed")
        message = RequestMessage.decode(body)
        self.sent.append(message)
        if self.on_send is not None:
            self.on_send(message)

    def receive(self) -> bytes | None:
        if self.closed:
            raise SvcConnectionError("closed")
        try:
            body = self.inbox.get(timeout=self.receive_timeout)
        except queue.Empty:
            return None  # idle receive timeout: never fails a request
        if body is None:
            self.closed = True
            raise SvcConnectionError("reset by the test")
        return body

    def close(self) -> None:
        self.closed = True
        self.inbox.put(b"")


def answer(uuid: str, status: int = 200, body: Any = None) -> bytes:
    payload = json.dumps(body if body is not None else {"ok": uuid}).encode()
    return ResponseMessage(uuid, "/svc/x", status, "application/json", {}, payload).encode()


def push(subscription_id: str, sequence: int, event_type: str = "STDOUT", in_body: bool = True) -> bytes:
    body: dict[str, Any] = {"event_type": event_type, "app_name": "a", "sequence": sequence, "data": {}}
    if in_body:
        body["subscription_id"] = subscription_id
    headers = {"X-Subscription-Id": subscription_id, "X-Event-Type": event_type, "X-App-Name": "a"}
    return ResponseMessage(
        f"evt-{sequence}", "/svc/event", 200, "application/json", headers, json.dumps(body).encode()
    ).encode()


def request(demux: Demux, uuid: str) -> ResponseMessage:
    return demux.request(uuid, RequestMessage(uuid, "/svc/self", "GET").encode())


def test_uuid_is_registered_before_the_bytes_are_written() -> None:
    seen: list[int] = []

    def on_send(message: RequestMessage) -> None:
        seen.append(demux.stats().pending_requests)
        transport.inbox.put(answer(message.uuid))  # the answer arrives "instantly" (S7)

    transport = FakeTransport(on_send)
    demux = Demux(transport)
    demux.start()
    assert json.loads(request(demux, "r1").body) == {"ok": "r1"}
    assert seen == [1]
    assert demux.stats().pending_requests == 0
    demux.stop()


def test_a_request_has_no_wait_cap_and_survives_idle_receive_timeouts() -> None:
    transport = FakeTransport()
    demux = Demux(transport)
    demux.start()
    result: list[ResponseMessage] = []
    thread = threading.Thread(target=lambda: result.append(request(demux, "slow")))
    thread.start()
    time.sleep(0.5)  # ten idle receive timeouts of the fake transport pass: the request must stay pending
    assert result == []
    assert demux.stats().pending_requests == 1
    transport.inbox.put(answer("slow"))
    thread.join(5)
    assert result and result[0].uuid == "slow"
    demux.stop()


def test_disconnect_wakes_waiters_and_tells_every_callback_once() -> None:
    transport = FakeTransport()
    demux = Demux(transport)
    demux.start()
    events: dict[str, list[AppEvent]] = {"s1": [], "s2": []}
    demux.register("s1", events["s1"].append)
    demux.register("s2", events["s2"].append)
    failures: list[BaseException] = []

    def waiting() -> None:
        try:
            request(demux, "pending")
        except SvcConnectionError as error:
            failures.append(error)

    thread = threading.Thread(target=waiting)
    thread.start()
    eventually(lambda: demux.stats().pending_requests == 1)
    transport.inbox.put(None)  # the server resets the connection
    thread.join(5)
    assert len(failures) == 1 and isinstance(failures[0], SvcConnectionError)
    eventually(lambda: all(len(v) == 1 for v in events.values()))
    for sid, received in events.items():
        assert [(e.subscription_id, e.event_type) for e in received] == [(sid, EVENT_TYPE_DISCONNECTED)]
    with pytest.raises(SvcConnectionError):
        request(demux, "later")  # later requests fail at once
    time.sleep(0.1)
    assert all(len(v) == 1 for v in events.values())  # exactly one each


def test_events_before_registration_are_buffered_and_flushed_in_order() -> None:
    transport = FakeTransport()
    demux = Demux(transport)
    demux.start()
    for sequence in (1, 2, 3):
        transport.inbox.put(push("s4", sequence))
    transport.inbox.put(answer("sub"))  # the answer comes after the pushes (S4 scripted)
    request(demux, "sub")
    got: list[int] = []
    demux.register("s4", lambda e: got.append(e.sequence))
    transport.inbox.put(push("s4", 4, in_body=False))  # id from X-Subscription-Id only
    eventually(lambda: len(got) == 4)
    assert got == [1, 2, 3, 4]
    assert demux.stats().buffered_subscriptions == 0
    demux.stop()


def test_flood_for_unregistered_subscriptions_is_bounded() -> None:
    transport = FakeTransport()
    demux = Demux(transport)
    demux.start()
    ids, per_id = 70, 1100
    for sequence in range(1, per_id + 1):
        for i in range(ids):
            transport.inbox.put(push(f"flood-{i}", sequence))
    transport.inbox.put(answer("after"))
    request(demux, "after")  # its answer arrives after every push
    stats = demux.stats()
    assert stats.buffered_subscriptions == MAX_BUFFERED_SUBSCRIPTIONS == 64
    assert stats.buffered_events == 64 * MAX_BUFFERED_EVENTS
    assert stats.dropped_events == 6 * 1100 + 64 * 100
    got: list[int] = []
    demux.register("flood-0", lambda e: got.append(e.sequence))
    eventually(lambda: len(got) == 1000)
    assert got == list(range(101, 1101))  # oldest dropped, rest in order
    demux.unregister("flood-1")
    assert demux.stats().buffered_subscriptions == 62
    demux.stop()
    assert demux.stats().buffered_subscriptions == 0


def test_a_slow_callback_blocks_neither_the_reader_nor_other_subscriptions() -> None:
    transport = FakeTransport()
    demux = Demux(transport)
    demux.start()
    release = threading.Event()
    slow: list[int] = []
    fast: list[int] = []

    def slow_callback(event: AppEvent) -> None:
        release.wait(10)
        slow.append(event.sequence)

    demux.register("slow", slow_callback)
    demux.register("fast", lambda e: fast.append(e.sequence))
    for sequence in (1, 2, 3):
        transport.inbox.put(push("slow", sequence))
        transport.inbox.put(push("fast", sequence))
    transport.inbox.put(answer("meanwhile"))
    assert request(demux, "meanwhile").uuid == "meanwhile"  # answers are not held up
    eventually(lambda: fast == [1, 2, 3])
    assert slow == []
    release.set()
    eventually(lambda: slow == [1, 2, 3])  # serial and in order
    demux.stop()


def test_undecodable_and_unmatched_messages_are_dropped() -> None:
    transport = FakeTransport()
    demux = Demux(transport)
    demux.start()
    transport.inbox.put(b"\xc1")  # not msgpack
    transport.inbox.put(answer("nobody-waits"))
    transport.inbox.put(ResponseMessage("e", "/svc/event", 200, "", {}, b"not json").encode())
    transport.inbox.put(answer("r"))
    assert request(demux, "r").uuid == "r"
    assert demux.running
    demux.stop()
