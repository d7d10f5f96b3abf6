"""Every operation of the daemon through the client API, on every transport, against a real svcd."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import PERSISTENT, SENT, Served, eventually, make_client, unique

import svc
from svc.client_http import SvcClient
from svc.errors import SvcBadRequestError

HERE = Path(__file__).resolve().parent


def test_identity_and_discovery(client: SvcClient, served: Served) -> None:
    assert "flows" in client.get_auth_config()
    assert "resource" in client.get_protected_resource_metadata()
    assert "paths" in client.get_openapi()
    me = client.get_current_principal()
    assert me["principal_id"] == served["principals"]["svc-admin"]
    assert client.request("GET", "/svc/self").json()["principal_id"] == me["principal_id"]
    assert "app-reg" in client.get_principal_permissions()


def test_application_lifecycle(client: SvcClient, transport: str) -> None:
    name = unique("app", transport)
    app = svc.App({"name": name, "command": "sleep 300", "shell": True, "description": "py"})
    app.set_env("GREETING", "hi")
    added = client.add_app(app)
    assert added.name == name
    assert added.command == "sleep 300"
    assert name in [a.name for a in client.list_apps()]
    assert client.get_app(name).description == "py"
    eventually(lambda: client.get_app(name).pid is not None, what="the app to start")
    assert client.check_app_health(name) is True
    output = client.get_app_output(name)
    assert output.status_code == 200
    assert output.exit_code is None
    client.disable_app(name)
    assert client.get_app(name).enabled is False
    client.enable_app(name)
    assert client.get_app(name).enabled is True
    assert client.delete_app(name) is True
    assert client.delete_app(name) is False  # no such app any more
    with pytest.raises(svc.SvcAppNotFoundError):
        client.get_app(name)


def test_runs(client: SvcClient) -> None:
    exit_code, output = client.run_app_sync("echo sync; exit 4", lifecycle=300)
    assert (exit_code, output) == (4, "sync\n")
    chunks: list[str] = []
    run = client.run_app_async(svc.App({"command": "printf 'x%.0s' $(seq 1 3000)", "shell": True}), lifecycle=300)
    assert run.wait(lambda text, _pos: chunks.append(text), timeout=60) == 0
    assert "".join(chunks) == "x" * 3000  # every byte once, in order
    with pytest.raises(svc.SvcAppNotFoundError):
        client.get_app(run.app_name)  # deleted after the observed exit


def test_task_round_trip_with_a_worker_of_this_library(client: SvcClient, served: Served, transport: str) -> None:
    name = unique("worker", transport)
    app = svc.App(
        {
            "name": name,
            "command": f"exec {sys.executable} {HERE / 'worker_app.py'} {transport} 2>&1",
            "shell": True,
            "env": {
                "SVC_TEST_CA": served["ca"],
                "SVC_TEST_TCP_PORT": str(served["ports"]["tcp"]),
                "PYTHONPATH": os.pathsep.join(sys.path),
            },
        }
    )
    client.add_app(app)
    try:
        assert client.run_task(name, "ping-1", timeout=60) == "pong:ping-1"
        assert client.run_task(name, b"ping-2", timeout=60) == "pong:ping-2"
        assert client.cancel_task(name) in (True, False)  # nothing pending: answered, not raised
    except BaseException:
        print(client.get_app_output(name, stdout_maxsize=100000).output[-3000:])
        raise
    finally:
        client.delete_app(name)


def test_labels_config_resources_metrics(client: SvcClient, transport: str) -> None:
    key = unique("label", transport).replace("-", "_")
    client.add_label(key, "blue")
    assert client.list_labels()[key] == "blue"
    client.delete_label(key)
    assert key not in client.list_labels()
    assert "BaseConfig" in client.get_config()
    assert client.set_log_level("DEBUG") == "DEBUG"
    assert client.set_config({"BaseConfig": {"LogLevel": "INFO"}})["BaseConfig"]["LogLevel"] == "INFO"
    assert isinstance(client.get_host_resources(), dict)
    assert "# HELP" in client.get_metrics() or "# TYPE" in client.get_metrics()


def test_roles_permissions_principals(client: SvcClient, transport: str) -> None:
    role = unique("role", transport)
    permissions = client.list_permissions()
    assert len(permissions) == 27
    client.update_role(role, ["app-view"])
    assert client.list_roles()[role] == ["app-view"]
    principal = f"py-principal-{transport}"
    client.update_principal(principal, {"roles": [role]})
    assert client.list_principals()[principal]["roles"] == [role]
    client.delete_principal(principal)
    assert client.list_principals()[principal]["status"] == "tombstoned"
    client.delete_role(role)
    assert role not in client.list_roles()


def test_files(client: SvcClient, tmp_path: Path, transport: str) -> None:
    source = tmp_path / "source.bin"
    source.write_bytes(bytes(range(256)) * 64)
    source.chmod(0o640)
    remote = tmp_path / f"remote-{transport}.bin"
    client.upload_file(str(source), str(remote), preserve_permissions=True)
    assert remote.read_bytes() == source.read_bytes()
    assert remote.stat().st_mode & 0o777 == 0o640
    back = tmp_path / "back.bin"
    client.download_file(str(remote), str(back), preserve_permissions=True)
    assert back.read_bytes() == source.read_bytes()
    assert back.stat().st_mode & 0o777 == 0o640
    with pytest.raises(svc.SvcRequestError):
        client.download_file(str(tmp_path / "missing"), str(tmp_path / "x"))


def _cluster_calls(client: SvcClient, name: str) -> dict[str, Callable[[], object]]:
    task = svc.App({"name": name, "command": "python3 -m http.server 8080", "shell": True})
    return {
        "list_cluster_apps": client.list_cluster_apps,
        "get_cluster_app": lambda: client.get_cluster_app(name),
        "add_cluster_app": lambda: client.add_cluster_app(
            task, replication=2, port=8080, memory_mb=64, condition={"zone": "east-*"}
        ),
        "delete_cluster_app": lambda: client.delete_cluster_app(name),
        "list_cluster_nodes": client.list_cluster_nodes,
        "get_cluster_topology": client.get_cluster_topology,
    }


def test_cluster_operations_on_a_stand_alone_daemon(client: SvcClient, transport: str) -> None:
    """svc-testkit serve is stand-alone: every /svc/cluster/* operation answers 404 ``not_found``
    (cluster mode off), raised as exactly ``SvcNotFoundError``, not the ``app_not_found`` a cluster
    gives for a missing task. The task body passed the daemon's strict validation first (else 400)."""
    for method, call in _cluster_calls(client, unique("cluster", transport)).items():
        with pytest.raises(svc.SvcNotFoundError) as caught:
            call()
        assert type(caught.value) is svc.SvcNotFoundError, method
        assert (caught.value.status_code, caught.value.code) == (404, "not_found"), method
        assert "cluster mode is off" in caught.value.detail, method


def test_cluster_task_input_is_checked(client: SvcClient) -> None:
    with pytest.raises(ValueError, match=r"app\.name"):
        client.add_cluster_app(svc.App({"command": "sleep 1"}))
    for bad in ({"replication": -1}, {"port": 70000}, {"memory_mb": -5}, {"condition": {"": "x"}}):
        with pytest.raises(SvcBadRequestError) as caught:
            client.add_cluster_app(svc.App({"name": unique("cluster-bad"), "command": "sleep 1"}), **bad)
        assert caught.value.code == "invalid_app", bad
    strict = {"replication": 1, "port": 0, "memoryMB": 0, "condition": {}, "content": {}, "extra": 1}
    with pytest.raises(SvcBadRequestError) as caught:  # the task body is strict: unknown fields refused
        client.request("PUT", "/svc/cluster/app/x", body=strict)
    assert caught.value.code == "invalid_app"


def test_hostile_cluster_app_names_stay_one_path_segment(client: SvcClient) -> None:
    for name in ("../applications", "a/b", "x?y=1", "%2e%2e", "a" * 5000):
        before = len(SENT)
        with pytest.raises(svc.SvcRequestError) as caught:
            client.get_cluster_app(name)
        assert caught.value.status_code in (400, 404), caught.value
        assert caught.value.code != "app_not_found"
        sent = [path for _method, path in SENT[before:]]
        assert sent and all(
            p.startswith("/svc/cluster/app/") and "/" not in p[len("/svc/cluster/app/") :] for p in sent
        )


def test_subscriptions_need_a_persistent_connection(served: Served) -> None:
    client = make_client(served, "https")
    with pytest.raises(svc.SvcPersistentConnectionRequiredError) as caught:
        client.subscribe("*", ["ALL"])
    assert caught.value.status_code == 405
    with pytest.raises(svc.SvcPersistentConnectionRequiredError):
        client.subscribe("anything")
    with pytest.raises(svc.SvcPersistentConnectionRequiredError):
        client.unsubscribe("nope")
    with pytest.raises(svc.SvcPersistentConnectionRequiredError):
        client.request("DELETE", "/svc/app/anything/subscribe", query={"subscription_id": "nope"})


@pytest.mark.parametrize("transport", PERSISTENT)
def test_subscriptions(served: Served, transport: str) -> None:
    client = make_client(served, transport)
    name = unique("sub", transport)
    client.add_app(svc.App({"name": name, "command": "sleep 300", "shell": True}))
    per_app: list[svc.AppEvent] = []
    every: list[svc.AppEvent] = []
    try:
        one = client.subscribe(name, ["STATUS"], callback=per_app.append)
        assert one.app_name == name
        assert one.events == ["STATUS"]
        everything = client.subscribe("*", ["STATUS"], callback=every.append)
        client.disable_app(name)
        eventually(lambda: len(per_app) == 1 and any(e.app_name == name for e in every), what="STATUS events")
        assert per_app[0].event_type == "STATUS"
        assert per_app[0].data["enabled"] is False
        removed = client.request(
            "DELETE", f"/svc/app/{name}/subscribe", query={"subscription_id": one.subscription_id}
        ).json()
        assert removed["removed"] is True
        client.unsubscribe(everything.subscription_id)
    finally:
        client.delete_app(name)
        client.close()


def test_forwarding_header_to_a_target_that_is_not_allowed(client: SvcClient) -> None:
    client.forward_to = "198.51.100.7:6059"
    with pytest.raises(svc.SvcForbiddenError) as caught:
        client.list_apps()
    assert caught.value.code == "target_not_allowed"
    client.forward_to = None
    assert isinstance(client.list_apps(), list)


def test_worker_operations_refuse_a_bogus_process_key(served: Served, transport: str) -> None:
    env: dict[str, Any] = {"SVC_PROCESS_KEY": "bogus-key", "SVC_APPLICATION_NAME": "no-such-worker"}
    worker = svc.SvcWorker(client=make_client(served, transport, identity=""), env=env)
    with pytest.raises(svc.SvcError):
        worker.fetch_task(max_retries=0)
    with pytest.raises(svc.SvcError):
        worker.send_task_result(b"x")
    worker.close()


@pytest.mark.parametrize("transport", PERSISTENT)
def test_a_large_first_request_authenticates_the_connection_first(
    served: Served, tmp_path: Path, transport: str
) -> None:
    """The daemon takes at most 1 MiB before a connection authenticated: a 3 MiB upload as the very
    first request of a new connection still succeeds."""
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(3 * 1024 * 1024))
    client = make_client(served, transport)
    remote = tmp_path / f"big-remote-{transport}.bin"
    client.upload_file(str(source), str(remote))
    assert remote.read_bytes() == source.read_bytes()
    client.close()


@pytest.mark.parametrize(
    "base_url",
    ["", "ftp://host", "https://user:pw@host", "https://host/?q=1", "https://host:99999", "not a url"],
)
def test_hostile_base_urls_are_refused(base_url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        svc.SvcClient(base_url, ssl_verify=False)


def test_hostile_names_stay_one_path_segment(client: SvcClient) -> None:
    for name in ("../applications", "a/b", "x?y=1", "%2e%2e", "a" * 5000):
        with pytest.raises(svc.SvcRequestError) as caught:
            client.get_app(name)
        assert caught.value.status_code in (400, 404), caught.value
