"""The worker loop's decisions (pure: a scripted client and an injected clock)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

import svc
from svc.client_http import SvcClient, SvcResponse

ENV = {"SVC_PROCESS_KEY": "key-1", "SVC_APPLICATION_NAME": "w"}


class ScriptedClient(SvcClient):
    """Answers fetches from a script: an int status, bytes (200 with that body) or an exception."""

    def __init__(self, *script: int | bytes | BaseException) -> None:
        super().__init__("https://127.0.0.1:1", ssl_verify=False)
        self.script = list(script)
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    def _request(self, method: Any, path: str, **kwargs: Any) -> SvcResponse:
        headers: Mapping[str, str] = kwargs.get("headers") or {}
        self.calls.append((method, path, dict(headers)))
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, bytes):
            return SvcResponse(200, {}, step)
        return SvcResponse(step, {}, b'{"error": "x", "message": "scripted"}')


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


def worker(client: SvcClient, clock: Clock | None = None, env: dict[str, str] = ENV) -> svc.SvcWorker:
    clock = clock or Clock()
    return svc.SvcWorker(client=client, env=env, sleep=clock.sleep, clock=clock)


def test_a_payload_is_returned_and_the_key_travels_only_in_the_header() -> None:
    client = ScriptedClient(204, b"payload")
    assert worker(client).fetch_task() == b"payload"
    for method, path, headers in client.calls:
        assert (method, path) == ("GET", "/svc/app/w/task")
        assert headers == {"X-Svc-Process-Key": "key-1"}
        assert "key-1" not in path


def test_failures_are_retried_after_a_fixed_100_ms_floor() -> None:
    clock = Clock()
    client = ScriptedClient(500, svc.SvcConnectionError("down"), 503, b"ok")
    assert worker(client, clock).fetch_task() == b"ok"
    assert clock.sleeps == [0.1, 0.1, 0.1]  # no backoff


def test_a_slow_failure_is_retried_at_once() -> None:
    clock = Clock()

    class Slow(ScriptedClient):
        def _request(self, method: Any, path: str, **kwargs: Any) -> SvcResponse:
            clock.now += 0.25
            return super()._request(method, path, **kwargs)

    assert worker(Slow(500, b"ok"), clock).fetch_task() == b"ok"
    assert clock.sleeps == []


def test_412_stops_at_once_with_process_superseded() -> None:
    client = ScriptedClient(412, b"never")
    with pytest.raises(svc.SvcProcessSupersededError):
        worker(client).fetch_task()
    assert len(client.calls) == 1


def test_400_stops_at_once_with_worker_rejected() -> None:
    client = ScriptedClient(400, b"never")
    with pytest.raises(svc.SvcWorkerRejectedError) as caught:
        worker(client).fetch_task()
    assert caught.value.status_code == 400
    assert len(client.calls) == 1


def test_max_retries_caps_the_attempts() -> None:
    client = ScriptedClient(500, 500, 500, b"late")
    with pytest.raises(svc.SvcError, match="max_retries=2"):
        worker(client).fetch_task(max_retries=2)
    assert len(client.calls) == 3


def test_cancellation_stops_the_loop() -> None:
    stop = threading.Event()
    stop.set()
    client = ScriptedClient(b"never")
    with pytest.raises(svc.SvcError, match="cancelled"):
        worker(client).fetch_task(stop_event=stop)
    assert client.calls == []


def test_cancellation_during_the_retry_pause() -> None:
    stop = threading.Event()

    class CancelOnFailure(ScriptedClient):
        def _request(self, method: Any, path: str, **kwargs: Any) -> SvcResponse:
            stop.set()
            return super()._request(method, path, **kwargs)

    with pytest.raises(svc.SvcError, match="cancelled"):
        svc.SvcWorker(client=CancelOnFailure(500, b"never"), env=ENV).fetch_task(stop_event=stop)


@pytest.mark.parametrize("missing", ["SVC_PROCESS_KEY", "SVC_APPLICATION_NAME"])
def test_a_missing_variable_is_an_immediate_error(missing: str) -> None:
    client = ScriptedClient(b"never")
    env = {k: v for k, v in ENV.items() if k != missing}
    with pytest.raises(svc.SvcError, match=missing):
        worker(client, env=env).fetch_task()
    with pytest.raises(svc.SvcError, match=missing):
        worker(client, env=env).send_task_result(b"x")
    assert client.calls == []


def test_send_task_result() -> None:
    client = ScriptedClient(200)
    worker(client).send_task_result("done")
    assert client.calls == [("PUT", "/svc/app/w/task", {"X-Svc-Process-Key": "key-1"})]
    with pytest.raises(svc.SvcProcessSupersededError):
        worker(ScriptedClient(412)).send_task_result("late")
