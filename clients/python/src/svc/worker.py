"""Worker side of the task RPC: a managed process fetches task payloads and returns results.

    fetching ── 200 ─▶ payload returned to the caller (who later calls send_task_result)
       │  204 (long poll ended, no task) ─▶ fetching
       │  412 ─▶ SvcProcessSupersededError          (no retry)
       │  400 ─▶ SvcWorkerRejectedError             (no retry)
       │  other failure ─▶ retry after a fixed 100 ms floor (no backoff; ``max_retries`` may cap it)
       └  stop_event set ─▶ SvcError("cancelled")

The process key (``SVC_PROCESS_KEY``) travels only in the ``X-Svc-Process-Key`` header; the app name
comes from ``SVC_APPLICATION_NAME``. A missing variable is an immediate error, never retried.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from urllib import parse

from .client_http import SvcClient
from .client_persistent import SvcClientTCP, SvcClientWSS
from .errors import (
    SvcError,
    SvcProcessSupersededError,
    SvcWorkerRejectedError,
    error_from_response,
)

__all__ = ["SvcWorker", "SvcWorkerTCP", "SvcWorkerWSS"]

RETRY_FLOOR_SECONDS = 0.1
PROCESS_KEY_HEADER = "X-Svc-Process-Key"


class SvcWorker:
    """Task loop over HTTPS REST. ``base_url`` defaults to ``SVC_DAEMON_URL`` (injected by the
    daemon), else ``https://127.0.0.1:6060``."""

    _RETRY_DELAY_SECONDS = RETRY_FLOOR_SECONDS

    def __init__(
        self,
        base_url: str | None = None,
        ssl_verify: bool | str | None = None,
        ssl_client_cert: str | tuple[str, str] | None = None,
        request_timeout: tuple[float, float] = (60, 300),
        *,
        client: SvcClient | None = None,
        logger: logging.Logger | None = None,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._env = env if env is not None else os.environ
        self._client = client or SvcClient(
            base_url or self._env.get("SVC_DAEMON_URL") or "https://127.0.0.1:6060",
            ssl_verify,
            ssl_client_cert,
            request_timeout,
        )
        self._logger = logger or logging.getLogger(__name__)
        self._sleep = sleep
        self._clock = clock

    @property
    def client(self) -> SvcClient:
        return self._client

    def _runtime(self) -> tuple[str, str]:
        key = self._env.get("SVC_PROCESS_KEY")
        name = self._env.get("SVC_APPLICATION_NAME")
        if not key:
            raise SvcError("SVC_PROCESS_KEY is not set: not a process managed by svc")
        if not name:
            raise SvcError("SVC_APPLICATION_NAME is not set: not a process managed by svc")
        return key, name

    def fetch_task(self, *, stop_event: threading.Event | None = None, max_retries: int | None = None) -> bytes:
        """The next task payload. Retries failures after a 100 ms floor (``max_retries``: at most
        that many retries, then ``SvcError``); ``stop_event`` cancels (``SvcError``)."""
        key, name = self._runtime()
        path = f"/svc/app/{parse.quote(name, safe='')}/task"
        failures = 0
        while True:
            if stop_event is not None and stop_event.is_set():
                raise SvcError("fetch_task cancelled")
            started = self._clock()
            try:
                response = self._client._request("GET", path, headers={PROCESS_KEY_HEADER: key}, raise_on_fail=False)
                if response.status_code == 200:
                    return response.content
                if response.status_code == 204:
                    continue  # the long poll ended without a task: fetch again at once
                if response.status_code == 412:
                    raise SvcProcessSupersededError(
                        "the process key was superseded by a newer process of this app", 412
                    )
                if response.status_code == 400:
                    cause = error_from_response(400, response.content, "fetch_task")
                    raise SvcWorkerRejectedError(str(cause), 400, code=cause.code, detail=cause.detail) from cause
                self._logger.warning("fetch_task: HTTP %d, retrying", response.status_code)
            except (SvcProcessSupersededError, SvcWorkerRejectedError):
                raise
            except SvcError as error:
                self._logger.warning("fetch_task failed (%s), retrying", type(error).__name__)
            failures += 1
            if max_retries is not None and failures > max_retries:
                raise SvcError(f"fetch_task failed {failures} times (max_retries={max_retries})")
            remaining = self._RETRY_DELAY_SECONDS - (self._clock() - started)
            if remaining > 0:
                if stop_event is not None:
                    if stop_event.wait(remaining):
                        raise SvcError("fetch_task cancelled")
                else:
                    self._sleep(remaining)

    def send_task_result(self, result: str | bytes) -> None:
        """Return the result of the task this process fetched."""
        key, name = self._runtime()
        path = f"/svc/app/{parse.quote(name, safe='')}/task"
        response = self._client._request(
            "PUT", path, headers={PROCESS_KEY_HEADER: key}, body=result, raise_on_fail=False
        )
        if response.status_code == 412:
            raise SvcProcessSupersededError("the process key was superseded by a newer process of this app", 412)
        if response.status_code == 400:
            cause = error_from_response(400, response.content, "send_task_result")
            raise SvcWorkerRejectedError(str(cause), 400, code=cause.code, detail=cause.detail) from cause
        if not response.ok:
            raise error_from_response(response.status_code, response.content, "send_task_result")

    def close(self) -> None:
        self._client.close()


class SvcWorkerTCP(SvcWorker):
    """Task loop over the TCP transport (keyword arguments recommended)."""

    def __init__(
        self,
        ssl_verify: bool | str | None = None,
        ssl_client_cert: str | tuple[str, str] | None = None,
        tcp_address: tuple[str, int] = ("127.0.0.1", 6059),
        *,
        logger: logging.Logger | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        client = SvcClientTCP(tcp_address, ssl_verify, ssl_client_cert)
        super().__init__(client=client, logger=logger, env=env)


class SvcWorkerWSS(SvcWorker):
    """Task loop over the WSS transport (a session without a bearer, limited to the task RPC)."""

    def __init__(
        self,
        ssl_verify: bool | str | None = None,
        ssl_client_cert: str | tuple[str, str] | None = None,
        wss_address: tuple[str, int] = ("127.0.0.1", 6058),
        *,
        logger: logging.Logger | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        client = SvcClientWSS(wss_address, ssl_verify, ssl_client_cert)
        super().__init__(client=client, logger=logger, env=env)
