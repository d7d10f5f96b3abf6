"""Application definition and runtime view (App Mesh 3.0's ``App`` with its field names)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, unique
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client_http import SvcClient

__all__ = ["App", "AppOutput", "AppRun", "OutputHandler", "print_output_handler"]

#: stdout callback of a run-wait: ``(text, byte_position) -> None``.
OutputHandler = Callable[[str, int], None]


def print_output_handler(data: str, position: int) -> None:
    """An ``OutputHandler`` that prints to stdout."""
    del position
    print(data, end="", flush=True)


def _as_dict(data: Mapping[str, Any] | str | bytes | None) -> dict[str, Any]:
    if data is None:
        return {}
    if isinstance(data, (str, bytes, bytearray)):
        parsed = json.loads(data)
        return parsed if isinstance(parsed, dict) else {}
    return dict(data)


def _str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _bool(data: Mapping[str, Any], key: str) -> bool | None:
    value = data.get(key)
    return value if isinstance(value, bool) else None


class App:
    """An application: what the user defines plus, when read from the daemon, runtime fields."""

    @unique
    class Permission(Enum):
        DENY = "1"
        READ = "2"
        WRITE = "3"

    class Behavior:
        @unique
        class Action(Enum):
            RESTART = "restart"
            STANDBY = "standby"
            KEEPALIVE = "keepalive"
            REMOVE = "remove"

        def __init__(self, data: Mapping[str, Any] | str | bytes | None = None) -> None:
            d = _as_dict(data)
            self.exit: str | None = _str(d, "exit")
            actions = d.get("exit_code_actions")
            self.exit_code_actions: dict[str, str] = dict(actions) if isinstance(actions, dict) else {}

        def set_exit_behavior(self, action: App.Behavior.Action) -> None:
            self.exit = action.value

        def set_exit_code_action(self, exit_code: int, action: App.Behavior.Action) -> None:
            self.exit_code_actions[str(exit_code)] = action.value

    class DailyLimitation:
        def __init__(self, data: Mapping[str, Any] | str | bytes | None = None) -> None:
            d = _as_dict(data)
            self.daily_start: int | str | None = _int(d, "daily_start") or _str(d, "daily_start")
            self.daily_end: int | str | None = _int(d, "daily_end") or _str(d, "daily_end")

        def set_daily_range(self, start: datetime, end: datetime) -> None:
            self.daily_start = int(start.timestamp())
            self.daily_end = int(end.timestamp())

    class ResourceLimitation:
        def __init__(self, data: Mapping[str, Any] | str | bytes | None = None) -> None:
            d = _as_dict(data)
            self.cpu_shares = _int(d, "cpu_shares")
            self.memory_mb = _int(d, "memory_mb")
            self.memory_virt_mb = _int(d, "memory_virt_mb")

    #: Fields a user sets (sent by ``to_dict``); everything else read from the daemon is runtime.
    DEFINITION_FIELDS = (
        "name", "description", "command", "shell", "session_login", "working_dir", "env", "secret_env",
        "metadata", "enabled", "health_check_cmd", "stdout_backup_count", "start_time", "end_time",
        "interval", "cron_schedule", "daily_limitation", "stop_grace_period", "depends_on",
        "resource_limit", "behavior", "permission", "pid", "docker_image",
    )  # fmt: skip

    def __init__(self, data: Mapping[str, Any] | str | bytes | None = None) -> None:
        d = _as_dict(data)
        self._raw = d
        self.name = _str(d, "name")
        self.command = _str(d, "command")
        self.shell = _bool(d, "shell")
        self.session_login = _bool(d, "session_login")
        self.description = _str(d, "description")
        self.metadata: Any = d.get("metadata")
        self.working_dir = _str(d, "working_dir")
        self.enabled = _bool(d, "enabled")
        self.docker_image = _str(d, "docker_image")
        self.stdout_backup_count = _int(d, "stdout_backup_count")
        self.start_time: int | str | None = _int(d, "start_time") or _str(d, "start_time")
        self.end_time: int | str | None = _int(d, "end_time") or _str(d, "end_time")
        self.interval: int | str | None = _int(d, "interval") or _str(d, "interval")
        self.cron_schedule = _str(d, "cron_schedule")
        self.daily_limitation = App.DailyLimitation(d.get("daily_limitation"))
        self.stop_grace_period: int | str | None = _int(d, "stop_grace_period") or _str(d, "stop_grace_period")
        self.health_check_cmd = _str(d, "health_check_cmd")
        depends = d.get("depends_on")
        self.depends_on: list[str] | None = [str(x) for x in depends] if isinstance(depends, list) else None
        self.permission = _int(d, "permission")
        self.behavior = App.Behavior(d.get("behavior"))
        env = d.get("env")
        self.env: dict[str, str] = dict(env) if isinstance(env, dict) else {}
        secret_env = d.get("secret_env")
        self.secret_env: dict[str, str] = dict(secret_env) if isinstance(secret_env, dict) else {}
        self.pid = _int(d, "pid")
        self.resource_limit = App.ResourceLimitation(d.get("resource_limit"))
        # runtime (read-only)
        self.register_time = _int(d, "register_time")
        self.starts = _int(d, "starts")
        self.owner_principal_id = _str(d, "owner_principal_id")
        self.owner_display_name = _str(d, "owner_display_name")
        self.user = _str(d, "pid_user")
        self.pstree = _str(d, "pstree")
        self.container_id = _str(d, "container_id")
        self.memory = _int(d, "memory")
        cpu = d.get("cpu")
        self.cpu: float | None = float(cpu) if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) else None
        self.fd = _int(d, "fd")
        self.stdout_file_count = _int(d, "stdout_file_count")
        self.last_start_time = _int(d, "last_start_time")
        self.last_exit_time = _int(d, "last_exit_time")
        self.last_error = _str(d, "last_error")
        waiting = d.get("waiting_for")
        self.waiting_for: list[str] | None = [str(x) for x in waiting] if isinstance(waiting, list) else None
        self.next_start_time = _int(d, "next_start_time")
        self.health = _int(d, "health")
        self.return_code = _int(d, "return_code")
        self.process_uuid = _str(d, "process_uuid")
        self.task_id = _int(d, "task_id") or _str(d, "task_id")
        self.task_status = _str(d, "task_status")
        self.subscription_id = _str(d, "subscription_id")

    @property
    def is_enabled(self) -> bool | None:
        return self.enabled

    @property
    def others_permission(self) -> App.Permission | None:
        if self.permission is None:
            return None
        try:
            return App.Permission(str(self.permission // 10 % 10))
        except ValueError:
            return None

    def set_valid_time(self, start: datetime | None, end: datetime | None) -> None:
        self.start_time = int(start.timestamp()) if start else None
        self.end_time = int(end.timestamp()) if end else None

    def set_env(self, key: str, value: str, secure: bool = False) -> None:
        (self.secret_env if secure else self.env)[key] = value

    def set_permission(self, others_user: App.Permission) -> None:
        """Permission for non-owners: the daemon reads the tens digit; the ones digit mirrors it."""
        others = int(others_user.value)
        self.permission = others * 10 + others

    def to_dict(self) -> dict[str, Any]:
        """The definition as sent to the daemon: set definition fields only, empty values left out."""
        out: dict[str, Any] = {}
        for key in App.DEFINITION_FIELDS:
            value = getattr(self, key)
            if isinstance(value, (App.Behavior, App.DailyLimitation, App.ResourceLimitation)):
                value = {k: v for k, v in vars(value).items() if v not in (None, "", {})}
            if key != "metadata" and value in (None, "", {}, []):
                continue
            if key == "metadata" and value is None:
                continue
            out[key] = copy.deepcopy(value)
        return out

    def raw(self) -> dict[str, Any]:
        """Every field as the daemon sent it (a copy)."""
        return copy.deepcopy(self._raw)

    def __str__(self) -> str:
        return json.dumps(self.to_dict())


@dataclass(frozen=True)
class AppOutput:
    """One read of an app's output (``get_app_output``)."""

    status_code: int
    output: str
    #: Next read position (``X-Output-Position``), or None.
    output_position: int | None
    #: Exit code once the process exited (``X-Exit-Code``), else None.
    exit_code: int | None


class AppRun:
    """Handle of an asynchronous run (``run_app_async``); keeps the forwarding target it ran on."""

    def __init__(self, client: SvcClient, app_name: str, process_uuid: str) -> None:
        self.app_name = app_name
        self.process_uuid = process_uuid
        self._client = client
        self.forward_to = client.forward_to

    def wait(self, stdout_handler: OutputHandler | None = None, timeout: float = 0) -> int | None:
        """``wait_for_async_run`` on the client that started the run, on the run's target host."""
        return self._client.wait_for_async_run(self, stdout_handler, timeout)
