"""Conformance scenarios, scripted-server half: each transcript of spec/conformance/S<n>.json played
by a TLS TCP server in this process against ``SvcClientTCP`` (real sockets, real framing).

The client has no clock of its own, so ``client_clock`` advances are played as time passing with a
receive timeout 20× shorter than the advance: the reader times out again and again while the
request stays pending.
"""

from __future__ import annotations

import functools
import json
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from conftest import SPEC, eventually, load_json

import svc
from svc.framing import FrameDecoder, encode_frame
from svc.messages import RequestMessage, ResponseMessage

SCENARIOS = [
    s
    for s in (load_json(f"conformance/{p.name}") for p in sorted((SPEC / "conformance").glob("S*.json")))
    if s.get("scripted", {}).get("transcript")
]
RECEIVE_TIMEOUT = 0.05


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    directory = tmp_path_factory.mktemp("scripted-tls")
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


class ScriptedServer:
    """One accepted TLS connection, driven step by step by the transcript."""

    def __init__(self, certificate: tuple[str, str]) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*certificate)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.context = context
        self.conn: ssl.SSLSocket | None = None
        self.decoder = FrameDecoder()
        self.ready: list[bytes] = []
        self.current: RequestMessage | None = None
        self.write_lock = threading.Lock()

    def accept(self) -> None:
        self.listener.settimeout(30)
        raw, _ = self.listener.accept()
        self.conn = self.context.wrap_socket(raw, server_side=True)
        self.conn.settimeout(30)

    def read_request(self) -> RequestMessage:
        assert self.conn is not None
        while not self.ready:
            data = self.conn.recv(65536)
            if not data:
                raise ConnectionError("client closed")
            self.ready.extend(self.decoder.feed(data))
        return RequestMessage.decode(self.ready.pop(0))

    def write(self, *bodies: bytes) -> None:
        assert self.conn is not None
        with self.write_lock:
            self.conn.sendall(b"".join(encode_frame(b) for b in bodies))

    @staticmethod
    def answer_body(request: RequestMessage, status: int, body: Any) -> bytes:
        if body == {"echo": "request_uri"}:
            body = {"name": request.request_uri}
        payload = json.dumps(body).encode()
        return ResponseMessage(request.uuid, request.request_uri, status, "application/json", {}, payload).encode()

    @staticmethod
    def push_body(subscription_id: str, sequence: int, event_type: str = "STDOUT", data: Any = None) -> bytes:
        event = {
            "subscription_id": subscription_id,
            "event_type": event_type,
            "app_name": "a",
            "timestamp": 0,
            "sequence": sequence,
            "data": data or {},
        }
        headers = {"X-Subscription-Id": subscription_id, "X-Event-Type": event_type, "X-App-Name": "a"}
        return ResponseMessage(
            str(uuid.uuid4()), "/svc/event", 200, "application/json", headers, json.dumps(event).encode()
        ).encode()

    def answer_everything(self, status: int, body: Any) -> None:
        def loop() -> None:
            try:
                while True:
                    request = self.read_request()
                    self.write(self.answer_body(request, status, body))
            except (OSError, ValueError):
                return

        threading.Thread(target=loop, daemon=True).start()

    def reset(self) -> None:
        assert self.conn is not None
        self.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.conn.close()

    def close(self) -> None:
        for s in (self.conn, self.listener):
            if s is not None:
                s.close()


def _get_json(client: svc.SvcClient, method: Any, path: str) -> Any:
    return client.request(method, path).json()


def background(call: Any) -> Future[Any]:
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as error:
            future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return future


@pytest.fixture
def server(certificate: tuple[str, str]) -> Iterator[ScriptedServer]:
    s = ScriptedServer(certificate)
    yield s
    s.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_transcript(scenario: dict[str, Any], server: ScriptedServer, certificate: tuple[str, str]) -> None:
    client = svc.SvcClientTCP(
        ("127.0.0.1", server.port),
        ssl_verify=certificate[0],
        bearer_token="test-token",  # noqa: S106 - the transcript's bearer
        receive_timeout=RECEIVE_TIMEOUT,
    )
    accepting = threading.Thread(target=server.accept)
    accepting.start()
    client._ensure_connected()  # the reader owns the socket from the start (pushes may come first)
    accepting.join(30)
    results: dict[str, Any] = {}
    try:
        for entry in scenario["scripted"]["transcript"]:
            if entry.get("client") == "request":
                count = entry.get("count", 1)
                method = entry["method"]
                paths = [entry["path"].replace("${i}", str(i)) for i in range(count)]
                futures = [background(functools.partial(_get_json, client, method, path)) for path in paths]
                results[entry["as"]] = futures if count > 1 else futures[0]
            elif entry.get("client") == "subscribe":
                events: list[svc.AppEvent] = []
                results[entry["events_as"]] = events
                results["subscribe"] = background(
                    lambda e=entry, ev=events: client.subscribe(e["app"], e["events"], callback=ev.append)
                )
            elif entry.get("client") == "await":
                target = results[entry["of"]]
                for future in target if isinstance(target, list) else [target]:
                    future.result(timeout=60)
            elif entry.get("server") == "expect":
                request = server.read_request()
                server.current = request
                assert (request.http_method, request.request_uri) == (entry["method"], entry["path"])
                lowered = {k.lower(): v for k, v in request.headers.items()}
                for name, value in entry.get("headers", {}).items():
                    assert lowered.get(name.lower()) == value
            elif entry.get("server") == "answer":
                assert server.current is not None
                server.write(server.answer_body(server.current, entry["status"], entry["body"]))
            elif entry.get("server") == "answer_every_request":
                server.answer_everything(entry["status"], entry["body"])
            elif entry.get("server") == "push":
                server.write(
                    server.push_body(entry["subscription_id"], entry["sequence"], entry.get("event_type", "STDOUT"))
                )
            elif entry.get("server") == "burst":
                frames = []
                for frame in entry["frames"]:
                    if "push" in frame:
                        frames.append(server.push_body(frame["push"]["subscription_id"], frame["push"]["sequence"]))
                    else:
                        assert server.current is not None
                        frames.append(
                            server.answer_body(server.current, frame["answer"]["status"], frame["answer"]["body"])
                        )
                server.write(*frames)
            elif entry.get("server") == "flood":
                ids, seqs = entry["ids"], entry["sequences"]
                server.write(
                    *(
                        server.push_body(f"{ids['prefix']}{i}", sequence)
                        for sequence in range(seqs["from"], seqs["to"] + 1)
                        for i in range(ids["count"])
                    )
                )
            elif entry.get("server") == "reset":
                server.reset()
            elif "client_clock" in entry:
                assert entry["client_clock"]["advance_ms"] >= 60_000  # far past any receive timeout
                time.sleep(20 * RECEIVE_TIMEOUT)  # the reader times out 20 times meanwhile
            elif "expect" in entry:
                check(entry["expect"], results, client)
            else:
                raise AssertionError(f"unknown transcript entry {entry}")
    finally:
        client.close()


def check(expect: dict[str, Any], results: dict[str, Any], client: svc.SvcClientTCP) -> None:
    if "demux" in expect:
        stats = client.demux_stats
        assert stats is not None
        assert getattr(stats, expect["demux"]) == expect["equals"], stats
        return
    target = results[expect["of"]]
    if "pending" in expect:
        assert not target.done(), "the request should still be pending"
        assert client.connected
    elif "error" in expect:
        assert expect["error"] == "transport_disconnected"
        with pytest.raises(svc.SvcConnectionError) as caught:
            target.result(timeout=10)
        assert not isinstance(caught.value, svc.SvcTimeoutError)
    elif "sequences" in expect:
        wanted = expect["sequences"]
        if expect.get("eventually"):
            eventually(lambda: [e.sequence for e in target] == wanted, what=f"sequences {wanted}")
        else:
            eventually(lambda: len(target) >= len(wanted), timeout=5, what="buffered events")
        assert [e.sequence for e in target] == wanted
    elif "count" in expect:
        answers = [f.result(timeout=60) for f in target]
        assert len(answers) == expect["count"]
        assert [a["name"] for a in answers] == [f"/svc/app/app-{i}" for i in range(expect["count"])]
        assert client.demux_stats is not None
    elif "equals" in expect:
        wanted = expect["equals"]
        if isinstance(target, list):  # collected events
            eventually(lambda: len(target) >= len(wanted), what="events")
            got = [{k: getattr(e, k) for k in w} for e, w in zip(target, wanted, strict=False)]
            assert got == wanted
            time.sleep(0.2)
            assert len(target) == len(wanted)  # exactly once
        else:
            answer = target.result(timeout=10)
            assert {k: answer.get(k) for k in wanted} == wanted
    else:
        raise AssertionError(f"unknown expect {expect}")


def test_every_transcript_is_run() -> None:
    assert [s["id"] for s in SCENARIOS] == ["S1", "S2", "S4", "S5", "S7"]
    assert Path(SPEC / "conformance").is_dir()


@pytest.mark.parametrize("announced", [1024 * 1024 * 1024 + 1, 0xFFFFFFFF])
def test_a_frame_above_the_receive_bound_is_a_disconnect(
    server: ScriptedServer, certificate: tuple[str, str], announced: int
) -> None:
    client = svc.SvcClientTCP(("127.0.0.1", server.port), ssl_verify=certificate[0], bearer_token="t")  # noqa: S106
    accepting = threading.Thread(target=server.accept)
    accepting.start()
    client._ensure_connected()
    accepting.join(30)
    pending = background(lambda: client.request("GET", "/svc/self"))
    server.read_request()
    assert server.conn is not None
    server.conn.sendall(b"\x07\xc7\x07\xf8" + announced.to_bytes(4, "big"))  # a header only
    with pytest.raises(svc.SvcConnectionError):
        pending.result(timeout=10)
    eventually(lambda: not client.connected, what="the connection to close")
    client.close()


@pytest.mark.parametrize("garbage", [b"GET / HTTP/1.1\r\n\r\n", b"\xde\xad\xbe\xef\x00\x00\x00\x01\x00"])
def test_a_bad_magic_is_a_disconnect(server: ScriptedServer, certificate: tuple[str, str], garbage: bytes) -> None:
    client = svc.SvcClientTCP(("127.0.0.1", server.port), ssl_verify=certificate[0], bearer_token="t")  # noqa: S106
    accepting = threading.Thread(target=server.accept)
    accepting.start()
    client._ensure_connected()
    accepting.join(30)
    pending = background(lambda: client.request("GET", "/svc/self"))
    server.read_request()
    assert server.conn is not None
    server.conn.sendall(garbage)
    with pytest.raises(svc.SvcConnectionError):
        pending.result(timeout=10)
    client.close()


def test_forwarding_sends_the_target_and_the_bearer_in_each_request(
    server: ScriptedServer, certificate: tuple[str, str]
) -> None:
    client = svc.SvcClientTCP(("127.0.0.1", server.port), ssl_verify=certificate[0], bearer_token="tok")  # noqa: S106
    accepting = threading.Thread(target=server.accept)
    accepting.start()
    client._ensure_connected()
    accepting.join(30)
    client.forward_to = "node-b:6059"
    for _ in range(2):
        pending = background(lambda: client.request("GET", "/svc/applications"))
        request = server.read_request()
        assert request.headers["X-Target-Host"] == "node-b:6059"
        assert request.headers["Authorization"] == "Bearer tok"
        server.write(server.answer_body(request, 200, []))
        assert pending.result(timeout=10).json() == []
    client.forward_to = None
    pending = background(lambda: client.request("GET", "/svc/applications"))
    request = server.read_request()
    assert "X-Target-Host" not in request.headers
    server.write(server.answer_body(request, 200, []))
    pending.result(timeout=10)
    client.close()
