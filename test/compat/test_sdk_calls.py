"""App Mesh 3.0's own Python SDK, renamed to svc, against one real svcd: one case per SDK call and
transport (README.md beside this file). A case fails when svc answers the call differently from what
the SDK expects; nothing is skipped except calls the SDK does not offer on a transport."""
import os
import sys
import tempfile
import threading
import time
import uuid

import pytest

import svc
from conftest import make_client

HERE = os.path.dirname(os.path.abspath(__file__))


def unique(prefix, transport):
    return f"{prefix}-{transport}-{uuid.uuid4().hex[:6]}"


def eventually(condition, timeout=30.0, what="condition"):
    """Bounded condition poll: returns the first truthy value of condition()."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- identity, permissions, configuration ---------------------------------------------------------


def test_auth_config(client):
    config = client.get_auth_config()
    for key in ("issuer", "public_client_id", "audience", "scopes", "refresh_token", "flows"):
        assert key in config, key


def test_principal_self(client, served):
    principal = client.get_current_principal()
    assert principal["principal_id"] == served["principals"]["svc-admin"]
    assert "svc-admin" in principal["roles"]
    assert "app-reg" in principal["permissions"]


def test_principal_self_permissions(client):
    permissions = client.get_principal_permissions()
    assert isinstance(permissions, list)
    assert "app-reg" in permissions and "principal-list" in permissions


def test_principals(client, served):
    principals = client.list_principals()
    assert isinstance(principals, dict)
    assert served["principals"]["svc-viewer"] in principals


def test_permissions(client):
    permissions = client.list_permissions()
    assert len(permissions) == 27
    assert {"principal-list", "file-download", "file-upload"} <= set(permissions)


def test_roles(client):
    roles = client.list_roles()
    assert {"svc-admin", "svc-maintenance", "svc-viewer"} <= set(roles)


def test_role_update_delete(client, transport):
    role = f"compat-role-{transport}"
    client.update_role(role, ["app-view", "app-output-view"])
    assert role in client.list_roles()
    client.delete_role(role)
    assert role not in client.list_roles()


def test_principal_update_delete(client, transport):
    principal = f"compat-user-{transport}"
    client.update_principal(principal, {"roles": ["svc-viewer"]})
    assert principal in client.list_principals()
    client.delete_principal(principal)
    # svc keeps a deleted principal as a tombstone (its tokens stay refused); App Mesh drops it.
    after = client.list_principals().get(principal)
    assert after is None or after.get("status") == "tombstoned", after


def test_config_sections(client):
    config = client.get_config()
    for section in ("BaseConfig", "REST", "Registry", "Labels"):
        assert section in config, section


def test_set_log_level(client):
    assert client.set_log_level("DEBUG") == "DEBUG"
    assert client.get_config()["BaseConfig"]["LogLevel"] == "DEBUG"
    assert client.set_log_level("INFO") == "INFO"


def test_labels(client, transport):
    key = f"compat_{transport}"
    client.add_label(key, "yes")
    assert client.list_labels().get(key) == "yes"
    client.delete_label(key)
    assert key not in client.list_labels()


def test_host_resources(client):
    assert isinstance(client.get_host_resources(), dict)


def test_metrics(client):
    assert "# TYPE" in client.get_metrics()


def test_viewer_cannot_register(served, transport):
    viewer = make_client(served, transport, "svc-viewer")
    try:
        with pytest.raises(svc.SvcAuthError) as failure:
            viewer.add_app(svc.App({"name": unique("denied", transport), "command": "sleep 60"}))
        assert failure.value.status_code == 403
    finally:
        viewer.close()


# --- applications ---------------------------------------------------------------------------------


def test_register_with_3_0_fields(client, transport):
    name = unique("fields", transport)
    app = svc.App({
        "name": name,
        "command": "sleep 600",
        "description": "compat",
        "enabled": True,
        "stdout_backup_count": 2,
        "stop_grace_period": "PT3S",
        "env": {"COMPAT": "1"},
        "metadata": {"k": "v"},
        "behavior": {"exit": "restart", "exit_code_actions": {"0": "standby"}},
    })
    try:
        added = client.add_app(app)
        assert added.name == name
        view = client.get_app(name)
        assert view.enabled is True
        assert view.stdout_backup_count == 2
        assert view.stop_grace_period in ("PT3S", "3")  # seconds or ISO 8601 (CONTRACT §7)
        assert view.behavior.exit == "restart"
        assert view.behavior.exit_code_actions == {"0": "standby"}
        assert view.env == {"COMPAT": "1"}
        assert view.owner_principal_id
        assert eventually(lambda: client.get_app(name).pid, what="pid")
    finally:
        client.delete_app(name)


def test_register_cron_schedule(client, transport):
    name = unique("cron", transport)
    try:
        client.add_app(svc.App({"name": name, "command": "true", "cron_schedule": "*/5 * * * *"}))
        assert client.get_app(name).cron_schedule == "*/5 * * * *"
    finally:
        client.delete_app(name)


def test_list_apps(client, transport):
    name = unique("listed", transport)
    try:
        client.add_app(svc.App({"name": name, "command": "sleep 600"}))
        assert name in [app.name for app in client.list_apps()]
    finally:
        client.delete_app(name)


def test_disable_enable(client, transport):
    name = unique("toggle", transport)
    try:
        client.add_app(svc.App({"name": name, "command": "sleep 600"}))
        client.disable_app(name)
        assert client.get_app(name).enabled is False
        client.enable_app(name)
        assert client.get_app(name).enabled is True
    finally:
        client.delete_app(name)


def test_output(client, transport):
    name = unique("output", transport)
    try:
        client.add_app(svc.App({"name": name, "command": "echo compat-output; sleep 600", "shell": True}))
        out = eventually(lambda: (lambda o: o if "compat-output" in (o.output or "") else None)(
            client.get_app_output(name, stdout_position=0, timeout=1)), what="output")
        assert out.status_code == 200
        assert out.output_position and out.output_position > 0
    finally:
        client.delete_app(name)


def test_health(client, transport):
    name = unique("health", transport)
    try:
        client.add_app(svc.App({"name": name, "command": "sleep 600"}))
        assert client.check_app_health(name) is True
    finally:
        client.delete_app(name)


def test_delete(client, transport):
    name = unique("deleted", transport)
    client.add_app(svc.App({"name": name, "command": "sleep 600"}))
    assert client.delete_app(name) is True
    assert client.delete_app(name) is False


# --- runs -----------------------------------------------------------------------------------------


def test_run_app_async_default_timeouts(client):
    chunks = []
    run = client.run_app_async("echo compat-async; exit 3")
    assert run.app_name and run.process_uuid
    exit_code = client.wait_for_async_run(run, lambda data, _position: chunks.append(data), timeout=60)
    assert exit_code == 3
    assert "compat-async" in "".join(chunks)


def test_run_handle_wait(client):
    run = client.run_app_async("echo compat-handle; exit 5")
    assert run.wait(timeout=60) == 5


def test_run_app_sync_default_timeouts(client):
    exit_code, output = client.run_app_sync("echo compat-sync; exit 4")
    assert exit_code == 4
    assert "compat-sync" in output


def test_delete_during_run_wait_s8(client, served, transport):
    """S8: deleting an app while a client waits on its run says "app removed", not an exit code."""
    run = client.run_app_async("echo compat-s8-started; sleep 120")
    outcome = {}
    waiting = threading.Event()
    waiter_client = make_client(served, transport)

    def wait():
        try:
            outcome["exit"] = waiter_client.wait_for_async_run(run, lambda *_: waiting.set(), timeout=60)
        except svc.SvcError as error:
            outcome["error"] = error
        except Exception as error:  # kept for the failure message below, not swallowed
            outcome["unexpected"] = error

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        if not waiting.wait(30):
            # Say what the wait did instead (ended with an exit code or an error, or still polling)
            # and what the daemon says of the run, so a failure here can be told apart.
            app = client.get_app(run.app_name)
            raise AssertionError(
                f"the wait never saw the run's output: outcome {outcome!r}, waiter alive "
                f"{waiter.is_alive()}, app pid {app.pid} starts {app.starts} return_code "
                f"{app.return_code} last_error {getattr(app, 'last_error', None)!r}"
            )
        client.delete_app(run.app_name)
        waiter.join(90)
        assert not waiter.is_alive()
    finally:
        waiter_client.close()
    assert "exit" not in outcome, f"a removed run reported exit {outcome.get('exit')}"
    if transport != "https":
        assert isinstance(outcome["error"], svc.SvcAppRemovedError), repr(outcome.get("error"))


# --- worker task loop -----------------------------------------------------------------------------


def test_worker_task_loop(client, served, transport):
    name = unique("worker", transport)
    env = {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "SVC_COMPAT_CA": served["ca"],
        "SVC_COMPAT_REST_PORT": str(served["ports"]["rest"]),
        "SVC_COMPAT_TCP_PORT": str(served["ports"]["tcp"]),
    }
    try:
        client.add_app(svc.App({
            "name": name,
            "command": f"exec {sys.executable} {os.path.join(HERE, 'worker_app.py')} {transport} 2>&1",
            "shell": True,
            "env": env,
        }))
        try:
            assert client.run_task(name, "ping-1", timeout=60) == "pong:ping-1"
            assert client.run_task(name, "ping-2", timeout=60) == "pong:ping-2"
        except (AssertionError, svc.SvcError) as failure:
            # The worker that failed has usually been restarted: its output is the previous file.
            outputs = [client.get_app_output(name, stdout_position=0, stdout_index=i).output for i in (1, 0)]
            raise AssertionError(f"{failure}\n--- worker output ---\n{''.join(outputs)[-3000:]}") from failure
    finally:
        client.delete_app(name)


# --- files ----------------------------------------------------------------------------------------


def test_file_upload_download(client, transport):
    with tempfile.TemporaryDirectory(prefix="svc-compat-") as tmp:
        local = os.path.join(tmp, "up.bin")
        content = os.urandom(200_000)
        with open(local, "wb") as f:
            f.write(content)
        os.chmod(local, 0o640)
        remote = os.path.join(tmp, f"remote-{transport}.bin")
        client.upload_file(local, remote, preserve_permissions=True)
        back = os.path.join(tmp, "down.bin")
        client.download_file(remote, back, preserve_permissions=True)
        with open(back, "rb") as f:
            assert f.read() == content
        assert os.stat(back).st_mode & 0o777 == 0o640


# --- subscriptions (the SDK offers them on TCP and WSS) --------------------------------------------


@pytest.mark.parametrize("transport", ["tcp", "wss"])
def test_subscribe(client, transport):
    name = unique("sub", transport)
    events = []
    seen = threading.Event()

    def on_event(event):
        events.append(event)
        if event.event_type == "STATUS":
            seen.set()

    try:
        client.add_app(svc.App({"name": name, "command": "sleep 600"}))
        subscription = client.subscribe(name, ["STATUS", "EXIT"], on_event)
        assert subscription.subscription_id
        client.disable_app(name)
        assert seen.wait(30), f"no STATUS event, got {[e.event_type for e in events]}"
        assert events[0].app_name == name
        client.unsubscribe(subscription.subscription_id)
    finally:
        client.delete_app(name)


def test_add_app_with_subscription(client, transport):
    if transport == "https":
        # The HTTP client registers with ?subscribe_events= too; without a persistent connection
        # the daemon answers 405 (CONTRACT §5), which the SDK raises.
        with pytest.raises(svc.SvcError):
            client.add_app(svc.App({"name": unique("atomic", transport), "command": "true"}), ["START"])
        return
    name = unique("atomic", transport)
    started = threading.Event()
    try:
        added = client.add_app(svc.App({"name": name, "command": "sleep 600"}), ["START"],
                               lambda e: started.set() if e.event_type == "START" else None)
        assert added.subscription_id
        assert started.wait(30)
    finally:
        client.delete_app(name)
