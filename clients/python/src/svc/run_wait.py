"""Run-wait over a persistent connection (``wait_for_async_run`` of ``SvcClientTCP``/``SvcClientWSS``).

    subscribe STDOUT,EXIT,REMOVED ─▶ backfill output from 0 (detects an already-exited process)
        ─▶ wait for EXIT | REMOVED | __disconnected__ | caller timeout
    outcome: EXIT → exit code (may be negative) · timeout → None · REMOVED/404 → SvcAppRemovedError
             · __disconnected__ → SvcConnectionError
    cleanup: unsubscribe (best effort, never on a dead transport); delete the run app only after an
             observed exit (never after REMOVED or a disconnect)

Stdout is delivered once per byte: chunks are deduplicated by byte position.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from .app import AppRun, OutputHandler
from .demux import EVENT_TYPE_DISCONNECTED, AppEvent
from .errors import SvcAppNotFoundError, SvcAppRemovedError, SvcConnectionError, SvcError

if TYPE_CHECKING:
    from .client_persistent import PersistentClient

__all__ = ["wait_for_run"]

logger = logging.getLogger(__name__)

#: Largest backfill read; the daemon may answer less.
_BACKFILL_MAXSIZE = 1024 * 1024


class _Outcome:
    """What the wait observed; the first decisive event wins."""

    def __init__(self, app_name: str, stdout_handler: OutputHandler | None) -> None:
        self.app_name = app_name
        self.handler = stdout_handler
        self.done = threading.Event()
        self.exit_code: int | None = None
        self.failure: SvcError | None = None
        self.disconnected = False
        self._delivered_until = 0
        self._lock = threading.Lock()

    def stdout(self, chunk: bytes, position: int) -> None:
        with self._lock:
            end = position + len(chunk)
            if not chunk or end <= self._delivered_until:
                return
            if position < self._delivered_until:
                chunk = chunk[self._delivered_until - position :]
                position = self._delivered_until
            self._delivered_until = end
        if self.handler is not None:
            try:
                self.handler(chunk.decode("utf-8", errors="replace"), position)
            except Exception:
                logger.exception("stdout handler raised")

    def decide(self, exit_code: int | None = None, failure: SvcError | None = None) -> None:
        with self._lock:
            if self.done.is_set():
                return
            self.exit_code = exit_code
            self.failure = failure
            self.done.set()

    def on_event(self, event: AppEvent) -> None:
        if event.event_type == "STDOUT":
            output = event.data.get("output")
            position = event.data.get("position")
            if isinstance(output, str) and isinstance(position, int):
                self.stdout(output.encode("utf-8"), position)
        elif event.event_type == "EXIT":
            code = event.data.get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                self.decide(exit_code=code)
            else:
                self.decide(failure=SvcConnectionError(f"EXIT of '{self.app_name}' carried no exit code"))
        elif event.event_type == "REMOVED":
            self.decide(failure=SvcAppRemovedError(f"app '{self.app_name}' was removed before its exit was observed"))
        elif event.event_type == EVENT_TYPE_DISCONNECTED:
            self.disconnected = True
            self.decide(failure=SvcConnectionError(f"transport disconnected while waiting for '{self.app_name}'"))


def wait_for_run(
    client: PersistentClient, run: AppRun, stdout_handler: OutputHandler | None, timeout: float
) -> int | None:
    outcome = _Outcome(run.app_name, stdout_handler)
    subscription = client.subscribe(run.app_name, ["STDOUT", "EXIT", "REMOVED"], callback=outcome.on_event)
    try:
        _backfill(client, run, outcome)
        outcome.done.wait(timeout if timeout > 0 else None)
    except SvcConnectionError as error:
        outcome.disconnected = True
        outcome.decide(failure=error)
    finally:
        _cleanup(client, run, outcome, subscription.subscription_id)
    if outcome.failure is not None:
        raise outcome.failure
    return outcome.exit_code


def _backfill(client: PersistentClient, run: AppRun, outcome: _Outcome) -> None:
    """Read what was printed before the subscription; stops at no new bytes or an exit.

    It reads to the end even when an EXIT event has already decided the outcome (a process that
    exits at once): the bytes it printed before the subscription reach the handler only here."""
    position = 0
    while True:
        query = {"stdout_position": str(position), "stdout_maxsize": str(_BACKFILL_MAXSIZE)}
        if run.process_uuid:
            query["process_uuid"] = run.process_uuid
        try:
            _, content, next_position, exit_code = client._read_output(run.app_name, query)
        except SvcAppNotFoundError as error:
            outcome.decide(failure=SvcAppRemovedError(f"app '{run.app_name}' was removed before its exit"))
            logger.debug("backfill: %s", error)
            return
        outcome.stdout(content, position)
        if exit_code is not None:
            outcome.decide(exit_code=exit_code)
            return
        if not content or next_position is None or next_position <= position:
            return
        position = next_position


def _cleanup(client: PersistentClient, run: AppRun, outcome: _Outcome, subscription_id: str) -> None:
    if outcome.disconnected or not client.connected:
        return  # the transport is dead: no unsubscribe (it could not be answered), no delete
    started = time.monotonic()
    try:
        if subscription_id:
            client.unsubscribe(subscription_id)
    except SvcError as error:
        logger.debug("best-effort unsubscribe failed: %s", error)
    if outcome.exit_code is not None and outcome.failure is None:
        try:
            client.delete_app(run.app_name)
        except SvcError as error:
            logger.debug("best-effort delete of run app %s failed: %s", run.app_name, error)
    logger.debug("run-wait cleanup took %.3fs", time.monotonic() - started)
