"""Typed errors: every code of spec/errors.json maps to an exception, and the reachable ones are
raised as that exception by a real svcd on every transport."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Served, make_client, unique

import svc
from svc.client_http import SvcClient
from svc.errors import ERROR_CLASSES, STATUS_CLASSES, SvcRequestError, error_from_response

CODES: dict[str, dict[str, Any]] = json.loads((__import__("conftest").SPEC / "errors.json").read_text())


def test_every_code_has_its_exception() -> None:
    assert set(ERROR_CLASSES) == set(CODES)
    for code, entry in CODES.items():
        cls = ERROR_CLASSES[code]
        assert issubclass(cls, STATUS_CLASSES[entry["status"]]), code
        error = error_from_response(entry["status"], json.dumps({"error": code, "message": "m"}).encode())
        assert type(error) is cls
        assert error.code == code
        assert error.status_code == entry["status"]
        assert error.detail == "m"


def test_the_spec_names() -> None:
    assert issubclass(svc.SvcAppRemovedError, svc.SvcError)
    assert issubclass(svc.SvcConnectionError, svc.SvcError)
    assert issubclass(svc.SvcProcessSupersededError, SvcRequestError)
    assert issubclass(svc.SvcWorkerRejectedError, SvcRequestError)
    assert issubclass(svc.SvcUnauthorizedError, svc.SvcAuthError)
    assert issubclass(svc.SvcForbiddenError, svc.SvcAuthError)
    assert not issubclass(svc.SvcTimeoutError, SvcRequestError)


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[1,2]", b'{"error": 5, "message": []}', b"\xff\xfe", b'{"error": "x' + b"y" * 70000 + b'"}'],
)
def test_hostile_error_bodies_fall_back_to_the_status(body: bytes) -> None:
    error = error_from_response(404, body)
    assert type(error) is svc.errors.SvcNotFoundError
    assert len(str(error)) < 300


def test_a_code_with_the_wrong_status_is_not_trusted() -> None:
    error = error_from_response(500, b'{"error": "app_not_found", "message": "?"}')
    assert type(error) is svc.errors.SvcInternalError
    assert type(error_from_response(418, b"{}")) is SvcRequestError
    assert type(error_from_response(403, b"{}")) is svc.SvcForbiddenError


def _slow_task(client: SvcClient, name: str) -> Callable[[], Any]:
    def call() -> Any:
        return client.run_task(name, "payload", timeout=1)

    return call


CASES: list[tuple[str, Callable[[Served, str], Callable[[], Any]]]] = [
    ("app_not_found", lambda s, t: lambda: make_client(s, t).get_app("py-no-such-app")),
    ("route_not_found", lambda s, t: lambda: make_client(s, t).request("GET", "/svc/no/such/route")),
    ("method_not_allowed", lambda s, t: lambda: make_client(s, t).request("PUT", "/svc/applications")),
    ("unauthorized", lambda s, t: lambda: make_client(s, t, identity="").list_apps()),
    ("forbidden", lambda s, t: lambda: make_client(s, t, identity="svc-viewer").add_app(
        svc.App({"name": unique("denied", t), "command": "true"}))),
    ("invalid_app", lambda s, t: lambda: make_client(s, t).request(
        "PUT", f"/svc/app/{unique('bad', t)}", body={"command": 5})),
    ("invalid_json", lambda s, t: lambda: make_client(s, t).request(
        "PUT", f"/svc/app/{unique('bad', t)}", body="{not json", headers={"Content-Type": "application/json"})),
    ("invalid_name", lambda s, t: lambda: make_client(s, t).get_app("bad name!")),
    ("invalid_query", lambda s, t: lambda: make_client(s, t).run_app_async("true", max_time="soon")),
    ("invalid_target_host", lambda s, t: lambda: _forwarded(make_client(s, t), "bad host!").list_apps()),
    ("target_not_allowed", lambda s, t: lambda: _forwarded(make_client(s, t), "198.51.100.9:6059").list_apps()),
]  # fmt: skip


def _forwarded(client: SvcClient, target: str) -> SvcClient:
    client.forward_to = target
    return client


@pytest.mark.parametrize(("code", "make"), CASES, ids=[c for c, _ in CASES])
def test_reachable_codes(
    served: Served, transport: str, code: str, make: Callable[[Served, str], Callable[[], Any]]
) -> None:
    with pytest.raises(SvcRequestError) as caught:
        make(served, transport)()
    assert caught.value.code == code, caught.value
    assert isinstance(caught.value, ERROR_CLASSES[code])
    assert served["tokens"]["svc-admin"] not in str(caught.value)  # no bearer in error text


def test_invalid_token(served: Served, transport: str) -> None:
    client = make_client(served, transport, identity="")
    client.set_bearer_token("not.a.jwt")
    with pytest.raises(svc.SvcUnauthorizedError) as caught:
        client.list_apps()
    # WSS refuses the upgrade itself: an HTTP 401 without an error body.
    assert caught.value.code == ("unauthorized" if transport == "wss" else "invalid_token")
    assert "not.a.jwt" not in str(caught.value)


def test_task_timeout_and_cancellation(served: Served, transport: str) -> None:
    client = make_client(served, transport)
    name = unique("notask", transport)
    client.add_app(svc.App({"name": name, "command": "sleep 300", "shell": True}))
    try:
        with pytest.raises(svc.errors.SvcRequestTimeoutError) as caught:
            client.run_task(name, "nobody fetches this", timeout=1)
        assert caught.value.code == "timeout"
        failures: list[BaseException] = []

        def pending() -> None:
            try:
                make_client(served, transport).run_task(name, "to be cancelled", timeout=60)
            except BaseException as error:
                failures.append(error)

        thread = threading.Thread(target=pending)
        thread.start()
        from conftest import eventually

        eventually(lambda: client.cancel_task(name), what="a pending task to cancel")
        thread.join(30)
        assert len(failures) == 1
        assert isinstance(failures[0], svc.errors.SvcTaskCancelledError), failures[0]
    finally:
        client.delete_app(name)
