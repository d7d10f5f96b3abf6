//! The worker loop of a managed process (spec "Worker loop"): fetch a task
//! (`GET /svc/app/{name}/task`, process key in `X-Svc-Process-Key` only), hand it to the caller,
//! return the result (`PUT`). 412 stops with `ProcessSuperseded`, 400 with `RequestFailed`
//! status 400, `stop()` with `Cancelled`; any other failure is retried after a 100 ms floor.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::{segment, ClientBuilder, SvcClient};
use crate::error::{Result, SvcError};
use crate::transport::WireReply;

/// The fixed retry floor of a failed fetch.
pub const WORKER_RETRY_FLOOR: Duration = Duration::from_millis(100);

/// What a fetch decided (pure: tested without a daemon).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FetchDecision {
    Task,
    /// 204 after the long poll: ask again at once.
    Empty,
    Retry,
}

/// The decision for a fetch's answer; permanent failures are errors.
pub(crate) fn decide_fetch(reply: &WireReply) -> Result<FetchDecision> {
    match reply.status {
        200 => Ok(FetchDecision::Task),
        204 => Ok(FetchDecision::Empty),
        412 => Err(SvcError::ProcessSuperseded(
            "the process key belongs to a superseded process (412)".into(),
        )),
        400 => Err(SvcError::from_response(400, &reply.body)),
        _ => Ok(FetchDecision::Retry),
    }
}

/// One task taken by `fetch_task`.
#[derive(Debug, Clone)]
pub struct WorkerTask {
    pub id: String,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// The worker of a managed process. Reads `SVC_PROCESS_KEY`, `SVC_APPLICATION_NAME` and
/// `SVC_DAEMON_URL`; a missing one is an immediate `ConfigurationError`, never retried.
pub struct SvcWorker {
    client: SvcClient,
    process_key: String,
    app_name: String,
    stop: watch::Sender<bool>,
    poll_seconds: u32,
    last_task: Mutex<Option<String>>,
}

fn require_env(name: &str) -> Result<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Ok(value),
        _ => Err(SvcError::ConfigurationError(format!(
            "{name} is not set: not a managed svc process"
        ))),
    }
}

impl SvcWorker {
    /// A worker from the process environment. `ssl_ca_cert`: the daemon's CA (default: the
    /// file named by `SSL_CERT_FILE`).
    pub fn new(ssl_ca_cert: Option<PathBuf>) -> Result<Self> {
        let process_key = require_env("SVC_PROCESS_KEY")?;
        let app_name = require_env("SVC_APPLICATION_NAME")?;
        let url = require_env("SVC_DAEMON_URL")?;
        let ca = match ssl_ca_cert {
            Some(ca) => ca,
            None => PathBuf::from(require_env("SSL_CERT_FILE")?),
        };
        let client = ClientBuilder::new().url(url).ssl_ca_cert(ca).build()?;
        Ok(Self::with_client(client, process_key, app_name))
    }

    /// A worker with an explicit client, key and application name.
    pub fn with_client(client: SvcClient, process_key: String, app_name: String) -> Self {
        let (stop, _) = watch::channel(false);
        client.clear_token();
        SvcWorker {
            client,
            process_key,
            app_name,
            stop,
            poll_seconds: 30,
            last_task: Mutex::new(None),
        }
    }

    /// The client the worker sends with.
    pub fn client(&self) -> &SvcClient {
        &self.client
    }

    /// The long poll of one fetch, seconds (default 30).
    pub fn set_poll_seconds(&mut self, seconds: u32) {
        self.poll_seconds = seconds.max(1);
    }

    /// Cancels a running or later `fetch_task` (it returns `SvcError::Cancelled`).
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }

    fn path(&self) -> String {
        format!("/svc/app/{}/task", segment(&self.app_name))
    }

    /// Takes the next task, retrying transient failures with the 100 ms floor.
    pub async fn fetch_task(&self) -> Result<WorkerTask> {
        let mut stop = self.stop.subscribe();
        let path = self.path();
        loop {
            if *stop.borrow() {
                return Err(SvcError::Cancelled);
            }
            let started = tokio::time::Instant::now();
            let request = self.client.raw_request(
                "GET",
                &path,
                vec![("timeout".into(), self.poll_seconds.to_string())],
                vec![("X-Svc-Process-Key".into(), self.process_key.clone())],
                vec![],
            );
            let result = tokio::select! {
                r = request => r,
                _ = stop.wait_for(|s| *s) => return Err(SvcError::Cancelled),
            };
            match result.map(|reply| decide_fetch(&reply).map(|d| (d, reply))) {
                Ok(Ok((FetchDecision::Task, reply))) => {
                    let task = WorkerTask {
                        id: reply.header("X-Task-Id").unwrap_or_default().to_string(),
                        content_type: reply
                            .header("Content-Type")
                            .unwrap_or("application/octet-stream")
                            .to_string(),
                        body: reply.body,
                    };
                    *self.last_task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.id.clone());
                    return Ok(task);
                }
                Ok(Ok((FetchDecision::Empty, _))) => continue,
                Ok(Err(permanent)) => return Err(permanent),
                Ok(Ok((FetchDecision::Retry, _))) | Err(_) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(started + WORKER_RETRY_FLOOR) => {}
                        _ = stop.wait_for(|s| *s) => return Err(SvcError::Cancelled),
                    }
                }
            }
        }
    }

    /// Returns the result of the task fetched last (`PUT`, with its `X-Task-Id`).
    pub async fn send_task_result(&self, result: &[u8], content_type: &str) -> Result<()> {
        let mut headers = vec![
            ("X-Svc-Process-Key".to_string(), self.process_key.clone()),
            ("Content-Type".to_string(), content_type.to_string()),
        ];
        if let Some(id) = self.last_task.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            headers.push(("X-Task-Id".to_string(), id));
        }
        let reply = self
            .client
            .raw_request("PUT", &self.path(), vec![], headers, result.to_vec())
            .await?;
        match reply.status {
            200..=299 => Ok(()),
            412 => Err(SvcError::ProcessSuperseded(
                "the process key belongs to a superseded process (412)".into(),
            )),
            status => Err(SvcError::from_response(status, &reply.body)),
        }
    }

    /// The loop: fetch, `handler(task) -> (body, content type)`, return the result; until
    /// `stop()` (`Cancelled`) or a permanent error.
    pub async fn run<F, Fut>(&self, mut handler: F) -> Result<()>
    where
        F: FnMut(WorkerTask) -> Fut,
        Fut: std::future::Future<Output = (Vec<u8>, String)>,
    {
        loop {
            let task = self.fetch_task().await?;
            let (body, content_type) = handler(task).await;
            match self.send_task_result(&body, &content_type).await {
                Ok(()) => {}
                Err(e @ (SvcError::ProcessSuperseded(_) | SvcError::Cancelled)) => return Err(e),
                Err(e) if e.status() == Some(400) => return Err(e),
                Err(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &str) -> WireReply {
        WireReply {
            status,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn fetch_decisions() {
        assert_eq!(decide_fetch(&reply(200, "x")).unwrap(), FetchDecision::Task);
        assert_eq!(decide_fetch(&reply(204, "")).unwrap(), FetchDecision::Empty);
        assert_eq!(decide_fetch(&reply(503, "")).unwrap(), FetchDecision::Retry);
        assert_eq!(decide_fetch(&reply(401, "")).unwrap(), FetchDecision::Retry);
        assert!(matches!(
            decide_fetch(&reply(412, "")),
            Err(SvcError::ProcessSuperseded(_))
        ));
        let rejected = decide_fetch(&reply(400, r#"{"error":"obsolete_process_key","message":"m"}"#)).unwrap_err();
        assert_eq!(rejected.status(), Some(400));
        assert_eq!(rejected.code().map(|c| c.as_str()), Some("obsolete_process_key"));
    }

    #[test]
    fn missing_environment_is_an_immediate_configuration_error() {
        // The test process is not a managed process: SVC_PROCESS_KEY is absent.
        if std::env::var("SVC_PROCESS_KEY").is_err() {
            assert!(matches!(
                SvcWorker::new(Some("/nonexistent".into())),
                Err(SvcError::ConfigurationError(_))
            ));
        }
    }
}
