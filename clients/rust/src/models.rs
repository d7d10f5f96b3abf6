//! Data shapes of the API (App Mesh 3.0 names; fields of CONTRACT §7 and spec "Events").

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The synthetic event type of a disconnect (client-local, or from a gateway).
pub const EVENT_TYPE_DISCONNECTED: &str = "__disconnected__";

/// An event pushed to a subscription (the body of a push; `data` by event type).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppEvent {
    pub subscription_id: String,
    pub event_type: String,
    #[serde(default)]
    pub app_name: String,
    #[serde(default)]
    pub timestamp: i64,
    #[serde(default)]
    pub sequence: u64,
    #[serde(default)]
    pub data: Value,
}

/// Called for each event of a subscription, serially, in arrival order.
pub type EventCallback = Arc<dyn Fn(AppEvent) + Send + Sync>;

/// Called with each new piece of a run's output and its byte position.
pub type OutputFn = Arc<dyn Fn(&str, u64) + Send + Sync>;
/// An optional output handler.
pub type OutputHandler = Option<OutputFn>;

/// An output handler that prints to stdout.
pub fn print_output_handler() -> OutputHandler {
    Some(Arc::new(|text: &str, _position: u64| print!("{text}")))
}

/// The answer of a subscribe: its id, application and events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionResult {
    pub subscription_id: String,
    #[serde(default)]
    pub app_name: String,
    #[serde(default)]
    pub events: Vec<String>,
}

/// One read of an application's output (`GET /svc/app/{name}/output`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppOutput {
    pub status_code: u16,
    pub output: String,
    /// `X-Output-Position`: where the next read starts.
    pub output_position: Option<u64>,
    /// `X-Exit-Code`: present once the process exited.
    pub exit_code: Option<i32>,
}

/// A started asynchronous run (`POST /svc/app/run`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppRun {
    pub name: String,
    pub process_uuid: String,
}

/// An application definition or view. The common fields are typed; every other field of the
/// definition and the runtime fields are kept in `extra` (CONTRACT §7 lists them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Application {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Application {
    /// A definition with this name (none when empty: runs get a generated one) and command, run
    /// through the shell.
    pub fn new(name: &str, command: &str) -> Self {
        Application {
            name: (!name.is_empty()).then(|| name.to_string()),
            command: Some(command.to_string()),
            shell: Some(true),
            ..Default::default()
        }
    }
}

/// A cluster application (`/svc/cluster/app/{name}`, CONTRACT §9): the application definition
/// every replica runs, how many replicas, and what a worker node must offer. Views read from the
/// daemon also carry `placements` (where it runs now); they are never sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterApp {
    /// How many replicas the leader places (0..=10000).
    pub replication: u32,
    /// The service port of each replica (0: none; >0 registers `svc/services/<app>/<host>`).
    pub port: u16,
    /// Memory each replica needs on a node, in MiB.
    #[serde(rename = "memoryMB")]
    pub memory_mb: u64,
    /// Labels a node must carry with these values to run a replica.
    #[serde(default)]
    pub condition: BTreeMap<String, String>,
    /// The application definition; its name, if given, equals the cluster application's name.
    pub content: Application,
    /// The hosts whose topology names the application (answers only).
    #[serde(default, skip_serializing)]
    pub placements: Vec<ClusterPlacement>,
}

impl ClusterApp {
    /// `replication` replicas of `content`, no port, no memory or label condition.
    pub fn new(content: Application, replication: u32) -> Self {
        ClusterApp {
            replication,
            content,
            ..Default::default()
        }
    }
}

/// Where a cluster application runs: a host and when it was placed there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterPlacement {
    pub host: String,
    /// `YYYY-MM-DD HH:MM:SS+00` (UTC).
    pub schedule_time: String,
}

/// One entry of a host's topology (`GET /svc/cluster/topology`): an application placed there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterTopologyEntry {
    pub app: String,
    /// `YYYY-MM-DD HH:MM:SS+00` (UTC).
    pub schedule_time: String,
}

/// A node's report (`GET /svc/cluster/nodes`, by host name).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterNode {
    /// The node's REST address.
    pub svc: String,
    /// Its labels (configured ones, then `HOST_NAME`, `arch`, `os_version`, `WORKER`).
    #[serde(default)]
    pub label: BTreeMap<String, String>,
    /// Whether it is the elected leader.
    #[serde(default)]
    pub leader: bool,
    #[serde(default)]
    pub resource: ClusterNodeResource,
}

/// The resources a node reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterNodeResource {
    pub cpu_cores: u64,
    pub mem_total_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cluster_app_view_reads_placements_and_sends_only_the_definition() {
        let view = json!({
            "replication": 2, "port": 8080, "memoryMB": 64,
            "condition": { "arch": "x86_64" },
            "content": { "name": "web", "command": "serve", "owner": "admin" },
            "placements": [{ "host": "node-a", "schedule_time": "2026-11-24 06:00:00+00" }],
        });
        let app: ClusterApp = serde_json::from_value(view).unwrap();
        assert_eq!((app.replication, app.port, app.memory_mb), (2, 8080, 64));
        assert_eq!(app.content.name.as_deref(), Some("web"));
        assert_eq!(app.content.extra["owner"], json!("admin"));
        assert_eq!(app.placements[0].host, "node-a");
        let sent = serde_json::to_value(&app).unwrap();
        assert!(sent.get("placements").is_none(), "placements are never sent: {sent}");
        assert_eq!(sent["memoryMB"], json!(64));
        assert_eq!(sent["condition"], json!({ "arch": "x86_64" }));
    }

    #[test]
    fn a_new_cluster_app_has_every_required_field() {
        let sent = serde_json::to_value(ClusterApp::new(Application::new("job", "true"), 3)).unwrap();
        for field in ["replication", "port", "memoryMB", "condition", "content"] {
            assert!(sent.get(field).is_some(), "{field} missing from {sent}");
        }
        assert_eq!(sent["replication"], json!(3));
    }

    #[test]
    fn node_reports_and_topology_entries_parse() {
        let nodes: BTreeMap<String, ClusterNode> = serde_json::from_value(json!({
            "node-a": { "svc": "https://node-a:6060", "label": { "WORKER": "true" }, "leader": true,
                        "resource": { "cpu_cores": 2, "mem_total_bytes": 8_589_934_592u64 } },
        }))
        .unwrap();
        assert!(nodes["node-a"].leader);
        assert_eq!(nodes["node-a"].resource.mem_total_bytes, 8_589_934_592);
        let topology: BTreeMap<String, Vec<ClusterTopologyEntry>> =
            serde_json::from_value(json!({ "node-a": [{ "app": "web", "schedule_time": "2026-11-24 06:00:00+00" }] }))
                .unwrap();
        assert_eq!(topology["node-a"][0].app, "web");
    }
}
