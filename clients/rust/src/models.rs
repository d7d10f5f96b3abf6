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
