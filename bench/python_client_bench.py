"""The Python half of bench/python-client.ts: the svc Python client (clients/python) against a svcd.

argv: <serve-line.json> <printer-command-json> <sequential> <seconds> <in-flight> <lines>
Prints one JSON object: per transport the sequential GET /svc/self latencies (ms) and requests/s
with <in-flight> requests outstanding; then the STDOUT event latency (printed → callback, ms) of
<lines> stamped lines over TCP and WSS.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients/python/src"))

import svc  # noqa: E402


def client(info: dict[str, Any], transport: str) -> svc.SvcClient:
    token = info["tokens"]["svc-admin"]
    if transport == "rest":
        return svc.SvcClient(info["rest"], ssl_verify=info["ca"], bearer_token=token)
    if transport == "tcp":
        return svc.SvcClientTCP(("127.0.0.1", info["ports"]["tcp"]), ssl_verify=info["ca"], bearer_token=token)
    return svc.SvcClientWSS(("127.0.0.1", info["ports"]["rest"]), ssl_verify=info["ca"], bearer_token=token)


def sequential(info: dict[str, Any], transport: str, count: int) -> list[float]:
    c = client(info, transport)
    for _ in range(20):
        c.request("GET", "/svc/self")
    times = []
    for _ in range(count):
        started = time.perf_counter()
        c.request("GET", "/svc/self")
        times.append((time.perf_counter() - started) * 1000)
    c.close()
    return times


def throughput(info: dict[str, Any], transport: str, seconds: float, in_flight: int) -> float:
    # REST: one keep-alive connection per worker thread; TCP/WSS: every request on one connection.
    shared = None if transport == "rest" else client(info, transport)
    done = [0] * in_flight
    stop = time.monotonic() + seconds

    def loop(i: int) -> None:
        c = shared or client(info, transport)
        while time.monotonic() < stop:
            c.request("GET", "/svc/self")
            done[i] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    if shared is not None:
        shared.close()
    return sum(done) / elapsed


def event_latency(info: dict[str, Any], transport: str, printer: list[str], lines: int) -> list[float]:
    c = client(info, transport)
    name = f"py-bench-printer-{transport}"
    latencies: list[float] = []
    finished = threading.Event()
    buffer = [""]

    def on_event(event: svc.AppEvent) -> None:
        received = time.monotonic_ns()  # CLOCK_MONOTONIC, the printer's clock
        if event.event_type != "STDOUT":
            return
        buffer[0] += str(event.data.get("output", ""))
        *complete, buffer[0] = buffer[0].split("\n")
        for line in complete:
            if line.startswith("L "):
                latencies.append((received - int(line.split()[2])) / 1e6)
            elif line == "END":
                finished.set()

    c.delete_app(name)
    app = svc.App({"name": name, "command": " ".join(printer), "behavior": {"exit": "standby"}})
    c.add_app(app, subscribe_events=["STDOUT"], callback=on_event)  # type: ignore[call-arg]
    finished.wait(120)
    c.delete_app(name)
    c.close()
    return latencies[20:]  # the first lines are warm-up


def main() -> None:
    info = json.loads(Path(sys.argv[1]).read_text())
    printer = json.loads(sys.argv[2])
    count, seconds, in_flight, lines = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    out: dict[str, Any] = {}
    for transport in ("rest", "tcp", "wss"):
        out[transport] = {
            "sequential_ms": sequential(info, transport, count),
            "requests_per_second": throughput(info, transport, seconds, in_flight),
        }
    for transport in ("tcp", "wss"):
        out[transport]["event_latency_ms"] = event_latency(info, transport, [*printer, str(lines), "2", "500"], lines)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
