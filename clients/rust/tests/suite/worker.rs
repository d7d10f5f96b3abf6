//! The worker loop against the real daemon: the example worker as a managed process answering
//! `run_task`; 412 for a superseded process; `stop()` cancelling a waiting fetch.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use svc::{Application, SvcClient, SvcError, SvcWorker};

use crate::daemon::Daemon;

/// target/debug/examples/worker: `cargo test` builds the examples; a filtered run
/// (`cargo test --test suite`) builds it here.
fn example_worker() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples/worker");
    if !path.exists() {
        let built = std::process::Command::new(env!("CARGO"))
            .args(["build", "--example", "worker"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build --example worker");
        assert!(built.success() && path.exists(), "{} is not built", path.display());
    }
    path
}

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
async fn the_example_worker_answers_run_task_in_a_managed_process() {
    let daemon = Daemon::shared();
    let client = daemon.client("tcp", Some("svc-admin"));
    let mut app = Application::new("rust-worker", &example_worker().display().to_string());
    app.shell = Some(false);
    app.env = Some(BTreeMap::from([(
        "SSL_CERT_FILE".to_string(),
        daemon.ca().display().to_string(),
    )]));
    client.add_app(&app, None).await.expect("register the worker");
    for payload in ["hello", "{\"n\":1}"] {
        let answer = client.run_task("rust-worker", payload, 60).await.expect("run_task");
        assert_eq!(answer, format!("result:{payload}"));
    }
    client.delete_app("rust-worker").await.expect("delete");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_superseded_process_key_stops_the_worker_with_process_superseded() {
    let daemon = Daemon::shared();
    let client = daemon.client("rest", Some("svc-admin"));
    let app = Application::new("rust-superseded", "printf '%s' \"$SVC_PROCESS_KEY\"; exec sleep 300");
    client.add_app(&app, None).await.expect("register");
    let key = first_output(&client, "rust-superseded").await;
    // A new process supersedes the one the key belongs to.
    client.disable_app("rust-superseded").await.expect("disable");
    client.enable_app("rust-superseded").await.expect("enable");
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get_app("rust-superseded").await.unwrap().pid.is_none() {
        assert!(Instant::now() < deadline, "no new process");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let worker = SvcWorker::with_client(daemon.client("rest", None), key, "rust-superseded".into());
    // The loop stops at the first 412, with no retry (so at once, not after a long poll).
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(20), worker.fetch_task())
        .await
        .expect("at once");
    assert!(matches!(outcome, Err(SvcError::ProcessSuperseded(_))), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    client.delete_app("rust-superseded").await.expect("delete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_a_waiting_fetch() {
    let daemon = Daemon::shared();
    let client = daemon.client("rest", Some("svc-admin"));
    let app = Application::new("rust-cancel", "printf '%s' \"$SVC_PROCESS_KEY\"; exec sleep 300");
    client.add_app(&app, None).await.expect("register");
    let key = first_output(&client, "rust-cancel").await;
    let worker = std::sync::Arc::new(SvcWorker::with_client(
        daemon.client("rest", None),
        key,
        "rust-cancel".into(),
    ));
    let fetching = worker.clone();
    let waiting = tokio::spawn(async move { fetching.fetch_task().await });
    worker.stop();
    let outcome = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("cancelled promptly")
        .unwrap();
    assert!(matches!(outcome, Err(SvcError::Cancelled)), "{outcome:?}");
    client.delete_app("rust-cancel").await.expect("delete");
}
