//! Every operation of spec/openapi.json called through the typed API against the real daemon
//! (a test reads openapi.json and fails if one was not sent), the error codes of
//! spec/errors.json as `ErrorCode` variants, and the token contract (rules 3–4).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use svc::{Application, ClusterApp, ErrorCode, SvcClient, SvcError, SvcWorker, TokenProvider};

use crate::daemon::{repo_root, Daemon};

fn openapi() -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo_root().join("spec/openapi.json")).unwrap()).unwrap()
}

/// `(METHOD, template)` of every operation.
fn operations() -> BTreeSet<(String, String)> {
    let doc = openapi();
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "put", "post", "delete", "patch"] {
            if item.get(method).is_some() {
                ops.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    ops
}

fn matches_template(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(a, b)| (a.starts_with('{') && !b.is_empty()) || a == b)
}

/// Output of `name` until it holds something (the app prints at start).
async fn first_output(client: &SvcClient, name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = client
            .get_app_output(name, 0, None, None, None, Some(2))
            .await
            .expect("output");
        if !out.output.is_empty() {
            return out.output;
        }
        assert!(Instant::now() < deadline, "{name} printed nothing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_is_called() {
    let daemon = Daemon::shared();
    let rest = daemon.client("rest", Some("svc-admin"));
    let tcp = daemon.client("tcp", Some("svc-admin"));
    let wss = daemon.client("wss", Some("svc-admin"));
    let public = daemon.client("rest", None);

    // Applications.
    let app = rest
        .add_app(&Application::new("rust-ops", "sleep 300"), None)
        .await
        .expect("add_app");
    assert_eq!(app.name.as_deref(), Some("rust-ops"));
    assert!(rest
        .list_apps()
        .await
        .unwrap()
        .iter()
        .any(|a| a.name.as_deref() == Some("rust-ops")));
    assert_eq!(
        rest.get_app("rust-ops").await.unwrap().command.as_deref(),
        Some("sleep 300")
    );
    rest.disable_app("rust-ops").await.expect("disable");
    rest.enable_app("rust-ops").await.expect("enable");
    let _healthy: bool = rest.check_app_health("rust-ops").await.expect("health");
    let out = rest
        .get_app_output("rust-ops", 0, Some(0), Some(1024), None, None)
        .await
        .expect("output");
    assert_eq!(out.status_code, 200);

    // Runs.
    let (code, text) = rest
        .run_app_sync(&Application::new("", "echo sync"), 30, 0)
        .await
        .expect("syncrun");
    assert_eq!((code, text.as_str()), (Some(0), "sync\n"));
    let run = rest
        .run_app_async(&Application::new("", "echo async"), 30, 300)
        .await
        .expect("run");
    let exit = rest
        .wait_for_async_run(&run, None, Duration::from_secs(60))
        .await
        .expect("REST wait");
    assert_eq!(exit, Some(0));

    // Events (TCP), both subscribe and both unsubscribe forms.
    let one = tcp
        .subscribe("rust-ops", Some(&["STATUS"]), None)
        .await
        .expect("subscribe");
    assert!(tcp
        .unsubscribe_app("rust-ops", &one.subscription_id)
        .await
        .expect("unsubscribe_app"));
    let all = tcp.subscribe("", Some(&["EXIT"]), None).await.expect("subscribe all");
    assert!(tcp.unsubscribe(&all.subscription_id).await.expect("unsubscribe"));
    let refused = rest.subscribe("rust-ops", None, None).await.expect_err("405 over REST");
    assert_eq!(refused.code(), Some(&ErrorCode::PersistentConnectionRequired));

    // Tasks: a process key read from a managed process's own output, used from here.
    let key_app = Application::new("rust-task", "printf '%s' \"$SVC_PROCESS_KEY\"; exec sleep 300");
    rest.add_app(&key_app, None).await.expect("add task app");
    let key = first_output(&rest, "rust-task").await;
    let worker = SvcWorker::with_client(daemon.client("rest", None), key, "rust-task".into());
    let submitter = rest.clone();
    let submitted = tokio::spawn(async move { submitter.run_task("rust-task", "hello", 60).await });
    let task = worker.fetch_task().await.expect("fetch_task");
    assert_eq!(task.body, b"hello");
    worker
        .send_task_result(
            format!("result:{}", String::from_utf8_lossy(&task.body)).as_bytes(),
            "text/plain",
        )
        .await
        .expect("result");
    assert_eq!(submitted.await.unwrap().expect("run_task"), "result:hello");
    rest.cancel_task("rust-task").await.expect("cancel_task");
    rest.delete_app("rust-task").await.expect("delete task app");

    // Host.
    rest.add_label("rust", "yes").await.expect("add_label");
    assert_eq!(rest.list_labels().await.unwrap()["rust"], json!("yes"));
    rest.delete_label("rust").await.expect("delete_label");
    assert!(rest.get_config().await.expect("config").is_object());
    rest.set_config(&json!({ "REST": { "ForwardTargets": [] } }))
        .await
        .expect("set_config");
    assert!(rest.get_host_resources().await.expect("resources").is_object());
    assert!(!rest.get_metrics().await.expect("metrics").is_empty());

    // Files over REST (data path) and WSS (the /ws data-channel aliases).
    let dir = std::env::temp_dir().join(format!("svc-rust-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let local = dir.join("up.txt");
    std::fs::write(&local, b"file body").unwrap();
    for (client, name) in [(&rest, "rest"), (&wss, "wss")] {
        let remote = dir.join(format!("remote-{name}.txt"));
        rest.upload_file(&local, remote.to_str().unwrap(), true)
            .await
            .expect("upload");
        let back = dir.join(format!("back-{name}.txt"));
        client
            .upload_file(&local, remote.to_str().unwrap(), true)
            .await
            .expect("upload");
        client
            .download_file(remote.to_str().unwrap(), &back, true)
            .await
            .expect("download");
        assert_eq!(std::fs::read(&back).unwrap(), b"file body");
    }
    let _ = std::fs::remove_dir_all(&dir);

    // Authorization.
    let me = rest.get_current_user().await.expect("self");
    assert_eq!(me["principal_id"], json!(daemon.principal("svc-admin")));
    assert_eq!(rest.get_self().await.unwrap()["principal_id"], me["principal_id"]);
    assert!(rest
        .get_user_permissions()
        .await
        .unwrap()
        .contains(&"app-reg".to_string()));
    assert!(rest.list_permissions().await.unwrap().len() >= 27);
    assert!(rest.list_roles().await.unwrap()["svc-viewer"].is_array());
    rest.update_role("rust-role", &["app-view"]).await.expect("update_role");
    rest.delete_role("rust-role").await.expect("delete_role");
    assert!(rest.list_principals().await.unwrap().is_object());
    rest.set_principal_roles("rust-probe", &["svc-viewer"])
        .await
        .expect("set principal");
    rest.delete_principal("rust-probe").await.expect("delete principal");

    // Cluster: the test daemon is stand-alone, so each answers 404 `not_found` (still sent).
    assert_cluster_off(&rest).await;

    // Public discovery, without a bearer.
    assert!(public.get_auth_config().await.expect("auth config")["flows"].is_array());
    assert!(public
        .get_protected_resource_metadata()
        .await
        .expect("metadata")
        .is_object());
    assert!(public.get_openapi().await.expect("openapi")["paths"].is_object());

    assert!(rest.delete_app("rust-ops").await.expect("delete"));

    // Coverage: every operation of openapi.json was sent by one of these clients.
    let mut sent: Vec<(String, String)> = Vec::new();
    for client in [&rest, &tcp, &wss, &public, worker.client()] {
        sent.extend(client.request_log());
    }
    let missing: Vec<_> = operations()
        .into_iter()
        .filter(|(m, t)| !sent.iter().any(|(sm, sp)| sm == m && matches_template(t, sp)))
        .collect();
    assert!(missing.is_empty(), "operations never called: {missing:?}");
}

/// Calls the six cluster operations on a stand-alone daemon: each is refused with `NotFound`
/// (a well-formed PUT body passes validation, which comes before the 404).
async fn assert_cluster_off(client: &SvcClient) {
    let transport = client.transport_name();
    let not_found = |e: SvcError, what: &str| {
        assert_eq!(e.code(), Some(&ErrorCode::NotFound), "{transport} {what}: {e}");
        assert_eq!(e.status(), Some(404), "{transport} {what}");
    };
    not_found(client.list_cluster_apps().await.expect_err("list"), "list_cluster_apps");
    not_found(
        client.get_cluster_app("rust-cluster").await.expect_err("get"),
        "get_cluster_app",
    );
    let app = ClusterApp::new(Application::new("rust-cluster", "sleep 60"), 2);
    not_found(
        client.add_cluster_app("rust-cluster", &app).await.expect_err("add"),
        "add_cluster_app",
    );
    not_found(
        client.delete_cluster_app("rust-cluster").await.expect_err("delete"),
        "delete_cluster_app",
    );
    not_found(
        client.list_cluster_nodes().await.expect_err("nodes"),
        "list_cluster_nodes",
    );
    not_found(
        client.get_cluster_topology().await.expect_err("topology"),
        "get_cluster_topology",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_operations_on_a_stand_alone_daemon() {
    let daemon = Daemon::shared();
    for transport in ["rest", "tcp", "wss"] {
        let admin = daemon.client(transport, Some("svc-admin"));
        assert_cluster_off(&admin).await;

        // Hostile, malformed and oversized names are sent as one encoded segment and refused as
        // names (validation comes before the 404), never routed elsewhere.
        let long = "n".repeat(129);
        for name in ["../applications", "a/b", "bad name!", "x?y=1", "%2e%2e", long.as_str()] {
            let error = admin.get_cluster_app(name).await.expect_err("refused");
            assert_eq!(
                error.code(),
                Some(&ErrorCode::InvalidName),
                "{transport} get {name:?}: {error}"
            );
            let error = admin.delete_cluster_app(name).await.expect_err("refused");
            assert_eq!(
                error.code(),
                Some(&ErrorCode::InvalidName),
                "{transport} delete {name:?}: {error}"
            );
        }
        // A body the daemon's schema refuses is a 400, not the 404 of cluster mode being off.
        let mut bad = ClusterApp::new(Application::new("rust-cluster", "true"), 1);
        bad.condition.insert(String::new(), "x".into());
        let error = admin.add_cluster_app("rust-cluster", &bad).await.expect_err("400");
        assert_eq!(error.status(), Some(400), "{transport}: {error}");

        // The access rule comes before the 404: a viewer may not define one.
        let viewer = daemon.client(transport, Some("svc-viewer"));
        let app = ClusterApp::new(Application::new("rust-cluster", "true"), 1);
        let error = viewer.add_cluster_app("rust-cluster", &app).await.expect_err("403");
        assert_eq!(error.code(), Some(&ErrorCode::Forbidden), "{transport}: {error}");
        admin.close().await;
        viewer.close().await;
    }
}

#[test]
fn every_error_code_is_a_variant() {
    let text = std::fs::read_to_string(repo_root().join("spec/errors.json")).unwrap();
    let codes: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    for (code, info) in &codes {
        let variant = ErrorCode::from_code(code);
        assert!(!matches!(variant, ErrorCode::Unknown(_)), "{code} has no variant");
        assert_eq!(variant.as_str(), code);
        assert_eq!(variant.status(), info["status"].as_u64().map(|s| s as u16), "{code}");
        let body = json!({ "error": code, "message": "m" }).to_string();
        let status = info["status"].as_u64().unwrap() as u16;
        let error = SvcError::from_response(status, body.as_bytes());
        assert_eq!(error.code(), Some(&variant));
        assert_eq!(error.status(), Some(status));
    }
    assert_eq!(
        ErrorCode::all().count(),
        codes.len(),
        "a variant without a code in errors.json"
    );
    assert!(matches!(ErrorCode::from_code("no_such_code"), ErrorCode::Unknown(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_codes_from_the_daemon() {
    let daemon = Daemon::shared();
    for transport in ["rest", "tcp", "wss"] {
        let admin = daemon.client(transport, Some("svc-admin"));
        let code = |r: Result<Value, SvcError>| r.expect_err("an error").code().cloned();
        let missing = admin.get_app("rust-no-such-app").await.map(|_| Value::Null);
        assert_eq!(code(missing), Some(ErrorCode::AppNotFound), "{transport}");
        let bad_name = admin.get_app("bad name!").await.map(|_| Value::Null);
        assert_eq!(code(bad_name), Some(ErrorCode::InvalidName), "{transport}");
        let viewer = daemon.client(transport, Some("svc-viewer"));
        let forbidden = viewer
            .add_app(&Application::new("rust-forbidden", "true"), None)
            .await
            .map(|_| Value::Null);
        assert_eq!(code(forbidden), Some(ErrorCode::Forbidden), "{transport}");
        let machine = daemon.client(transport, Some("machine"));
        let run = machine
            .run_app_async(&Application::new("", "true"), 0, 0)
            .await
            .map(|_| Value::Null);
        assert_eq!(run.expect_err("403").status(), Some(403), "{transport}");
        admin.close().await;
        viewer.close().await;
        machine.close().await;
    }
    let anonymous = daemon.client("rest", None);
    assert_eq!(
        anonymous.list_apps().await.expect_err("401").code(),
        Some(&ErrorCode::Unauthorized)
    );
    let wrong = daemon.client("rest", None);
    wrong.set_token("not-a-jwt");
    assert_eq!(
        wrong.list_apps().await.expect_err("401").code(),
        Some(&ErrorCode::InvalidToken)
    );
    let admin = daemon.client("rest", Some("svc-admin"));
    let obsolete = admin
        .raw_request(
            "GET",
            "/svc/app/x/task",
            vec![("process_key".into(), "k".into())],
            vec![],
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        SvcError::from_response(obsolete.status, &obsolete.body).code(),
        Some(&ErrorCode::ObsoleteProcessKey)
    );
}

/// A provider that hands out `first`, then `second` on refresh, counting refreshes.
struct Rotating {
    first: String,
    second: String,
    refreshed: AtomicUsize,
}

impl TokenProvider for Rotating {
    fn access_token(&self) -> BoxFuture<'_, svc::Result<String>> {
        Box::pin(async move {
            Ok(if self.refreshed.load(Ordering::SeqCst) == 0 {
                self.first.clone()
            } else {
                self.second.clone()
            })
        })
    }

    fn refresh(&self) -> BoxFuture<'_, svc::Result<Option<String>>> {
        Box::pin(async move {
            self.refreshed.fetch_add(1, Ordering::SeqCst);
            Ok(Some(self.second.clone()))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_provider_refreshes_once_after_401_and_never_after_403() {
    let daemon = Daemon::shared();
    for transport in ["rest", "tcp", "wss"] {
        // 401 with a stale token: one refresh, the request replayed once (a new connection on
        // TCP/WSS), success.
        let client = daemon.client(transport, None);
        let provider = Arc::new(Rotating {
            first: "expired".into(),
            second: daemon.token("svc-admin"),
            refreshed: 0.into(),
        });
        client.set_token_provider(provider.clone());
        let me = client.get_current_user().await.expect("after the refresh");
        assert_eq!(me["principal_id"], json!(daemon.principal("svc-admin")), "{transport}");
        assert_eq!(provider.refreshed.load(Ordering::SeqCst), 1, "{transport}: one refresh");

        // 403: no refresh.
        let viewer = daemon.client(transport, None);
        let provider = Arc::new(Rotating {
            first: daemon.token("svc-viewer"),
            second: daemon.token("svc-admin"),
            refreshed: 0.into(),
        });
        viewer.set_token_provider(provider.clone());
        let denied = viewer
            .add_app(&Application::new("rust-denied", "true"), None)
            .await
            .expect_err("403");
        assert_eq!(denied.status(), Some(403), "{transport}");
        assert_eq!(
            provider.refreshed.load(Ordering::SeqCst),
            0,
            "{transport}: refreshed after a 403"
        );

        // A static bearer never refreshes: the 401 stands.
        let fixed = daemon.client(transport, None);
        fixed.set_token("expired");
        assert_eq!(
            fixed.list_apps().await.expect_err("401").status(),
            Some(401),
            "{transport}"
        );
        for c in [client, viewer, fixed] {
            c.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_first_request_on_a_new_connection_is_accepted() {
    // The daemon takes at most 1 MiB before a connection authenticated: the client sends a small
    // authenticated request first, so a 3 MiB upload as the very first request succeeds.
    let daemon = Daemon::shared();
    let dir = std::env::temp_dir().join(format!("svc-rust-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let local = dir.join("large.bin");
    let body: Vec<u8> = (0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    std::fs::write(&local, &body).unwrap();
    for transport in ["tcp", "wss"] {
        let client = daemon.client(transport, Some("svc-admin"));
        let remote = dir.join(format!("remote-{transport}.bin"));
        client
            .upload_file(&local, remote.to_str().unwrap(), false)
            .await
            .expect("a large first request");
        assert_eq!(std::fs::read(&remote).unwrap(), body, "{transport}");
        client.close().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
