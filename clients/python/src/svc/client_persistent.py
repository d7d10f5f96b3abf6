"""``SvcClientTCP`` and ``SvcClientWSS``: the same API as ``SvcClient`` over one persistent,
demultiplexed connection, plus events (``subscribe``, ``add_app(subscribe_events=...)``) and the
event-driven ``wait_for_async_run``.

Connection lifecycle: the first request connects (TCP: TLS; WSS: TLS + upgrade carrying the
bearer). A disconnect closes the client's connection for good: that request, every pending one and
every later one fail at once with ``SvcConnectionError`` and each subscription callback receives one
``__disconnected__`` event; ``reconnect()`` opens a new connection (subscriptions do not survive: the
daemon drops them with the connection). After a 401 a refreshable provider's new token is used on a
new connection, since the daemon pins the principal to the connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from abc import abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from .app import App, AppRun, OutputHandler
from .client_http import Method, SubscriptionResult, SvcClient, SvcResponse
from .demux import AppEvent, Demux, DemuxStats, EventCallback
from .errors import SvcConnectionError, SvcError
from .messages import MessageError, RequestMessage
from .token_provider import TokenProvider
from .transports import DEFAULT_RECEIVE_TIMEOUT, TCPTransport, Transport, UpgradeRefused, WSSTransport

__all__ = ["PersistentClient", "SvcClientTCP", "SvcClientWSS"]

#: Largest frame the daemon takes before a connection has authenticated (spec/conformance.md).
_PRE_AUTH_MAX_BYTES = 1024 * 1024


class PersistentClient(SvcClient):
    supports_events = True
    _client_addr = ""

    def __init__(
        self,
        base_url: str,
        ssl_verify: bool | str | None,
        ssl_client_cert: str | tuple[str, str] | None,
        *,
        bearer_token: str | None,
        token_provider: TokenProvider | None,
        receive_timeout: float,
    ) -> None:
        super().__init__(
            base_url, ssl_verify, ssl_client_cert, bearer_token=bearer_token, token_provider=token_provider
        )
        self.receive_timeout = receive_timeout
        self._connect_lock = threading.Lock()
        self._demux: Demux | None = None
        self._last_demux: Demux | None = None
        self._closed = False
        self._authenticated = False

    @abstractmethod
    def _make_transport(self) -> Transport: ...

    # -- connection -----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the connection is open (it is opened by the first request)."""
        demux = self._demux
        return demux is not None and demux.running

    @property
    def demux_stats(self) -> DemuxStats | None:
        """Counters of the demultiplexer of the current (or last closed) connection."""
        demux = self._demux or self._last_demux
        return demux.stats() if demux is not None else None

    def _connection(self, token: str | None) -> Demux:
        with self._connect_lock:
            demux = self._demux
            if demux is not None and demux.running:
                return demux
            if self._closed:
                raise SvcConnectionError("the client is closed")
            if demux is not None:  # stopped without being dropped: the connection was lost
                raise SvcConnectionError("the connection was lost; call reconnect() to open a new one")
            transport = self._make_transport()
            transport.connect(token)
            self._authenticated = False
            demux = Demux(transport)
            self._demux = demux
            demux.start()
            return demux

    def _drop_connection(self) -> None:
        """Close the connection deliberately (a new one opens on the next request)."""
        with self._connect_lock:
            demux, self._demux = self._demux, None
        if demux is not None:
            self._last_demux = demux
            demux.stop()
            demux.join()

    def reconnect(self) -> None:
        """Forget a lost (or open) connection; the next request opens a new one."""
        self._drop_connection()

    def close(self) -> None:
        self._closed = True
        self._drop_connection()
        super().close()

    def _after_token_rejected(self) -> None:
        self._drop_connection()

    def _ensure_connected(self) -> None:
        """Open the connection now, so that the reader owns the socket before a subscription is
        created and no push can be mistaken for an answer."""
        provider = self._token_provider
        token = provider.get_access_token() if provider is not None else None
        with contextlib.suppress(UpgradeRefused):  # the request that follows answers it as a 401/403
            self._connection(token)

    # -- sending --------------------------------------------------------------------------------

    def _per_request_bearer(self, token: str | None) -> bool:
        """Whether this transport carries the bearer in each request (TCP) or only at upgrade."""
        return True

    def _send(
        self,
        method: Method,
        path: str,
        query: Mapping[str, str],
        headers: dict[str, str],
        payload: bytes | Callable[[], IO[bytes]] | None,
        token: str | None,
        stream_to: IO[bytes] | None,
    ) -> SvcResponse:
        if callable(payload):
            with payload() as stream:
                body = stream.read()
        else:
            body = payload or b""
        sent = dict(headers)
        sent["User-Agent"] = self._USER_AGENT
        if token and (self._per_request_bearer(token) or self._forward_to):
            sent["Authorization"] = f"Bearer {token}"
        if self._forward_to:
            sent["X-Target-Host"] = self._forward_to
        try:
            demux = self._connection(token)
        except UpgradeRefused as refused:
            # Answered like any 401/403, so the token pipeline refreshes (401) or raises.
            code = "unauthorized" if refused.status == 401 else "forbidden"
            body = f'{{"error": "{code}", "message": "{refused}"}}'.encode()
            return SvcResponse(refused.status, {"Content-Type": "application/json"}, body)
        if not self._authenticated and len(body) > _PRE_AUTH_MAX_BYTES and token:
            # The daemon takes at most 1 MiB before the connection authenticated: authenticate first.
            self._send("GET", "/svc/principal/self", {}, {}, None, token, None)
        message = RequestMessage(
            uuid=str(uuid.uuid4()),
            request_uri=path,
            http_method=method,
            client_addr=self._client_addr,
            headers=sent,
            query=dict(query),
            body=body,
        )
        try:
            encoded = message.encode()
        except MessageError as error:
            raise SvcError(f"request cannot be sent: {error}") from error
        answer = demux.request(message.uuid, encoded)
        if answer.http_status < 400 and token:
            self._authenticated = True
        answer_headers = dict(answer.headers)
        if answer.body_msg_type:
            answer_headers["Content-Type"] = answer.body_msg_type
        if stream_to is not None and answer.http_status < 400:
            stream_to.write(answer.body)
        return SvcResponse(answer.http_status, answer_headers, answer.body)

    # -- events ---------------------------------------------------------------------------------

    def _register_callback(self, subscription_id: str, callback: Callable[[AppEvent], None]) -> None:
        demux = self._demux
        if demux is None:
            raise SvcConnectionError("not connected")
        demux.register(subscription_id, callback)

    def _unregister_callback(self, subscription_id: str) -> None:
        demux = self._demux
        if demux is not None:
            demux.unregister(subscription_id)

    def subscribe(
        self, app_name: str, events: list[str] | None = None, callback: EventCallback | None = None
    ) -> SubscriptionResult:
        self._ensure_connected()
        return super().subscribe(app_name, events, callback)

    def add_app(
        self, app: App, subscribe_events: list[str] | None = None, callback: EventCallback | None = None
    ) -> App:
        """Register an app; with ``subscribe_events`` also subscribe atomically (no event is missed:
        events arriving before ``callback`` is attached are buffered and delivered first)."""
        if subscribe_events:
            self._ensure_connected()
        result = super().add_app(app, subscribe_events)
        if callback is not None and result.subscription_id:
            self._register_callback(result.subscription_id, callback)
        return result

    def wait_for_async_run(
        self, run: AppRun, stdout_handler: OutputHandler | None = None, timeout: float = 0
    ) -> int | None:
        """Event-driven run-wait (module ``run_wait``): the exit code, ``None`` after ``timeout``
        seconds (0: no limit), ``SvcAppRemovedError``, or ``SvcConnectionError`` on a disconnect."""
        from .run_wait import wait_for_run

        saved, self._forward_to = self._forward_to, run.forward_to
        try:
            return wait_for_run(self, run, stdout_handler, timeout)
        finally:
            self._forward_to = saved


class SvcClientTCP(PersistentClient):
    """The svc API over the TLS TCP transport (framed msgpack), default ``127.0.0.1:6059``."""

    _USER_AGENT = "svc/python/tcp"

    def __init__(
        self,
        tcp_address: tuple[str, int] = ("127.0.0.1", 6059),
        ssl_verify: bool | str | None = None,
        ssl_client_cert: str | tuple[str, str] | None = None,
        *,
        bearer_token: str | None = None,
        token_provider: TokenProvider | None = None,
        receive_timeout: float = DEFAULT_RECEIVE_TIMEOUT,
    ) -> None:
        self.tcp_address = tcp_address
        super().__init__(
            f"https://{tcp_address[0]}:{tcp_address[1]}",
            ssl_verify,
            ssl_client_cert,
            bearer_token=bearer_token,
            token_provider=token_provider,
            receive_timeout=receive_timeout,
        )
        self._client_addr = socket.gethostname()

    def _make_transport(self) -> Transport:
        return TCPTransport(
            self.tcp_address, self.ssl_verify, self.ssl_client_cert, receive_timeout=self.receive_timeout
        )


class SvcClientWSS(PersistentClient):
    """The svc API over WebSocket (TLS, sub-protocol ``svc-ws``), default ``127.0.0.1:6058``.

    The bearer goes in the upgrade (and again in each forwarded request). File transfers use the
    HTTPS data channel on the same port (``/svc/file/upload/ws``, ``/svc/file/download/ws``)."""

    _USER_AGENT = "svc/python/wss"
    _client_addr = "wss-client"

    def __init__(
        self,
        wss_address: tuple[str, int] = ("127.0.0.1", 6058),
        ssl_verify: bool | str | None = None,
        ssl_client_cert: str | tuple[str, str] | None = None,
        *,
        bearer_token: str | None = None,
        token_provider: TokenProvider | None = None,
        receive_timeout: float = DEFAULT_RECEIVE_TIMEOUT,
    ) -> None:
        self.wss_address = wss_address
        super().__init__(
            f"https://{wss_address[0]}:{wss_address[1]}",
            ssl_verify,
            ssl_client_cert,
            bearer_token=bearer_token,
            token_provider=token_provider,
            receive_timeout=receive_timeout,
        )

    def _make_transport(self) -> Transport:
        return WSSTransport(
            self.wss_address, self.ssl_verify, self.ssl_client_cert, receive_timeout=self.receive_timeout
        )

    def _per_request_bearer(self, token: str | None) -> bool:
        return False

    def _download(self, remote_file: str, sink: IO[bytes]) -> SvcResponse:
        return self._rest_data_channel("GET", "/svc/file/download/ws", {"X-File-Path": _quote(remote_file)}, None, sink)

    def _upload(self, local: Path, headers: dict[str, str]) -> None:
        self._rest_data_channel("POST", "/svc/file/upload/ws", headers, lambda: local.open("rb"), None)

    def _rest_data_channel(
        self,
        method: Method,
        path: str,
        headers: dict[str, str],
        payload: Callable[[], IO[bytes]] | None,
        sink: IO[bytes] | None,
    ) -> SvcResponse:
        provider = self._token_provider
        token = provider.get_access_token() if provider is not None else None
        response = SvcClient._send(self, method, path, {}, headers, payload, token, sink)
        if not response.ok:
            from .errors import error_from_response

            raise error_from_response(response.status_code, response.content, f"{method} {path}")
        return response


def _quote(value: str) -> str:
    from urllib import parse

    return parse.quote(value)
