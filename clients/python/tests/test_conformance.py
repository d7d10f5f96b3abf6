"""Conformance scenarios S1–S8, real-daemon half, run from spec/conformance/S<n>.json as data.

Each scenario runs on each of its transports. The steps' vocabulary is spec/README.md's. The
Python demultiplexer has no clock of its own (no request has a timer), so ``advance_clock`` is
played as what a clock advance would provoke: the connection's receive timeout is set far below the
duration of the step's request, so the reader times out many times while the request is pending.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import SPEC, Served, ServedDaemon, eventually, load_json, make_client

import svc
from svc.client_persistent import PersistentClient

SCENARIOS = [load_json(f"conformance/{p.name}") for p in sorted((SPEC / "conformance").glob("S*.json"))]
CASES = [(s, t) for s in SCENARIOS for t in s["transports"]]
RECORDED = {"deleteApplication": "delete_app", "unsubscribe": "unsubscribe", "getApplication": "get_app"}


@dataclass
class Outcome:
    """A run-wait's result: the exit code or None, or the error; ``finished_at`` (monotonic)."""

    done: threading.Event = field(default_factory=threading.Event)
    value: int | None = None
    error: BaseException | None = None
    finished_at: float = 0.0
    output: list[str] = field(default_factory=list)

    def settle(self, timeout: float = 90) -> Outcome:
        assert self.done.wait(timeout), "the run-wait did not finish"
        return self


@dataclass
class Failed:
    """A step's error in place of its result."""

    error: BaseException


class Runner:
    def __init__(self, info: Served, transport: str, daemon: ServedDaemon | None) -> None:
        self.info = info
        self.transport = transport
        self.daemon = daemon
        self.vars: dict[str, Any] = {"transport": transport, "admin_principal": info["principals"]["svc-admin"]}
        self.clients: dict[str, svc.SvcClient] = {}
        self.originals: dict[str, dict[str, Callable[..., Any]]] = {}
        self.calls: dict[str, dict[str, list[list[Any]]]] = {}
        self.killed_at = 0.0
        self.threads: list[threading.Thread] = []

    # -- substitution ---------------------------------------------------------------------------

    def sub(self, value: Any) -> Any:
        if isinstance(value, str):
            whole = re.fullmatch(r"\$\{([^}]+)\}", value)
            if whole:
                return self.lookup(whole.group(1))
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(self.lookup(m.group(1))), value)
        if isinstance(value, list):
            return [self.sub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.sub(v) for k, v in value.items()}
        return value

    def lookup(self, path: str) -> Any:
        head, *rest = path.split(".")
        value = self.vars[head]
        for part in rest:
            value = value[part] if isinstance(value, dict) else getattr(value, part)
        return value

    def client(self, name: str) -> svc.SvcClient:
        return self.clients[name]

    def original(self, client: str, method: str) -> Callable[..., Any]:
        return self.originals[client][method]

    # -- steps ----------------------------------------------------------------------------------

    def run(self, steps: list[dict[str, Any]]) -> None:
        try:
            for step in steps:
                self.step(step)
        finally:
            for thread in self.threads:
                thread.join(60)
            for c in self.clients.values():
                c.close()

    def step(self, step: dict[str, Any]) -> None:
        getattr(self, "do_" + step["do"])(step)

    def do_connect(self, step: dict[str, Any]) -> None:
        name = step["as"]
        client = make_client(self.info, step.get("transport", self.transport))
        self.calls[name] = {k: [] for k in RECORDED}
        self.originals[name] = {}
        for recorded, method in RECORDED.items():
            original = getattr(client, method)
            self.originals[name][method] = original

            def wrapper(*args: Any, _o: Callable[..., Any] = original, _r: str = recorded, **kw: Any) -> Any:
                self.calls[name][_r].append(list(args))
                return _o(*args, **kw)

            setattr(client, method, wrapper)
        self.clients[name] = client

    def do_register(self, step: dict[str, Any]) -> None:
        client = self.client(step["client"])
        name = self.sub(step["name"])
        events: list[svc.AppEvent] = []
        if step.get("events_as"):
            self.vars[step["events_as"]] = events
        app = svc.App({"name": name, **self.sub(step["app"])})
        if step.get("subscribe"):
            assert isinstance(client, PersistentClient)
            result = client.add_app(app, subscribe_events=step["subscribe"], callback=events.append)
        else:
            result = client.add_app(app)
        if step.get("as"):
            self.vars[step["as"]] = result.raw()

    def do_run(self, step: dict[str, Any]) -> None:
        run = self.client(step["client"]).run_app_async(svc.App(self.sub(step["app"])), lifecycle=300)
        self.vars[step["as"]] = {"name": run.app_name, "process_uuid": run.process_uuid, "run": run}

    def do_wait_run(self, step: dict[str, Any]) -> None:
        client = self.client(step["client"])
        run = self.vars[step["run"]]["run"]
        outcome = Outcome()
        self.vars[step["as"]] = outcome
        if step.get("output_as"):
            self.vars[step["output_as"]] = outcome.output

        def wait() -> None:
            try:
                outcome.value = client.wait_for_async_run(
                    run, lambda text, _pos: outcome.output.append(text), step["timeout_ms"] / 1000
                )
            except BaseException as error:
                outcome.error = error
            finally:
                outcome.finished_at = time.monotonic()
                outcome.done.set()

        if step.get("background"):
            thread = threading.Thread(target=wait)
            thread.start()
            self.threads.append(thread)
        else:
            wait()

    def do_await_subscribed(self, step: dict[str, Any]) -> None:
        client = self.client(step["client"])
        assert isinstance(client, PersistentClient)

        def subscribed() -> bool:
            stats = client.demux_stats
            return stats is not None and stats.registered_subscriptions >= 1

        eventually(subscribed, what="the run-wait's subscription")

    def do_output(self, step: dict[str, Any]) -> None:
        chunk = self.client(step["client"]).get_app_output(
            self.sub(step["name"]), stdout_position=step["position"], timeout=step["timeout_seconds"]
        )
        result: dict[str, Any] = {"bytes": len(chunk.output.encode()), "status": chunk.status_code}
        if chunk.exit_code is not None:
            result["exit_code"] = chunk.exit_code
        self.vars[step["as"]] = result

    def do_advance_clock(self, step: dict[str, Any]) -> None:
        inner = step["while"]
        client = self.client(inner["client"])
        assert isinstance(client, PersistentClient)
        client.receive_timeout = 0.05  # 40 receive timeouts pass during a 2 s long poll
        client.reconnect()
        started = time.monotonic()
        self.step(inner)
        assert time.monotonic() - started > 1.0, "the inner request did not outlast the receive timeout"
        assert client.connected

    def do_request(self, step: dict[str, Any]) -> None:
        client = self.client(step["client"])
        count = step.get("count", 1)
        answers: list[Any] = [None] * count
        errors: list[BaseException] = []

        def one(i: int) -> None:
            try:
                path = self.sub(step["path"]).replace("${i}", str(i))
                answers[i] = client.request(step["method"], path, query=self.sub(step.get("query", {}))).json()
            except BaseException as error:
                errors.append(error)

        if step.get("sequential"):
            for i in range(count):
                one(i)
        else:
            threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
        assert not errors, errors[:3]
        if step.get("as"):
            self.vars[step["as"]] = answers

    def do_disable(self, step: dict[str, Any]) -> None:
        self.client(step["client"]).disable_app(self.sub(step["name"]))

    def do_delete_app(self, step: dict[str, Any]) -> None:
        self.original(step["client"], "delete_app")(self.sub(step["name"]))

    def do_unsubscribe(self, step: dict[str, Any]) -> None:
        self.original(step["client"], "unsubscribe")(self.sub(step["id"]))

    def do_get_app(self, step: dict[str, Any]) -> None:
        try:
            self.vars[step["as"]] = self.original(step["client"], "get_app")(self.sub(step["name"])).raw()
        except svc.SvcError as error:
            self.vars[step["as"]] = Failed(error)

    def do_await_event(self, step: dict[str, Any]) -> None:
        events: list[svc.AppEvent] = self.vars[step["events"]]
        eventually(lambda: any(e.event_type == step["event_type"] for e in events), what=step["event_type"])

    def do_kill_daemon(self, step: dict[str, Any]) -> None:
        del step
        assert self.daemon is not None, "kill_daemon needs a fresh daemon"
        os.kill(self.info["pid"], signal.SIGKILL)
        self.killed_at = time.monotonic()

    def do_await_closed(self, step: dict[str, Any]) -> None:
        client = self.client(step["client"])
        assert isinstance(client, PersistentClient)
        eventually(lambda: not client.connected, what="the transport to close")
        with pytest.raises(svc.SvcConnectionError):
            client.get_current_principal()  # later requests fail the same way, at once

    def do_close(self, step: dict[str, Any]) -> None:
        self.client(step["client"]).close()

    # -- expectations ---------------------------------------------------------------------------

    def value_of(self, path: str) -> Any:
        value = self.lookup(path) if "." in path or path in self.vars else self.vars[path]
        if isinstance(value, Outcome):
            value.settle()
            if value.error is not None:
                raise AssertionError(f"{path} failed: {value.error!r}")
            return value.value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return "".join(value)
        return value

    def do_expect(self, step: dict[str, Any]) -> None:
        if "calls" in step:
            client, method = step["calls"].split(".")
            calls = self.calls[client][method]
            if "count" in step:
                assert len(calls) == step["count"], f"{step['calls']}: {calls}"
            if "with" in step:
                assert self.sub(step["with"]) in calls, f"{step['calls']}: {calls}"
            return
        if "demux" in step:
            client = self.client(step["demux"])
            assert isinstance(client, PersistentClient)
            wanted = step["equals"]

            def matches() -> bool:
                stats = client.demux_stats
                return stats is not None and all(getattr(stats, k) == v for k, v in wanted.items())

            if step.get("eventually"):
                eventually(matches, what=f"demux {wanted} (now {client.demux_stats})")
            assert matches(), f"demux {client.demux_stats} != {wanted}"
            return
        path = step["of"]
        if "error" in step:
            self.expect_error(path, step)
        elif "until" in step:
            self.expect_events(self.vars[path], step)
        elif "equals" in step:
            assert self.value_of(path) == self.sub(step["equals"]), f"{path}: {self.value_of(path)!r}"
        elif "absent" in step:
            head, _, key = path.rpartition(".")
            assert key not in self.vars[head], f"{path} is present"
        elif "type" in step:
            assert step["type"] == "string" and isinstance(self.value_of(path), str) and self.value_of(path)
        elif "every" in step:
            wanted = self.sub(step["every"])
            items = self.value_of(path)
            assert items and all(all(item.get(k) == v for k, v in wanted.items()) for item in items)
        else:
            raise AssertionError(f"unknown expect {step}")

    def expect_error(self, path: str, step: dict[str, Any]) -> None:
        value = self.vars[path]
        if isinstance(value, Outcome):
            value.settle()
            error = value.error
            if "within_ms_of_kill" in step:
                took = (value.finished_at - self.killed_at) * 1000
                assert took < step["within_ms_of_kill"], f"unblocked {took:.0f} ms after the kill"
        else:
            assert isinstance(value, Failed), f"{path} did not fail: {value!r}"
            error = value.error
        kind = step["error"]
        if kind == "app_removed":
            assert isinstance(error, svc.SvcAppRemovedError), repr(error)
        elif kind == "transport_disconnected":
            assert isinstance(error, svc.SvcConnectionError), repr(error)
            assert not isinstance(error, svc.SvcTimeoutError), repr(error)
        else:
            assert isinstance(error, svc.SvcRequestError) and error.code == kind, repr(error)

    def expect_events(self, events: list[svc.AppEvent], step: dict[str, Any]) -> None:
        until = next(i for i, e in enumerate(events) if e.event_type == step["until"])
        seen = events[: until + 1]
        if step.get("sequences_gapless"):
            assert [e.sequence for e in seen] == list(range(seen[0].sequence, seen[0].sequence + len(seen)))
        if "first_type" in step:
            assert seen[0].event_type == step["first_type"]
        stdout = [e for e in seen if e.event_type == "STDOUT"]
        if "stdout_text" in step:
            assert "".join(str(e.data.get("output", "")) for e in stdout) == step["stdout_text"]
        if step.get("last_stdout_finished"):
            assert stdout and stdout[-1].data.get("finished") is True


@pytest.mark.parametrize(("scenario", "transport"), CASES, ids=[f"{s['id']}-{t}" for s, t in CASES])
def test_scenario(served: Served, scenario: dict[str, Any], transport: str) -> None:
    daemon = ServedDaemon() if scenario["daemon"].get("fresh") else None
    try:
        Runner(daemon.info if daemon else served, transport, daemon).run(scenario["daemon"]["steps"])
    finally:
        if daemon is not None:
            daemon.stop()


def test_every_scenario_is_run() -> None:
    assert [s["id"] for s in SCENARIOS] == [f"S{i}" for i in range(1, 9)]
    assert all(set(s["transports"]) <= {"tcp", "wss"} for s in SCENARIOS)
