"""Persistent transports: TLS TCP (framed msgpack) and WSS (one msgpack message per binary frame).

A transport moves whole message bodies; the demultiplexer (``demux.py``) owns the read side. Both
verify TLS by default (system CAs, or the CA file/directory given as ``ssl_verify``).
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import SvcConnectionError
from .framing import CLIENT_MAX_BODY_BYTES, FrameDecoder, FrameError, encode_frame

__all__ = ["SslVerify", "TCPTransport", "Transport", "WSSTransport", "ssl_context"]

_T = TypeVar("_T")
SslVerify = bool | str
ClientCert = str | tuple[str, str] | None

#: Idle read timeout of the reader. It never fails a request: the reader just reads on.
DEFAULT_RECEIVE_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 30.0
_READ_CHUNK = 256 * 1024


class _SerializedSSLSocket(ssl.SSLSocket):
    """A TLS socket safe for one reader thread and concurrent writer threads.

    OpenSSL forbids using one connection from two threads at once, yet the demultiplexer reads
    while requests are written. Every TLS read, write and handshake step runs under one lock on a
    non-blocking socket; waiting for the network (select) happens outside the lock, so a reader
    idling for pushes never holds up a writer. ``settimeout`` sets how long a call may wait.
    """

    def _svc_state(self) -> tuple[threading.Lock, float | None]:
        state = self.__dict__.get("_svc")
        if state is None:
            state = self.__dict__.setdefault("_svc", [threading.Lock(), None])
        return state[0], state[1]

    def settimeout(self, value: float | None) -> None:
        self._svc_state()
        self.__dict__["_svc"][1] = value
        super().settimeout(0.0)

    def gettimeout(self) -> float | None:
        return self._svc_state()[1]

    def _svc_wait(self, write: bool, deadline: float | None) -> None:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise TimeoutError("timed out")
        readable, writable, _ = select.select([] if write else [self], [self] if write else [], [], remaining)
        if not readable and not writable:
            raise TimeoutError("timed out")

    def _svc_call(self, call: Callable[[], _T]) -> _T:
        lock, timeout = self._svc_state()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with lock:
                try:
                    return call()
                except ssl.SSLWantReadError:
                    write = False
                except (ssl.SSLWantWriteError, BlockingIOError):
                    write = True
            if not write and self.pending():
                continue
            self._svc_wait(write, deadline)

    def do_handshake(self, block: bool = False) -> None:
        self._svc_call(lambda: super(_SerializedSSLSocket, self).do_handshake(block))

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        return self._svc_call(lambda: super(_SerializedSSLSocket, self).recv(buflen, flags))

    def send(self, data: Any, flags: int = 0) -> int:
        return self._svc_call(lambda: super(_SerializedSSLSocket, self).send(data, flags))

    def sendall(self, data: Any, flags: int = 0) -> None:
        view = memoryview(data).cast("B")
        while view:
            sent = self.send(view, flags)
            view = view[sent:]


def ssl_context(ssl_verify: SslVerify, client_cert: ClientCert = None) -> ssl.SSLContext:
    """A client TLS context: verification on unless ``ssl_verify`` is ``False``; its sockets are
    ``_SerializedSSLSocket``s."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.sslsocket_class = _SerializedSSLSocket
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ssl_verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif isinstance(ssl_verify, str):
        path = Path(ssl_verify)
        if path.is_dir():
            context.load_verify_locations(capath=str(path))
        elif path.is_file():
            context.load_verify_locations(cafile=str(path))
        else:
            raise ValueError(f"ssl_verify path '{ssl_verify}' does not exist")
    if isinstance(client_cert, tuple):
        context.load_cert_chain(certfile=client_cert[0], keyfile=client_cert[1])
    elif client_cert:
        context.load_cert_chain(certfile=client_cert)
    return context


class UpgradeRefused(SvcConnectionError):
    """The WSS upgrade was answered 401 or 403: an authentication answer, not a network failure."""

    def __init__(self, status: int) -> None:
        super().__init__(f"WSS upgrade refused: HTTP {status}")
        self.status = status


class Transport(ABC):
    """One persistent connection carrying whole message bodies."""

    #: Name used in error messages ("TCP", "WSS").
    name = "transport"

    def __init__(self, receive_timeout: float = DEFAULT_RECEIVE_TIMEOUT) -> None:
        self.receive_timeout = receive_timeout
        self._send_lock = threading.Lock()

    @abstractmethod
    def connect(self, bearer: str | None) -> None:
        """Open the connection; ``bearer`` is sent where the transport has a handshake (WSS)."""

    @property
    @abstractmethod
    def connected(self) -> bool: ...

    @abstractmethod
    def _send(self, body: bytes) -> None: ...

    @abstractmethod
    def receive(self) -> bytes | None:
        """The next body; ``None`` after an idle receive timeout. Raises ``SvcConnectionError``
        when the connection ended or failed (and is then closed)."""

    @abstractmethod
    def close(self) -> None:
        """Close; wakes a reader blocked in ``receive``. Idempotent."""

    def send(self, body: bytes) -> None:
        with self._send_lock:
            self._send(body)


class TCPTransport(Transport):
    name = "TCP"

    def __init__(
        self,
        address: tuple[str, int],
        ssl_verify: SslVerify = True,
        ssl_client_cert: ClientCert = None,
        *,
        receive_timeout: float = DEFAULT_RECEIVE_TIMEOUT,
        max_body_bytes: int = CLIENT_MAX_BODY_BYTES,
    ) -> None:
        super().__init__(receive_timeout)
        self.address = address
        self._context = ssl_context(ssl_verify, ssl_client_cert)
        self._max = max_body_bytes
        self._socket: ssl.SSLSocket | None = None
        self._decoder = FrameDecoder(max_body_bytes)
        self._ready: deque[bytes] = deque()
        self._failure: FrameError | None = None

    def __str__(self) -> str:
        return f"tcps://{self.address[0]}:{self.address[1]}"

    def connect(self, bearer: str | None) -> None:
        del bearer  # TCP has no handshake: the bearer travels in each request
        try:
            raw = socket.create_connection(self.address, timeout=DEFAULT_CONNECT_TIMEOUT)
        except OSError as error:
            raise SvcConnectionError(f"TCP connect to {self} failed: {error}") from error
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            wrapped = self._context.wrap_socket(raw, server_hostname=self.address[0])
        except (OSError, ssl.SSLError) as error:
            raw.close()
            raise SvcConnectionError(f"TCP connect to {self} failed: {error}") from error
        wrapped.settimeout(self.receive_timeout)
        self._decoder = FrameDecoder(self._max)
        self._ready.clear()
        self._failure = None
        self._socket = wrapped

    @property
    def connected(self) -> bool:
        return self._socket is not None

    def _send(self, body: bytes) -> None:
        sock = self._socket
        if sock is None:
            raise SvcConnectionError("TCP transport is not connected")
        try:
            frame = encode_frame(body, self._max)
        except FrameError as error:
            raise SvcConnectionError(f"refusing to send: {error}") from error
        try:
            sock.sendall(frame)
        except OSError as error:
            self.close()
            raise SvcConnectionError(f"TCP send failed: {error}") from error

    def receive(self) -> bytes | None:
        while True:
            if self._ready:
                return self._ready.popleft()
            if self._failure is not None:
                self.close()
                raise SvcConnectionError(f"TCP stream refused: {self._failure}") from self._failure
            sock = self._socket
            if sock is None:
                raise SvcConnectionError("TCP transport is closed")
            try:
                chunk = sock.recv(_READ_CHUNK)
            except TimeoutError:
                return None
            except (OSError, ValueError) as error:
                self.close()
                raise SvcConnectionError(f"TCP receive failed: {error}") from error
            if not chunk:
                self.close()
                try:
                    self._decoder.finish()
                except FrameError as error:
                    raise SvcConnectionError(f"TCP connection closed inside a frame: {error}") from error
                raise SvcConnectionError("TCP connection closed by the peer")
            try:
                for body in self._decoder.feed(chunk):
                    self._ready.append(body)
            except FrameError as error:
                self._failure = error

    def close(self) -> None:
        sock, self._socket = self._socket, None
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv
        with contextlib.suppress(OSError):
            sock.close()


class WSSTransport(Transport):
    """WebSocket over TLS, sub-protocol ``svc-ws``; the bearer goes in the upgrade request."""

    name = "WSS"
    SUBPROTOCOL = "svc-ws"

    def __init__(
        self,
        address: tuple[str, int],
        ssl_verify: SslVerify = True,
        ssl_client_cert: ClientCert = None,
        *,
        receive_timeout: float = DEFAULT_RECEIVE_TIMEOUT,
    ) -> None:
        super().__init__(receive_timeout)
        self.address = address
        self._ssl_verify = ssl_verify
        self._client_cert = ssl_client_cert
        self._context = ssl_context(ssl_verify, ssl_client_cert)
        self._ws: Any = None

    def __str__(self) -> str:
        return f"wss://{self.address[0]}:{self.address[1]}"

    def connect(self, bearer: str | None) -> None:
        import websocket  # deferred: only WSS clients need websocket-client

        headers = [f"Authorization: Bearer {bearer}"] if bearer else []
        try:
            ws = websocket.create_connection(
                f"{self}/",
                timeout=DEFAULT_CONNECT_TIMEOUT,
                subprotocols=[self.SUBPROTOCOL],
                header=headers,
                sslopt={"context": self._context},
                enable_multithread=True,
            )
        except Exception as error:  # websocket-client raises many types (handshake status, OSError, ssl)
            status = getattr(error, "status_code", None)
            if isinstance(status, int) and status in (401, 403):
                raise UpgradeRefused(status) from error
            raise SvcConnectionError(f"WSS connect to {self} failed{f' (HTTP {status})' if status else ''}") from error
        ws.settimeout(self.receive_timeout)
        self._ws = ws

    @property
    def connected(self) -> bool:
        return self._ws is not None and bool(self._ws.connected)

    def _send(self, body: bytes) -> None:
        ws = self._ws
        if ws is None:
            raise SvcConnectionError("WSS transport is not connected")
        try:
            ws.send_binary(body)
        except Exception as error:
            self.close()
            raise SvcConnectionError(f"WSS send failed: {error}") from error

    def receive(self) -> bytes | None:
        import websocket

        ws = self._ws
        if ws is None:
            raise SvcConnectionError("WSS transport is closed")
        try:
            data = ws.recv()
        except (websocket.WebSocketTimeoutException, TimeoutError):
            return None
        except Exception as error:
            self.close()
            raise SvcConnectionError(f"WSS receive failed: {error}") from error
        if data is None or data == "" or data == b"":
            if not ws.connected:
                self.close()
                raise SvcConnectionError("WSS connection closed by the peer")
            return b""
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)

    def close(self) -> None:
        ws, self._ws = self._ws, None
        if ws is None:
            return
        # Closing a broken socket may fail in any way.
        with contextlib.suppress(Exception):
            ws.abort()  # shuts the socket down: wakes a reader blocked in recv
        with contextlib.suppress(Exception):
            ws.close(timeout=1)
