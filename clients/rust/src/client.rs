//! `SvcClient`: every operation of the API over one transport (REST, TCP or WSS), with the token
//! contract (static bearer or provider; one refresh and retry after a 401, never after a 403).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use crate::demux::DemuxStats;
use crate::error::{Result, SvcError};
use crate::models::{
    AppOutput, AppRun, Application, ClusterApp, ClusterNode, ClusterTopologyEntry, EventCallback, SubscriptionResult,
};
use crate::token::{StaticToken, TokenProvider};
use crate::transport::{http_client, rest_call, tls_config, Persistent, WireCall, WireReply};

/// How many recent requests `request_log` keeps.
const REQUEST_LOG_LEN: usize = 4096;

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Rest { base_url: String },
    Tcp { address: String },
    Wss { url: String },
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Rest { .. } => "REST",
            Kind::Tcp { .. } => "TCP",
            Kind::Wss { .. } => "WSS",
        }
    }
}

pub(crate) struct Inner {
    kind: Kind,
    tls: Arc<rustls::ClientConfig>,
    http: reqwest::Client,
    token: RwLock<Option<Arc<dyn TokenProvider>>>,
    forward_to: RwLock<Option<String>>,
    connection: tokio::sync::Mutex<Option<Arc<Persistent>>>,
    log: Mutex<VecDeque<(String, String)>>,
}

/// A client of svc. Cheap to clone (all clones share the transport and the token).
#[derive(Clone)]
pub struct SvcClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SvcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SvcClient")
            .field("transport", &self.inner.kind.name())
            .finish_non_exhaustive()
    }
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved characters).
pub(crate) fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn query(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

impl SvcClient {
    pub(crate) fn new(kind: Kind, ca_file: &Path, token: Option<Arc<dyn TokenProvider>>) -> Result<Self> {
        let tls = tls_config(ca_file)?;
        let http = http_client(&tls)?;
        Ok(SvcClient {
            inner: Arc::new(Inner {
                kind,
                tls,
                http,
                token: RwLock::new(token),
                forward_to: RwLock::new(None),
                connection: tokio::sync::Mutex::new(None),
                log: Mutex::new(VecDeque::new()),
            }),
        })
    }

    /// The transport's name: `REST`, `TCP` or `WSS`.
    pub fn transport_name(&self) -> &'static str {
        self.inner.kind.name()
    }

    /// Uses a static bearer from now on (never refreshed).
    pub fn set_token(&self, token: &str) {
        self.set_token_provider(Arc::new(StaticToken::new(token)));
    }

    /// Uses a token provider from now on.
    pub fn set_token_provider(&self, provider: Arc<dyn TokenProvider>) {
        *self.inner.token.write().unwrap_or_else(|e| e.into_inner()) = Some(provider);
    }

    /// Sends no bearer from now on.
    pub fn clear_token(&self) {
        *self.inner.token.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Forwards every request to another instance (`X-Target-Host: host[:port]`), or stops.
    pub fn set_forward_to(&self, target: Option<String>) {
        *self.inner.forward_to.write().unwrap_or_else(|e| e.into_inner()) = target;
    }

    fn provider(&self) -> Option<Arc<dyn TokenProvider>> {
        self.inner.token.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Method and path of the most recent requests sent (no query, no headers): a diagnostic.
    pub fn request_log(&self) -> Vec<(String, String)> {
        self.inner
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// The persistent connection, opened on first use (TCP and WSS only). After a disconnect it
    /// stays closed, so later calls fail with `TransportDisconnected` at once; `reconnect` opens
    /// a new one.
    async fn connection(&self, bearer: Option<&str>) -> Result<Option<Arc<Persistent>>> {
        if let Kind::Rest { .. } = self.inner.kind {
            return Ok(None);
        }
        let mut slot = self.inner.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(Some(connection.clone()));
        }
        let connection = self.open(bearer).await?;
        *slot = Some(connection.clone());
        Ok(Some(connection))
    }

    async fn open(&self, bearer: Option<&str>) -> Result<Arc<Persistent>> {
        match &self.inner.kind {
            Kind::Tcp { address } => Persistent::connect_tcp(address, self.inner.tls.clone()).await,
            Kind::Wss { url } => Persistent::connect_wss(url, self.inner.tls.clone(), bearer).await,
            Kind::Rest { .. } => Err(SvcError::Other("REST has no persistent connection".into())),
        }
    }

    /// Closes the persistent connection (if any) and opens a new one: needed after a token
    /// refresh, since the daemon pins the principal to a connection. Subscriptions of the old
    /// connection are gone (their callbacks got `__disconnected__`).
    pub async fn reconnect(&self) -> Result<()> {
        if let Kind::Rest { .. } = self.inner.kind {
            return Ok(());
        }
        let bearer = match self.provider() {
            Some(p) => Some(p.access_token().await?),
            None => None,
        };
        let mut slot = self.inner.connection.lock().await;
        if let Some(old) = slot.take() {
            old.close();
        }
        *slot = Some(self.open(bearer.as_deref()).await?);
        Ok(())
    }

    /// Closes the persistent connection; later calls fail with `TransportDisconnected`.
    pub async fn close(&self) {
        if let Some(connection) = self.inner.connection.lock().await.as_ref() {
            connection.close();
        }
    }

    /// Waits until the persistent connection is closed (at once for REST or none opened).
    pub async fn closed(&self) {
        let connection = self.inner.connection.lock().await.clone();
        if let Some(connection) = connection {
            connection.closed().await;
        }
    }

    /// Whether the persistent connection is closed.
    pub async fn is_closed(&self) -> bool {
        self.inner
            .connection
            .lock()
            .await
            .as_ref()
            .is_some_and(|c| c.is_closed())
    }

    /// The demultiplexer's counters (zeros for REST or before the first call).
    pub async fn demux_stats(&self) -> DemuxStats {
        match self.inner.connection.lock().await.as_ref() {
            Some(connection) => connection.stats(),
            None => DemuxStats::default(),
        }
    }

    /// Registers the callback of a subscription made elsewhere (e.g. by `add_app` with
    /// `subscribe_events`); events that arrived before are delivered first, in order.
    pub async fn register_event_callback(&self, subscription_id: &str, callback: EventCallback) -> Result<()> {
        // Opening the connection here (WSS) must carry the bearer at upgrade like any call.
        let bearer = match self.provider() {
            Some(p) => Some(p.access_token().await?),
            None => None,
        };
        let connection = self
            .connection(bearer.as_deref())
            .await?
            .ok_or_else(|| self.unsupported("event callbacks"))?;
        connection.demux().register_callback(subscription_id, callback);
        Ok(())
    }

    fn unsupported(&self, feature: &str) -> SvcError {
        SvcError::UnsupportedFeature {
            feature: feature.to_string(),
            transport: self.transport_name().to_string(),
        }
    }

    async fn dispatch(&self, call: &WireCall, bearer: Option<&str>) -> Result<WireReply> {
        {
            let mut log = self.inner.log.lock().unwrap_or_else(|e| e.into_inner());
            if log.len() == REQUEST_LOG_LEN {
                log.pop_front();
            }
            log.push_back((call.method.clone(), call.path.clone()));
        }
        match &self.inner.kind {
            Kind::Rest { base_url } => rest_call(&self.inner.http, base_url, call).await,
            _ => {
                let connection = self.connection(bearer).await?.ok_or(SvcError::TransportDisconnected)?;
                connection.call(call).await
            }
        }
    }

    /// Sends one request and returns the answer whatever its status. Adds the bearer and
    /// `X-Target-Host`; after a 401 it asks the provider once for a new token, reconnects a
    /// persistent transport and replays the request once. A 403 is never retried.
    pub async fn raw_request(
        &self,
        method: &str,
        path: &str,
        query: Vec<(String, String)>,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<WireReply> {
        let mut call = WireCall {
            method: method.to_string(),
            path: path.to_string(),
            query,
            headers,
            body,
        };
        if let Some(target) = self.inner.forward_to.read().unwrap_or_else(|e| e.into_inner()).clone() {
            call.headers.push(("X-Target-Host".into(), target));
        }
        let provider = self.provider();
        let Some(provider) = provider else {
            return self.dispatch(&call, None).await;
        };
        let token = provider.access_token().await?;
        let first = self.dispatch(&with_bearer(&call, &token), Some(&token)).await;
        // A 401 answer, or a WSS upgrade refused with 401.
        let unauthorized = match &first {
            Ok(reply) => reply.status == 401,
            Err(e) => e.status() == Some(401),
        };
        if !unauthorized {
            return first;
        }
        let Some(fresh) = provider.refresh().await? else {
            return first;
        };
        if !matches!(self.inner.kind, Kind::Rest { .. }) {
            let mut slot = self.inner.connection.lock().await;
            if let Some(old) = slot.take() {
                old.close();
            }
            *slot = Some(self.open(Some(&fresh)).await?);
        }
        self.dispatch(&with_bearer(&call, &fresh), Some(&fresh)).await
    }

    /// `raw_request` that turns a non-2xx answer into `SvcError::RequestFailed`.
    pub(crate) async fn request(
        &self,
        method: &str,
        path: &str,
        query: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> Result<WireReply> {
        let mut headers = Vec::new();
        if body.is_some() {
            headers.push(("Content-Type".to_string(), "application/json".to_string()));
        }
        let reply = self
            .raw_request(method, path, query, headers, body.unwrap_or_default())
            .await?;
        if reply.is_success() {
            Ok(reply)
        } else {
            Err(SvcError::from_response(reply.status, &reply.body))
        }
    }

    async fn json(
        &self,
        method: &str,
        path: &str,
        query: Vec<(String, String)>,
        body: Option<&Value>,
    ) -> Result<Value> {
        let body = body.map(serde_json::to_vec).transpose()?;
        let reply = self.request(method, path, query, body).await?;
        if reply.body.is_empty() {
            return Ok(Value::Null);
        }
        Ok(serde_json::from_slice(&reply.body)?)
    }
}

fn with_bearer(call: &WireCall, token: &str) -> WireCall {
    let mut call = call.clone();
    call.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
    call.headers.push(("Authorization".into(), format!("Bearer {token}")));
    call
}

fn removed(value: &Value) -> bool {
    value.get("removed").and_then(Value::as_bool).unwrap_or(true)
}

// Applications.
impl SvcClient {
    /// `GET /svc/applications`.
    pub async fn list_apps(&self) -> Result<Vec<Application>> {
        Ok(serde_json::from_value(
            self.json("GET", "/svc/applications", vec![], None).await?,
        )?)
    }

    /// `GET /svc/app/{name}`.
    pub async fn get_app(&self, name: &str) -> Result<Application> {
        let path = format!("/svc/app/{}", segment(name));
        Ok(serde_json::from_value(self.json("GET", &path, vec![], None).await?)?)
    }

    /// `PUT /svc/app/{name}`; with `subscribe_events` (TCP/WSS) registration and subscription
    /// are atomic and the answer carries `subscription_id` (register its callback with
    /// `register_event_callback`; early events are buffered until then).
    pub async fn add_app(&self, app: &Application, subscribe_events: Option<&[&str]>) -> Result<Application> {
        let name = app
            .name
            .as_deref()
            .ok_or_else(|| SvcError::ConfigurationError("app name required".into()))?;
        let path = format!("/svc/app/{}", segment(name));
        let query = subscribe_events
            .map(|e| vec![("subscribe_events".to_string(), e.join(","))])
            .unwrap_or_default();
        let body = serde_json::to_value(app)?;
        Ok(serde_json::from_value(
            self.json("PUT", &path, query, Some(&body)).await?,
        )?)
    }

    /// `DELETE /svc/app/{name}`; true when it was removed.
    pub async fn delete_app(&self, name: &str) -> Result<bool> {
        let path = format!("/svc/app/{}", segment(name));
        Ok(removed(&self.json("DELETE", &path, vec![], None).await?))
    }

    /// `POST /svc/app/{name}/enable`.
    pub async fn enable_app(&self, name: &str) -> Result<()> {
        self.json("POST", &format!("/svc/app/{}/enable", segment(name)), vec![], None)
            .await
            .map(drop)
    }

    /// `POST /svc/app/{name}/disable`.
    pub async fn disable_app(&self, name: &str) -> Result<()> {
        self.json("POST", &format!("/svc/app/{}/disable", segment(name)), vec![], None)
            .await
            .map(drop)
    }

    /// `GET /svc/app/{name}/health`: true when healthy (body `0`; 503 with `1` when unhealthy).
    pub async fn check_app_health(&self, name: &str) -> Result<bool> {
        let path = format!("/svc/app/{}/health", segment(name));
        let reply = self.raw_request("GET", &path, vec![], vec![], vec![]).await?;
        match reply.status {
            200 => Ok(reply.text().trim() == "0"),
            503 if reply.text().trim() == "1" => Ok(false),
            status => Err(SvcError::from_response(status, &reply.body)),
        }
    }

    /// `GET /svc/app/{name}/output` from a byte position (long poll up to `timeout` seconds).
    pub async fn get_app_output(
        &self,
        name: &str,
        stdout_position: u64,
        stdout_index: Option<u32>,
        stdout_maxsize: Option<u64>,
        process_uuid: Option<&str>,
        timeout: Option<u32>,
    ) -> Result<AppOutput> {
        let mut q = vec![("stdout_position", stdout_position.to_string())];
        if let Some(index) = stdout_index {
            q.push(("stdout_index", index.to_string()));
        }
        if let Some(max) = stdout_maxsize {
            q.push(("stdout_maxsize", max.to_string()));
        }
        if let Some(uuid) = process_uuid {
            q.push(("process_uuid", uuid.to_string()));
        }
        if let Some(t) = timeout {
            q.push(("timeout", t.to_string()));
        }
        let path = format!("/svc/app/{}/output", segment(name));
        let reply = self.request("GET", &path, query(&q), None).await?;
        Ok(AppOutput {
            status_code: reply.status,
            output: reply.text(),
            output_position: reply.header("X-Output-Position").and_then(|v| v.trim().parse().ok()),
            exit_code: reply.header("X-Exit-Code").and_then(|v| v.trim().parse().ok()),
        })
    }
}

// Runs and tasks.
impl SvcClient {
    fn run_query(max_time: i32, lifecycle: i32) -> Vec<(String, String)> {
        let mut q = Vec::new();
        if max_time > 0 {
            q.push(("timeout".to_string(), max_time.to_string()));
        }
        if lifecycle > 0 {
            q.push(("lifecycle".to_string(), lifecycle.to_string()));
        }
        q
    }

    /// `POST /svc/app/syncrun`: runs and waits; the exit code (from `X-Exit-Code`) and output.
    pub async fn run_app_sync(
        &self,
        app: &Application,
        max_time: i32,
        lifecycle: i32,
    ) -> Result<(Option<i32>, String)> {
        let body = serde_json::to_vec(app)?;
        let reply = self
            .request(
                "POST",
                "/svc/app/syncrun",
                Self::run_query(max_time, lifecycle),
                Some(body),
            )
            .await?;
        Ok((
            reply.header("X-Exit-Code").and_then(|v| v.trim().parse().ok()),
            reply.text(),
        ))
    }

    /// `POST /svc/app/run`: starts a run; wait for it with `wait_for_async_run`.
    pub async fn run_app_async(&self, app: &Application, max_time: i32, lifecycle: i32) -> Result<AppRun> {
        let body = serde_json::to_value(app)?;
        let answer = self
            .json(
                "POST",
                "/svc/app/run",
                Self::run_query(max_time, lifecycle),
                Some(&body),
            )
            .await?;
        Ok(serde_json::from_value(answer)?)
    }

    /// `POST /svc/app/{name}/task`: sends a payload to the app's worker and waits for the result.
    pub async fn run_task(&self, name: &str, data: &str, timeout: i32) -> Result<String> {
        let path = format!("/svc/app/{}/task", segment(name));
        let q = if timeout > 0 {
            vec![("timeout".to_string(), timeout.to_string())]
        } else {
            vec![]
        };
        let headers = vec![("Content-Type".to_string(), "text/plain; charset=utf-8".to_string())];
        let reply = self
            .raw_request("POST", &path, q, headers, data.as_bytes().to_vec())
            .await?;
        if !reply.is_success() {
            return Err(SvcError::from_response(reply.status, &reply.body));
        }
        Ok(reply.text())
    }

    /// `DELETE /svc/app/{name}/task`: cancels the caller's outstanding tasks of the app.
    pub async fn cancel_task(&self, name: &str) -> Result<bool> {
        let answer = self
            .json("DELETE", &format!("/svc/app/{}/task", segment(name)), vec![], None)
            .await?;
        Ok(answer
            .get("cancelled")
            .map(|v| v.as_u64().map(|n| n > 0).or(v.as_bool()).unwrap_or(true))
            .unwrap_or(true))
    }
}

// Events (TCP and WSS only; REST answers 405).
impl SvcClient {
    /// Subscribes to events of one application (`app_name`), or of all when it is empty or `*`.
    /// `events`: names of spec "Events" or `ALL` (None: all). The callback, when given, is
    /// registered for the returned id; earlier events are buffered and delivered first.
    pub async fn subscribe(
        &self,
        app_name: &str,
        events: Option<&[&str]>,
        callback: Option<EventCallback>,
    ) -> Result<SubscriptionResult> {
        let path = if app_name.is_empty() || app_name == "*" {
            "/svc/subscribe".to_string()
        } else {
            format!("/svc/app/{}/subscribe", segment(app_name))
        };
        let q = events
            .map(|e| vec![("events".to_string(), e.join(","))])
            .unwrap_or_default();
        let answer: SubscriptionResult = serde_json::from_value(self.json("POST", &path, q, None).await?)?;
        if let Some(callback) = callback {
            self.register_event_callback(&answer.subscription_id, callback).await?;
        }
        Ok(answer)
    }

    /// `DELETE /svc/subscribe?subscription_id=…`; drops the callback and any buffered events.
    pub async fn unsubscribe(&self, subscription_id: &str) -> Result<bool> {
        self.drop_callback(subscription_id).await;
        let q = vec![("subscription_id".to_string(), subscription_id.to_string())];
        Ok(removed(&self.json("DELETE", "/svc/subscribe", q, None).await?))
    }

    /// `DELETE /svc/app/{name}/subscribe?subscription_id=…` (the per-application form).
    pub async fn unsubscribe_app(&self, app_name: &str, subscription_id: &str) -> Result<bool> {
        self.drop_callback(subscription_id).await;
        let q = vec![("subscription_id".to_string(), subscription_id.to_string())];
        let path = format!("/svc/app/{}/subscribe", segment(app_name));
        Ok(removed(&self.json("DELETE", &path, q, None).await?))
    }

    async fn drop_callback(&self, subscription_id: &str) {
        if let Some(connection) = self.inner.connection.lock().await.as_ref() {
            connection.demux().unregister_callback(subscription_id);
        }
    }
}

// Host: labels, configuration, resources, metrics, files.
impl SvcClient {
    /// `GET /svc/labels`.
    pub async fn list_labels(&self) -> Result<Value> {
        self.json("GET", "/svc/labels", vec![], None).await
    }

    /// `PUT /svc/label/{key}?value=…`.
    pub async fn add_label(&self, label: &str, value: &str) -> Result<()> {
        let q = vec![("value".to_string(), value.to_string())];
        self.json("PUT", &format!("/svc/label/{}", segment(label)), q, None)
            .await
            .map(drop)
    }

    /// `DELETE /svc/label/{key}`.
    pub async fn delete_label(&self, label: &str) -> Result<()> {
        self.json("DELETE", &format!("/svc/label/{}", segment(label)), vec![], None)
            .await
            .map(drop)
    }

    /// `GET /svc/config`.
    pub async fn get_config(&self) -> Result<Value> {
        self.json("GET", "/svc/config", vec![], None).await
    }

    /// `POST /svc/config` with a partial document (App Mesh's sectioned form).
    pub async fn set_config(&self, config: &Value) -> Result<Value> {
        self.json("POST", "/svc/config", vec![], Some(config)).await
    }

    /// `GET /svc/resources`.
    pub async fn get_host_resources(&self) -> Result<Value> {
        self.json("GET", "/svc/resources", vec![], None).await
    }

    /// `GET /svc/metrics` (Prometheus text).
    pub async fn get_metrics(&self) -> Result<String> {
        Ok(self.request("GET", "/svc/metrics", vec![], None).await?.text())
    }

    fn file_paths(&self) -> (&'static str, &'static str) {
        match self.inner.kind {
            // WSS clients use the HTTPS data channel (App Mesh 3.0's `/ws` aliases).
            Kind::Wss { .. } => ("/svc/file/upload/ws", "/svc/file/download/ws"),
            _ => ("/svc/file/upload", "/svc/file/download"),
        }
    }

    /// Uploads a local file to `remote_file` (an absolute path on the host), atomically; with
    /// `preserve_permissions` the local mode is applied.
    pub async fn upload_file(&self, local_file: &Path, remote_file: &str, preserve_permissions: bool) -> Result<Value> {
        let body = tokio::fs::read(local_file).await?;
        let mut headers = vec![
            ("X-File-Path".to_string(), segment(remote_file)),
            ("Content-Type".to_string(), "application/octet-stream".to_string()),
        ];
        if preserve_permissions {
            use std::os::unix::fs::PermissionsExt;
            let mode = tokio::fs::metadata(local_file).await?.permissions().mode() & 0o7777;
            headers.push(("X-File-Mode".to_string(), mode.to_string()));
        }
        let reply = self
            .raw_request("POST", self.file_paths().0, vec![], headers, body)
            .await?;
        if !reply.is_success() {
            return Err(SvcError::from_response(reply.status, &reply.body));
        }
        Ok(serde_json::from_slice(&reply.body)?)
    }

    /// Downloads `remote_file` to `local_file`; with `apply_file_attributes` the remote mode is set.
    pub async fn download_file(&self, remote_file: &str, local_file: &Path, apply_file_attributes: bool) -> Result<()> {
        let headers = vec![("X-File-Path".to_string(), segment(remote_file))];
        let reply = self
            .raw_request("GET", self.file_paths().1, vec![], headers, vec![])
            .await?;
        if !reply.is_success() {
            return Err(SvcError::from_response(reply.status, &reply.body));
        }
        tokio::fs::write(local_file, &reply.body).await?;
        if apply_file_attributes {
            if let Some(mode) = reply.header("X-File-Mode").and_then(|m| m.parse::<u32>().ok()) {
                use std::os::unix::fs::PermissionsExt;
                tokio::fs::set_permissions(local_file, std::fs::Permissions::from_mode(mode & 0o7777)).await?;
            }
        }
        Ok(())
    }
}

// Cluster (CONTRACT §9): a stand-alone daemon answers each of these 404 `not_found`.
impl SvcClient {
    /// `GET /svc/cluster/applications`: every cluster application by name, with its placements.
    pub async fn list_cluster_apps(&self) -> Result<BTreeMap<String, ClusterApp>> {
        Ok(serde_json::from_value(
            self.json("GET", "/svc/cluster/applications", vec![], None).await?,
        )?)
    }

    /// `GET /svc/cluster/app/{name}`: one cluster application, with its placements.
    pub async fn get_cluster_app(&self, name: &str) -> Result<ClusterApp> {
        let path = format!("/svc/cluster/app/{}", segment(name));
        Ok(serde_json::from_value(self.json("GET", &path, vec![], None).await?)?)
    }

    /// `PUT /svc/cluster/app/{name}`: defines or replaces a cluster application (the leader
    /// places its replicas); answers it as stored, with the placements as of now. `placements`
    /// of `app` is never sent.
    pub async fn add_cluster_app(&self, name: &str, app: &ClusterApp) -> Result<ClusterApp> {
        let path = format!("/svc/cluster/app/{}", segment(name));
        let body = serde_json::to_value(app)?;
        Ok(serde_json::from_value(
            self.json("PUT", &path, vec![], Some(&body)).await?,
        )?)
    }

    /// `DELETE /svc/cluster/app/{name}`; true when it was removed (its replicas stop once the
    /// leader has withdrawn them).
    pub async fn delete_cluster_app(&self, name: &str) -> Result<bool> {
        let path = format!("/svc/cluster/app/{}", segment(name));
        Ok(removed(&self.json("DELETE", &path, vec![], None).await?))
    }

    /// `GET /svc/cluster/nodes`: every registered node's report, by host name.
    pub async fn list_cluster_nodes(&self) -> Result<BTreeMap<String, ClusterNode>> {
        Ok(serde_json::from_value(
            self.json("GET", "/svc/cluster/nodes", vec![], None).await?,
        )?)
    }

    /// `GET /svc/cluster/topology`: the leader's schedule, host name -> what is placed there.
    pub async fn get_cluster_topology(&self) -> Result<BTreeMap<String, Vec<ClusterTopologyEntry>>> {
        Ok(serde_json::from_value(
            self.json("GET", "/svc/cluster/topology", vec![], None).await?,
        )?)
    }
}

// Authorization and discovery.
impl SvcClient {
    /// `GET /svc/principal/self`: the caller's principal (`principal_id`, `roles`, ...).
    pub async fn get_current_user(&self) -> Result<Value> {
        self.json("GET", "/svc/principal/self", vec![], None).await
    }

    /// `GET /svc/self` (alias of `get_current_user`).
    pub async fn get_self(&self) -> Result<Value> {
        self.json("GET", "/svc/self", vec![], None).await
    }

    /// `GET /svc/principal/self/permissions`.
    pub async fn get_user_permissions(&self) -> Result<Vec<String>> {
        Ok(serde_json::from_value(
            self.json("GET", "/svc/principal/self/permissions", vec![], None)
                .await?,
        )?)
    }

    /// `GET /svc/permissions`: every permission.
    pub async fn list_permissions(&self) -> Result<Vec<String>> {
        Ok(serde_json::from_value(
            self.json("GET", "/svc/permissions", vec![], None).await?,
        )?)
    }

    /// `GET /svc/roles`: role -> permissions.
    pub async fn list_roles(&self) -> Result<Value> {
        self.json("GET", "/svc/roles", vec![], None).await
    }

    /// `POST /svc/role/{role}` with the role's permissions.
    pub async fn update_role(&self, role: &str, permissions: &[&str]) -> Result<()> {
        let body = serde_json::json!(permissions);
        self.json("POST", &format!("/svc/role/{}", segment(role)), vec![], Some(&body))
            .await
            .map(drop)
    }

    /// `DELETE /svc/role/{role}`.
    pub async fn delete_role(&self, role: &str) -> Result<()> {
        self.json("DELETE", &format!("/svc/role/{}", segment(role)), vec![], None)
            .await
            .map(drop)
    }

    /// `GET /svc/principals`: principal id -> record.
    pub async fn list_principals(&self) -> Result<Value> {
        self.json("GET", "/svc/principals", vec![], None).await
    }

    /// `POST /svc/principal/{id}` with `{"roles": [...]}`.
    pub async fn set_principal_roles(&self, principal_id: &str, roles: &[&str]) -> Result<Value> {
        let body = serde_json::json!({ "roles": roles });
        self.json(
            "POST",
            &format!("/svc/principal/{}", segment(principal_id)),
            vec![],
            Some(&body),
        )
        .await
    }

    /// `DELETE /svc/principal/{id}` (keeps a tombstoned record).
    pub async fn delete_principal(&self, principal_id: &str) -> Result<Value> {
        self.json(
            "DELETE",
            &format!("/svc/principal/{}", segment(principal_id)),
            vec![],
            None,
        )
        .await
    }

    /// `GET /svc/auth/config` (public): `flows`, `issuer`, `public_client_id`, ...
    pub async fn get_auth_config(&self) -> Result<Value> {
        self.json("GET", "/svc/auth/config", vec![], None).await
    }

    /// `GET /.well-known/oauth-protected-resource` (public, RFC 9728).
    pub async fn get_protected_resource_metadata(&self) -> Result<Value> {
        self.json("GET", "/.well-known/oauth-protected-resource", vec![], None)
            .await
    }

    /// `GET /openapi.json` (public).
    pub async fn get_openapi(&self) -> Result<Value> {
        self.json("GET", "/openapi.json", vec![], None).await
    }
}

/// Builds a REST client (`https://host:port`).
#[derive(Default)]
pub struct ClientBuilder {
    url: Option<String>,
    ssl_ca_cert: Option<PathBuf>,
    token: Option<Arc<dyn TokenProvider>>,
}

impl ClientBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The REST base URL (default `https://127.0.0.1:6060`, the agent).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// The PEM CA file that signed the server's certificate (required).
    pub fn ssl_ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
        self.ssl_ca_cert = Some(path.into());
        self
    }

    /// A static bearer.
    pub fn jwt_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(Arc::new(StaticToken::new(token)));
        self
    }

    /// A token provider (may refresh once after a 401).
    pub fn token_provider(mut self, provider: Arc<dyn TokenProvider>) -> Self {
        self.token = Some(provider);
        self
    }

    pub fn build(self) -> Result<SvcClient> {
        let base_url = self.url.unwrap_or_else(|| "https://127.0.0.1:6060".into());
        url::Url::parse(&base_url)?;
        let ca = self
            .ssl_ca_cert
            .ok_or_else(|| SvcError::ConfigurationError("ssl_ca_cert is required".into()))?;
        SvcClient::new(Kind::Rest { base_url }, &ca, self.token)
    }
}

macro_rules! persistent_client {
    ($(#[$doc:meta])* $client:ident, $builder:ident, $default_port:expr, $kind:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $client(SvcClient);

        impl std::ops::Deref for $client {
            type Target = SvcClient;
            fn deref(&self) -> &SvcClient {
                &self.0
            }
        }

        impl $client {
            /// The underlying client.
            pub fn client(&self) -> &SvcClient {
                &self.0
            }
        }

        #[doc = concat!("Builds a [`", stringify!($client), "`].")]
        #[derive(Default)]
        pub struct $builder {
            host: Option<String>,
            port: Option<u16>,
            ssl_ca_cert: Option<PathBuf>,
            token: Option<Arc<dyn TokenProvider>>,
        }

        impl $builder {
            pub fn new() -> Self {
                Self::default()
            }

            /// Host and port (default `127.0.0.1` and the transport's default port).
            pub fn address(mut self, host: impl Into<String>, port: u16) -> Self {
                self.host = Some(host.into());
                self.port = Some(port);
                self
            }

            pub fn host(mut self, host: impl Into<String>) -> Self {
                self.host = Some(host.into());
                self
            }

            pub fn port(mut self, port: u16) -> Self {
                self.port = Some(port);
                self
            }

            /// The PEM CA file that signed the server's certificate (required).
            pub fn ssl_ca_cert(mut self, path: impl Into<PathBuf>) -> Self {
                self.ssl_ca_cert = Some(path.into());
                self
            }

            /// A static bearer.
            pub fn jwt_token(mut self, token: impl Into<String>) -> Self {
                self.token = Some(Arc::new(StaticToken::new(token)));
                self
            }

            /// A token provider (may refresh once after a 401; the connection is then reopened).
            pub fn token_provider(mut self, provider: Arc<dyn TokenProvider>) -> Self {
                self.token = Some(provider);
                self
            }

            pub fn build(self) -> Result<$client> {
                let host = self.host.unwrap_or_else(|| "127.0.0.1".into());
                let port = self.port.unwrap_or($default_port);
                let ca = self.ssl_ca_cert.ok_or_else(|| SvcError::ConfigurationError("ssl_ca_cert is required".into()))?;
                let make: fn(String, u16) -> Kind = $kind;
                Ok($client(SvcClient::new(make(host, port), &ca, self.token)?))
            }
        }
    };
}

persistent_client!(
    /// A client over the TLS TCP transport (framed msgpack; default port 6059).
    SvcClientTCP,
    ClientBuilderTCP,
    6059,
    |host, port| Kind::Tcp { address: format!("{host}:{port}") }
);

persistent_client!(
    /// A client over the WSS transport (sub-protocol `svc-ws`; default port 6058).
    SvcClientWSS,
    ClientBuilderWSS,
    6058,
    |host, port| Kind::Wss { url: format!("wss://{host}:{port}") }
);
