"""Fixtures: one real svcd per test session, started by the language-neutral test daemon command.

``SVC_TESTKIT_COMMAND`` is a JSON array (default ``npx svc-testkit serve --json``); the command prints
one JSON line (spec/testkit.md) and stops, killing everything it started, when its stdin closes.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import svc
from svc.client_http import SvcClient

REPO = Path(__file__).resolve().parents[3]
SPEC = REPO / "spec"
TRANSPORTS = ("https", "tcp", "wss")
PERSISTENT = ("tcp", "wss")

Served = dict[str, Any]


class ServedDaemon:
    """A running ``svc-testkit serve``; ``stop()`` closes its stdin (it then cleans up and exits)."""

    def __init__(self, extra_args: tuple[str, ...] = ()) -> None:
        default = '["npx", "svc-testkit", "serve", "--json"]'
        command = [*json.loads(os.environ.get("SVC_TESTKIT_COMMAND", default)), *extra_args]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(REPO))
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"svc-testkit serve printed nothing (exit {self.proc.wait(60)})")
        self.info: Served = json.loads(line)

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="session")
def served() -> Iterator[Served]:
    daemon = ServedDaemon()
    try:
        yield daemon.info
    finally:
        daemon.stop()


def make_client(info: Served, transport: str, identity: str = "svc-admin", **kwargs: Any) -> SvcClient:
    token = info["tokens"][identity] if identity else None
    if transport in ("https", "rest"):
        return svc.SvcClient(info["rest"], ssl_verify=info["ca"], bearer_token=token, **kwargs)
    if transport == "tcp":
        return svc.SvcClientTCP(
            ("127.0.0.1", info["ports"]["tcp"]), ssl_verify=info["ca"], bearer_token=token, **kwargs
        )
    if transport == "wss":
        return svc.SvcClientWSS(
            ("127.0.0.1", info["ports"]["rest"]), ssl_verify=info["ca"], bearer_token=token, **kwargs
        )
    raise ValueError(transport)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(served: Served, transport: str) -> Iterator[SvcClient]:
    c = make_client(served, transport)
    yield c
    c.close()


_counter = 0
_counter_lock = threading.Lock()


def unique(*parts: str) -> str:
    """A fresh app/label/role name for this test process."""
    global _counter
    with _counter_lock:
        _counter += 1
        return f"py-{'-'.join(parts)}-{os.getpid()}-{_counter}"


def eventually(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Wait until ``condition()`` holds (polled), failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def load_json(relative: str) -> Any:
    return json.loads((SPEC / relative).read_text())


# -- which operations the suite called -----------------------------------------------------------

#: (method, path) of every request any client of this process sent, on any transport.
SENT: list[tuple[str, str]] = []


@pytest.fixture(scope="session", autouse=True)
def record_operations() -> Iterator[None]:
    from svc.client_http import SvcClient as Rest
    from svc.client_persistent import PersistentClient as Persistent

    originals = {cls: cls._send for cls in (Rest, Persistent)}

    def recorder(original: Callable[..., Any]) -> Callable[..., Any]:
        def send(self: Any, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
            SENT.append((method, path))
            return original(self, method, path, *args, **kwargs)

        return send

    for cls, original in originals.items():
        cls._send = recorder(original)  # type: ignore[method-assign]
    yield
    for cls, original in originals.items():
        cls._send = original  # type: ignore[method-assign]
