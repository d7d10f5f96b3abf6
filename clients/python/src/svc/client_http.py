"""``SvcClient``: the svc API over HTTPS REST (App Mesh 3.0's ``AppMeshClient`` under the svc name).

Every operation funnels through ``_request``, which owns the token contract (bearer from the
provider; on 401 one refresh and one retry of a replayable request; never after 403) and maps error
answers to typed exceptions. The transport-specific ``_send`` is REST here and the demultiplexed
persistent connection in ``SvcClientTCP`` / ``SvcClientWSS``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from typing import IO, Any, Literal
from urllib import parse

import requests
from requests.structures import CaseInsensitiveDict

from .app import App, AppOutput, AppRun, OutputHandler
from .cluster import ClusterNode, ClusterTask, ClusterTaskView, ClusterTopologyEntry
from .demux import AppEvent, EventCallback
from .errors import (
    SvcAppNotFoundError,
    SvcAppRemovedError,
    SvcAuthError,
    SvcConnectionError,
    SvcError,
    error_from_response,
)
from .token_provider import StaticAccessTokenProvider, TokenProvider

__all__ = ["Body", "Method", "SubscriptionResult", "SvcClient", "SvcResponse"]

logger = logging.getLogger(__name__)

Method = Literal["GET", "PUT", "POST", "DELETE"]
#: A request body: bytes/str as is, dict/list as JSON, or a callable opening a fresh stream per attempt.
Body = bytes | bytearray | str | dict[str, Any] | list[Any] | Callable[[], IO[bytes]] | None
SslVerify = bool | str | None


class SvcResponse:
    """An answer of any transport: status, case-insensitive headers, body bytes."""

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers: CaseInsensitiveDict[str] = CaseInsensitiveDict(dict(headers))
        self.content = content

    @property
    def ok(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content.decode("utf-8")) if self.content else None


class SubscriptionResult:
    """The daemon's answer to a subscribe: ``subscription_id``, ``app_name``, ``events``."""

    def __init__(self, subscription_id: str = "", app_name: str = "", events: list[str] | None = None) -> None:
        self.subscription_id = subscription_id
        self.app_name = app_name
        self.events = events or []

    def __repr__(self) -> str:
        return f"SubscriptionResult({self.subscription_id!r}, {self.app_name!r}, {self.events!r})"


class _RejectAllCookies(DefaultCookiePolicy):
    """Authentication is bearer-only: no cookie is kept or sent."""

    def set_ok(self, cookie: Any, request: Any) -> bool:
        return False

    def return_ok(self, cookie: Any, request: Any) -> bool:
        return False


def _segment(value: str) -> str:
    return parse.quote(value, safe="")


class SvcClient:
    """Client of the svc API over HTTPS REST.

    ``ssl_verify``: ``None`` uses ``/opt/svc/ssl/ca.pem`` or a packaged install's
    ``/var/lib/svc/work/ssl/ca.pem`` when readable, else the system CAs;
    ``True`` the system CAs; a path a CA file or directory; ``False`` turns verification off (only
    when asked). Authentication: ``bearer_token`` (static) or ``token_provider`` (refreshable).
    """

    supports_events = False

    _DEFAULT_SSL_DIR = Path("c:/local/svc/ssl" if os.name == "nt" else "/opt/svc/ssl")
    #: The CA of a packaged install (SVC_HOME=/var/lib/svc), used when readable.
    _PACKAGED_CA = Path("/var/lib/svc/work/ssl/ca.pem")
    _DURATION_TWO_DAYS_ISO = "P2D"
    _DURATION_TWO_DAYS_HALF_ISO = "P2DT12H"
    _USER_AGENT = "svc/python"
    _POLL_SECONDS = 1

    def __init__(
        self,
        base_url: str = "https://127.0.0.1:6060",
        ssl_verify: SslVerify = None,
        ssl_client_cert: str | tuple[str, str] | None = None,
        request_timeout: tuple[float, float] = (60, 300),
        *,
        bearer_token: str | None = None,
        token_provider: TokenProvider | None = None,
    ) -> None:
        if bearer_token is not None and token_provider is not None:
            raise ValueError("bearer_token and token_provider are mutually exclusive")
        self.base_url = self._normalize_base_url(base_url)
        self.ssl_verify: bool | str = self._resolve_ssl_verify(ssl_verify)
        self.ssl_client_cert = ssl_client_cert
        self.request_timeout = request_timeout
        self._forward_to = ""
        self._token_provider: TokenProvider | None = None
        if token_provider is not None:
            self.set_token_provider(token_provider)
        elif bearer_token is not None:
            self.set_bearer_token(bearer_token)
        self.session: requests.Session | None = requests.Session()
        self.session.cookies.set_policy(_RejectAllCookies())

    # -- configuration --------------------------------------------------------------------------

    @classmethod
    def _resolve_ssl_verify(cls, ssl_verify: SslVerify) -> bool | str:
        if ssl_verify is None:
            for ca in (cls._DEFAULT_SSL_DIR / "ca.pem", cls._PACKAGED_CA):
                if ca.is_file() and os.access(ca, os.R_OK):
                    return str(ca)
            return True
        if isinstance(ssl_verify, str):
            if ssl_verify == "":
                return False
            if not os.path.exists(ssl_verify):
                raise ValueError(f"ssl_verify path '{ssl_verify}' does not exist")
        return ssl_verify

    @staticmethod
    def _normalize_base_url(base_url: str) -> str:
        if not isinstance(base_url, str) or not base_url.strip():
            raise ValueError("base_url is required")
        candidate = base_url.strip().rstrip("/")
        parsed = parse.urlsplit(candidate)
        try:
            port = parsed.port
        except ValueError as error:
            raise ValueError("base_url has an invalid port") from error
        if (
            parsed.scheme not in ("http", "https")
            or not parsed.hostname
            or parsed.username is not None
            or parsed.password is not None
            or parsed.query
            or parsed.fragment
            or (port is not None and not 0 < port < 65536)
        ):
            raise ValueError("base_url must be an absolute HTTP(S) URL without credentials, query or fragment")
        return candidate

    @property
    def token_provider(self) -> TokenProvider | None:
        return self._token_provider

    def set_token_provider(self, provider: TokenProvider) -> None:
        if not isinstance(provider, TokenProvider):
            raise TypeError("token_provider must implement TokenProvider")
        self._token_provider = provider

    def set_bearer_token(self, token: str) -> None:
        """Use a caller-owned access token (never refreshed)."""
        self._token_provider = StaticAccessTokenProvider(token)

    def clear_bearer_token(self) -> None:
        """Forget the token locally (no call to the issuer)."""
        self._token_provider = None

    @property
    def forward_to(self) -> str:
        """``host[:port]`` the daemon forwards requests to (``X-Target-Host``); ``""`` for none."""
        return self._forward_to

    @forward_to.setter
    def forward_to(self, host: str | None) -> None:
        self._forward_to = host or ""

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def __enter__(self) -> SvcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the request pipeline -------------------------------------------------------------------

    def _bearer(self, provider: TokenProvider, refresh: bool, rejected: str | None) -> str | None:
        token = provider.refresh_access_token(rejected_token=rejected) if refresh else provider.get_access_token()
        if token is None:
            return None
        if not isinstance(token, str) or not token.strip():
            raise SvcAuthError("the token provider returned an invalid access token", 401)
        return token.strip()

    def request(
        self,
        method: Method,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: Body = None,
        raise_on_fail: bool = True,
    ) -> SvcResponse:
        """One raw request (path such as ``/svc/applications``) through the token pipeline."""
        return self._request(method, path, query=query, headers=headers, body=body, raise_on_fail=raise_on_fail)

    def _request(
        self,
        method: Method,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: Body = None,
        raise_on_fail: bool = True,
        stream_to: IO[bytes] | None = None,
    ) -> SvcResponse:
        base_headers = dict(headers or {})
        caller_auth = any(k.lower() == "authorization" for k in base_headers)
        provider = None if caller_auth else self._token_provider
        payload: bytes | Callable[[], IO[bytes]] | None
        if isinstance(body, (dict, list)):
            payload = json.dumps(body, allow_nan=False).encode("utf-8")
            if not any(k.lower() == "content-type" for k in base_headers):
                base_headers["Content-Type"] = "application/json"
        elif isinstance(body, str):
            payload = body.encode("utf-8")
        elif isinstance(body, (bytes, bytearray)):
            payload = bytes(body)
        else:
            payload = body
        rejected: str | None = None
        for attempt in range(2):
            token = self._bearer(provider, attempt == 1, rejected) if provider is not None else None
            response = self._send(method, path, query or {}, base_headers, payload, token, stream_to)
            if response.status_code == 401 and attempt == 0 and provider is not None and provider.can_refresh:
                rejected = token
                self._after_token_rejected()
                continue
            if raise_on_fail and not response.ok:
                raise error_from_response(response.status_code, response.content, f"{method} {path}")
            return response
        raise SvcAuthError("the token provider did not replace a rejected access token", 401)

    def _after_token_rejected(self) -> None:
        """Hook: a persistent transport reconnects so that the next bearer is pinned anew."""

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
        session = self.session
        if session is None:
            raise SvcConnectionError("client is closed")
        sent = dict(headers)
        sent["User-Agent"] = self._USER_AGENT
        if token:
            sent["Authorization"] = f"Bearer {token}"
        if self._forward_to:
            target = self._forward_to
            if ":" not in target:
                parsed = parse.urlsplit(self.base_url)
                target = f"{target}:{parsed.port or (443 if parsed.scheme == 'https' else 80)}"
            sent["X-Target-Host"] = target
        stream = payload() if callable(payload) else None
        data: IO[bytes] | bytes | None = stream if stream is not None else payload  # type: ignore[assignment]
        try:
            response = session.request(
                method,
                self.base_url + path,
                params=dict(query) or None,
                headers=sent,
                data=data,
                verify=self.ssl_verify,
                cert=self.ssl_client_cert,
                timeout=self.request_timeout,
                stream=stream_to is not None,
                allow_redirects=False,
            )
        except requests.exceptions.RequestException as error:
            # The exception text names the URL, never the headers: no bearer leaks.
            raise SvcConnectionError(f"{method} {path} failed: {type(error).__name__}") from error
        finally:
            if stream is not None:
                stream.close()
        try:
            if stream_to is not None and response.ok:
                for chunk in response.iter_content(64 * 1024):
                    stream_to.write(chunk)
                content = b""
            else:
                content = response.content
        finally:
            response.close()
        return SvcResponse(response.status_code, response.headers, content)

    # -- identity -------------------------------------------------------------------------------

    def get_auth_config(self) -> dict[str, Any]:
        """The public sign-in configuration (``GET /svc/auth/config``)."""
        result: dict[str, Any] = self._request("GET", "/svc/auth/config").json()
        return result

    def get_protected_resource_metadata(self) -> dict[str, Any]:
        """RFC 9728 metadata (``GET /.well-known/oauth-protected-resource``)."""
        result: dict[str, Any] = self._request("GET", "/.well-known/oauth-protected-resource").json()
        return result

    def get_openapi(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/openapi.json").json()
        return result

    def get_current_principal(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/svc/principal/self").json()
        return result

    # -- applications ---------------------------------------------------------------------------

    def get_app(self, app_name: str) -> App:
        return App(self._request("GET", f"/svc/app/{_segment(app_name)}").json())

    def list_apps(self) -> list[App]:
        return [App(item) for item in self._request("GET", "/svc/applications").json()]

    def get_app_output(
        self,
        app_name: str,
        stdout_position: int = 0,
        stdout_index: int = 0,
        stdout_maxsize: int = 10240,
        process_uuid: str = "",
        timeout: int = 0,
    ) -> AppOutput:
        """One read of the output from a byte position; ``timeout`` long-polls for new output."""
        query: dict[str, str] = {}
        if stdout_position:
            query["stdout_position"] = str(stdout_position)
        if stdout_index:
            query["stdout_index"] = str(stdout_index)
        if stdout_maxsize:
            query["stdout_maxsize"] = str(stdout_maxsize)
        if process_uuid:
            query["process_uuid"] = process_uuid
        if timeout:
            query["timeout"] = str(timeout)
        status, content, position, exit_code = self._read_output(app_name, query)
        return AppOutput(
            status_code=status,
            output=content.decode("utf-8", errors="replace"),
            output_position=position,
            exit_code=exit_code,
        )

    def _read_output(self, app_name: str, query: Mapping[str, str]) -> tuple[int, bytes, int | None, int | None]:
        """``(status, bytes, next position, exit code)`` of one output read; 404 raises."""
        response = self._request("GET", f"/svc/app/{_segment(app_name)}/output", query=query, raise_on_fail=False)
        if response.status_code in (401, 403, 404):
            raise error_from_response(response.status_code, response.content, f"GET /svc/app/{app_name}/output")
        position = response.headers.get("X-Output-Position")
        exit_code = response.headers.get("X-Exit-Code")
        return (
            response.status_code,
            response.content,
            int(position) if position is not None else None,
            int(exit_code) if exit_code is not None else None,
        )

    def check_app_health(self, app_name: str) -> bool:
        return int(self._request("GET", f"/svc/app/{_segment(app_name)}/health").text.strip()) == 0

    def add_app(self, app: App, subscribe_events: list[str] | None = None) -> App:
        """Register (or replace) an app; ``subscribe_events`` needs a persistent connection."""
        if subscribe_events and not self.supports_events:
            warnings.warn("subscribe_events needs SvcClientTCP or SvcClientWSS", RuntimeWarning, stacklevel=2)
        if not app.name:
            raise ValueError("app.name is required")
        query = {"subscribe_events": ",".join(subscribe_events)} if subscribe_events else None
        return App(self._request("PUT", f"/svc/app/{_segment(app.name)}", query=query, body=app.to_dict()).json())

    def delete_app(self, app_name: str) -> bool:
        """``True`` when deleted, ``False`` when there was no such app."""
        response = self._request("DELETE", f"/svc/app/{_segment(app_name)}", raise_on_fail=False)
        if response.ok:
            return True
        if response.status_code == 404:
            return False
        raise error_from_response(response.status_code, response.content, f"DELETE /svc/app/{app_name}")

    def enable_app(self, app_name: str) -> None:
        self._request("POST", f"/svc/app/{_segment(app_name)}/enable")

    def disable_app(self, app_name: str) -> None:
        self._request("POST", f"/svc/app/{_segment(app_name)}/disable")

    # -- runs and tasks -------------------------------------------------------------------------

    def run_app_async(
        self,
        app: App | str,
        max_time: int | str = _DURATION_TWO_DAYS_ISO,
        lifecycle: int | str = _DURATION_TWO_DAYS_HALF_ISO,
    ) -> AppRun:
        """Start a run (a command string, a new ``App``, or an ``App`` with only a name to run a
        copy of a registered app). ``max_time`` and ``lifecycle``: seconds or ISO 8601."""
        if isinstance(app, str):
            app = App({"command": app, "shell": True})
        answer = self._request(
            "POST",
            "/svc/app/run",
            body=app.to_dict(),
            query={"timeout": str(max_time), "lifecycle": str(lifecycle)},
        ).json()
        return AppRun(self, answer["name"], answer["process_uuid"])

    def wait_for_async_run(
        self, run: AppRun, stdout_handler: OutputHandler | None = None, timeout: float = 0
    ) -> int | None:
        """Wait for a run: its exit code (may be negative), or ``None`` after ``timeout`` seconds
        (0: no limit). Deletes the run app after an observed exit. Over REST this long-polls the
        output; ``SvcAppRemovedError`` when the app disappears first."""
        deadline = time.monotonic() + timeout if timeout > 0 else None
        position = 0
        saved, self._forward_to = self._forward_to, run.forward_to
        try:
            while True:
                try:
                    chunk = self.get_app_output(
                        run.app_name, stdout_position=position, process_uuid=run.process_uuid,
                        timeout=self._POLL_SECONDS,
                    )  # fmt: skip
                except SvcAppNotFoundError as error:
                    raise SvcAppRemovedError(f"app '{run.app_name}' was removed before its exit") from error
                if chunk.output and stdout_handler is not None:
                    stdout_handler(chunk.output, position)
                if chunk.output_position is not None:
                    position = chunk.output_position
                if chunk.exit_code is not None:
                    try:
                        self.delete_app(run.app_name)
                    except SvcError:
                        logger.debug("best-effort delete of run app %s failed", run.app_name)
                    return chunk.exit_code
                if chunk.status_code >= 400:
                    raise error_from_response(chunk.status_code, chunk.output.encode(), "wait_for_async_run")
                if deadline is not None and time.monotonic() >= deadline:
                    return None
        finally:
            self._forward_to = saved

    def run_app_sync(
        self,
        app: App | str,
        max_time: int | str = _DURATION_TWO_DAYS_ISO,
        lifecycle: int | str = _DURATION_TWO_DAYS_HALF_ISO,
    ) -> tuple[int | None, str]:
        """Run and wait in one request: ``(exit_code, output)``."""
        if isinstance(app, str):
            app = App({"command": app, "shell": True})
        response = self._request(
            "POST",
            "/svc/app/syncrun",
            body=app.to_dict(),
            query={"timeout": str(max_time), "lifecycle": str(lifecycle)},
        )
        code = response.headers.get("X-Exit-Code")
        return (int(code) if code is not None else None), response.text

    def run_task(self, app_name: str, data: str | bytes, timeout: int = 300) -> str:
        """Send a payload to the app's worker and wait for its result (``timeout`` seconds)."""
        response = self._request(
            "POST",
            f"/svc/app/{_segment(app_name)}/task",
            body=data,
            query={"timeout": str(timeout if timeout > 0 else 300)},
        )
        return response.text

    def cancel_task(self, app_name: str) -> bool:
        """Cancel the app's pending task: ``True`` when one was cancelled."""
        response = self._request("DELETE", f"/svc/app/{_segment(app_name)}/task", raise_on_fail=False)
        if response.status_code not in (200, 208, 404):
            logger.warning("cancel_task %s: HTTP %d", app_name, response.status_code)
        if response.status_code != 200:
            return False
        body = response.json() if response.content else None
        cancelled = body.get("cancelled") if isinstance(body, dict) else None
        return cancelled is None or bool(cancelled)

    # -- events (persistent connections only) ---------------------------------------------------

    def subscribe(
        self, app_name: str, events: list[str] | None = None, callback: EventCallback | None = None
    ) -> SubscriptionResult:
        """Subscribe to an app's events (``"*"``: every app). Needs ``SvcClientTCP`` or
        ``SvcClientWSS``; over REST the daemon answers 405 (``SvcPersistentConnectionRequiredError``)."""
        path = "/svc/subscribe" if not app_name or app_name == "*" else f"/svc/app/{_segment(app_name)}/subscribe"
        query = {"events": ",".join(events)} if events else {}
        answer = self._request("POST", path, query=query).json()
        result = SubscriptionResult(
            subscription_id=str(answer.get("subscription_id", "")),
            app_name=str(answer.get("app_name", "")),
            events=[str(e) for e in answer.get("events", [])],
        )
        if callback is not None and result.subscription_id:
            self._register_callback(result.subscription_id, callback)
        return result

    def unsubscribe(self, subscription_id: str) -> None:
        self._request("DELETE", "/svc/subscribe", query={"subscription_id": subscription_id})
        self._unregister_callback(subscription_id)

    def _register_callback(self, subscription_id: str, callback: Callable[[AppEvent], None]) -> None:
        raise SvcError("events need a persistent connection (SvcClientTCP or SvcClientWSS)")

    def _unregister_callback(self, subscription_id: str) -> None:
        return None

    # -- cluster (cluster mode only: a stand-alone daemon answers SvcNotFoundError, code not_found) --

    def list_cluster_apps(self) -> dict[str, ClusterTaskView]:
        """Every cluster task by name, with its ``placements`` (``GET /svc/cluster/applications``)."""
        result: dict[str, ClusterTaskView] = self._request("GET", "/svc/cluster/applications").json()
        return result

    def get_cluster_app(self, app_name: str) -> ClusterTaskView:
        """One cluster task; ``SvcAppNotFoundError`` when the cluster has none of that name."""
        result: ClusterTaskView = self._request("GET", f"/svc/cluster/app/{_segment(app_name)}").json()
        return result

    def add_cluster_app(
        self,
        app: App,
        replication: int = 1,
        port: int = 0,
        memory_mb: int = 0,
        condition: Mapping[str, str] | None = None,
    ) -> ClusterTaskView:
        """Define (or replace) the cluster task ``app.name``: ``replication`` replicas on distinct
        worker nodes whose labels match ``condition`` (``*``/``?`` wildcards) and whose free memory
        fits ``memory_mb``; ``port`` > 0 registers each replica as a service. Answers the stored task
        (placements as of now; the leader places replicas afterwards)."""
        if not app.name:
            raise ValueError("app.name is required")
        task: ClusterTask = {
            "replication": replication,
            "port": port,
            "memoryMB": memory_mb,
            "condition": dict(condition or {}),
            "content": app.to_dict(),
        }
        body: dict[str, Any] = dict(task)
        result: ClusterTaskView = self._request("PUT", f"/svc/cluster/app/{_segment(app.name)}", body=body).json()
        return result

    def delete_cluster_app(self, app_name: str) -> None:
        """Remove a cluster task (its replicas stop once the leader withdrew them);
        ``SvcAppNotFoundError`` when the cluster has none of that name."""
        self._request("DELETE", f"/svc/cluster/app/{_segment(app_name)}")

    def list_cluster_nodes(self) -> dict[str, ClusterNode]:
        """The report of every registered node by host name (``GET /svc/cluster/nodes``)."""
        result: dict[str, ClusterNode] = self._request("GET", "/svc/cluster/nodes").json()
        return result

    def get_cluster_topology(self) -> dict[str, list[ClusterTopologyEntry]]:
        """The leader's schedule: host name -> the tasks placed there (``GET /svc/cluster/topology``)."""
        result: dict[str, list[ClusterTopologyEntry]] = self._request("GET", "/svc/cluster/topology").json()
        return result

    # -- host -----------------------------------------------------------------------------------

    def get_host_resources(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/svc/resources").json()
        return result

    def get_config(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/svc/config").json()
        return result

    def set_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """Merge a partial configuration; answers the whole configuration."""
        result: dict[str, Any] = self._request("POST", "/svc/config", body=config).json()
        return result

    def set_log_level(self, level: str = "DEBUG") -> str:
        return str(self.set_config({"BaseConfig": {"LogLevel": level}})["BaseConfig"]["LogLevel"])

    def get_metrics(self) -> str:
        return self._request("GET", "/svc/metrics").text

    def add_label(self, label_name: str, label_value: str) -> None:
        self._request("PUT", f"/svc/label/{_segment(label_name)}", query={"value": label_value})

    def delete_label(self, label_name: str) -> None:
        self._request("DELETE", f"/svc/label/{_segment(label_name)}")

    def list_labels(self) -> dict[str, str]:
        result: dict[str, str] = self._request("GET", "/svc/labels").json()
        return result

    # -- authorization --------------------------------------------------------------------------

    def list_principals(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/svc/principals").json()
        return result

    def update_principal(self, principal_id: str, principal_data: dict[str, Any]) -> None:
        self._request("POST", f"/svc/principal/{_segment(principal_id)}", body=principal_data)

    def delete_principal(self, principal_id: str) -> None:
        self._request("DELETE", f"/svc/principal/{_segment(principal_id)}")

    def list_permissions(self) -> list[str]:
        result: list[str] = self._request("GET", "/svc/permissions").json()
        return result

    def get_principal_permissions(self) -> list[str]:
        result: list[str] = self._request("GET", "/svc/principal/self/permissions").json()
        return result

    def list_roles(self) -> dict[str, Any]:
        result: dict[str, Any] = self._request("GET", "/svc/roles").json()
        return result

    def update_role(self, role_name: str, permission_set: list[str]) -> None:
        self._request("POST", f"/svc/role/{_segment(role_name)}", body=permission_set)

    def delete_role(self, role_name: str) -> None:
        self._request("DELETE", f"/svc/role/{_segment(role_name)}")

    # -- files ----------------------------------------------------------------------------------

    def download_file(
        self, remote_file: str, local_file: str | None = None, preserve_permissions: bool = False
    ) -> None:
        """Copy a remote file to ``local_file`` (default: its base name)."""
        local = Path(local_file or os.path.basename(remote_file))
        with local.open("wb") as sink:
            response = self._download(remote_file, sink)
        if preserve_permissions:
            _apply_file_attributes(local, response.headers)

    def _download(self, remote_file: str, sink: IO[bytes]) -> SvcResponse:
        return self._request(
            "GET", "/svc/file/download", headers={"X-File-Path": parse.quote(remote_file)}, stream_to=sink
        )

    def upload_file(self, local_file: str, remote_file: str | None = None, preserve_permissions: bool = False) -> None:
        """Copy ``local_file`` to ``remote_file`` (default: its base name) on the daemon's host."""
        local = Path(local_file)
        if not local.exists():
            raise FileNotFoundError(f"local file not found: {local_file}")
        headers = {"X-File-Path": parse.quote(remote_file or local.name), "Content-Type": "application/octet-stream"}
        if preserve_permissions:
            headers.update(_file_attributes(local))
        self._upload(local, headers)

    def _upload(self, local: Path, headers: dict[str, str]) -> None:
        self._request("POST", "/svc/file/upload", headers=headers, body=lambda: local.open("rb"))


def _file_attributes(path: Path) -> dict[str, str]:
    if sys.platform == "win32":
        return {}
    import grp
    import pwd

    st = path.stat()
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return {"X-File-Mode": str(st.st_mode & 0o777), "X-File-User": user, "X-File-Group": group}


def _apply_file_attributes(path: Path, headers: Mapping[str, str]) -> None:
    """Best effort: owner first (chown clears set-id bits), then the mode."""
    if sys.platform == "win32":
        return
    import grp
    import pwd

    user, group, mode = headers.get("X-File-User"), headers.get("X-File-Group"), headers.get("X-File-Mode")
    if user is not None and group is not None:
        try:
            uid = pwd.getpwnam(user).pw_uid if not user.isdigit() else int(user)
            gid = grp.getgrnam(group).gr_gid if not group.isdigit() else int(group)
            os.chown(path, uid, gid)
        except (KeyError, OSError):
            logger.debug("could not apply owner %s:%s to %s", user, group, path)
    if mode is not None and mode.isdigit() and 0 <= int(mode) <= 0o777:
        try:
            path.chmod(int(mode))
        except OSError:
            logger.debug("could not apply mode %s to %s", mode, path)
