//! S1–S8 from spec/conformance/S<n>.json, real-daemon steps (spec/README.md "Conformance
//! scenarios as data"), run as data over TCP and WSS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use svc::{AppEvent, AppRun, Application, SvcClient, SvcError};
use tokio::task::JoinHandle;

use crate::daemon::{repo_root, Daemon};

type Events = Arc<Mutex<Vec<AppEvent>>>;
type Outcome = Result<Option<i32>, SvcError>;

const WAIT: Duration = Duration::from_secs(60);

struct Scenario<'a> {
    transport: &'a str,
    daemon: &'a Daemon,
    vars: HashMap<String, Value>,
    clients: HashMap<String, SvcClient>,
    events: HashMap<String, Events>,
    outputs: HashMap<String, Arc<Mutex<String>>>,
    background: HashMap<String, JoinHandle<Outcome>>,
    outcomes: HashMap<String, (Outcome, Instant)>,
    killed_at: Option<Instant>,
}

fn outcome_error_name(e: &SvcError) -> String {
    match e {
        SvcError::AppRemoved => "app_removed".into(),
        SvcError::TransportDisconnected => "transport_disconnected".into(),
        other => other
            .code()
            .map(|c| c.as_str().to_string())
            .unwrap_or_else(|| other.to_string()),
    }
}

impl<'a> Scenario<'a> {
    /// `${x}` alone keeps x's type; otherwise substitutes inside strings.
    fn subst(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => {
                if s.starts_with("${") && s.ends_with('}') && s.matches("${").count() == 1 {
                    return self.lookup(&s[2..s.len() - 1]);
                }
                let mut out = s.clone();
                while let Some(start) = out.find("${") {
                    let end = out[start..].find('}').expect("closing brace") + start;
                    let replacement = match self.lookup(&out[start + 2..end]) {
                        Value::String(v) => v,
                        other => other.to_string(),
                    };
                    out.replace_range(start..=end, &replacement);
                }
                Value::String(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.subst(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.subst(v))).collect()),
            other => other.clone(),
        }
    }

    fn lookup(&self, path: &str) -> Value {
        match path {
            "transport" => return json!(self.transport),
            "admin_principal" => return json!(self.daemon.principal("svc-admin")),
            _ => {}
        }
        let mut parts = path.split('.');
        let mut value = self.vars.get(parts.next().unwrap()).cloned().unwrap_or(Value::Null);
        for part in parts {
            value = value.get(part).cloned().unwrap_or(Value::Null);
        }
        value
    }

    fn client(&self, step: &Value) -> SvcClient {
        self.clients[step["client"].as_str().expect("client")].clone()
    }

    fn str_arg(&self, step: &Value, key: &str) -> String {
        self.subst(&step[key])
            .as_str()
            .unwrap_or_else(|| panic!("{key} of {step}"))
            .to_string()
    }

    fn app(&self, step: &Value, name: Option<String>) -> Application {
        let mut app: Application = serde_json::from_value(self.subst(&step["app"])).expect("app");
        if name.is_some() {
            app.name = name;
        }
        app
    }

    async fn run_step(&mut self, step: &Value) {
        let action = step["do"].as_str().expect("do");
        let r#as = step["as"].as_str().map(str::to_string);
        match action {
            "connect" => {
                let transport = step["transport"].as_str().unwrap_or(self.transport);
                let client = self.daemon.client(transport, Some("svc-admin"));
                self.clients.insert(r#as.unwrap(), client);
            }
            "register" => {
                let client = self.client(step);
                let name = self.str_arg(step, "name");
                let subscribe: Option<Vec<String>> = step.get("subscribe").map(|s| {
                    s.as_array()
                        .unwrap()
                        .iter()
                        .map(|e| e.as_str().unwrap().to_string())
                        .collect()
                });
                let events: Option<Vec<&str>> = subscribe.as_ref().map(|s| s.iter().map(String::as_str).collect());
                let answer = client
                    .add_app(&self.app(step, Some(name)), events.as_deref())
                    .await
                    .expect("register");
                if let Some(events_as) = step["events_as"].as_str() {
                    let sink: Events = Arc::default();
                    let target = sink.clone();
                    let id = answer.subscription_id.clone().expect("subscription_id in the answer");
                    client
                        .register_event_callback(&id, Arc::new(move |e| target.lock().unwrap().push(e)))
                        .await
                        .expect("register callback");
                    self.events.insert(events_as.to_string(), sink);
                }
                if let Some(name) = r#as {
                    self.vars.insert(name, serde_json::to_value(&answer).unwrap());
                }
            }
            "run" => {
                let client = self.client(step);
                let run = client.run_app_async(&self.app(step, None), 0, 300).await.expect("run");
                self.vars.insert(r#as.unwrap(), serde_json::to_value(&run).unwrap());
            }
            "wait_run" => {
                let client = self.client(step);
                let run: AppRun = serde_json::from_value(self.lookup(step["run"].as_str().unwrap())).unwrap();
                let timeout = Duration::from_millis(step["timeout_ms"].as_u64().unwrap());
                let out = Arc::new(Mutex::new(String::new()));
                if let Some(name) = step["output_as"].as_str() {
                    self.outputs.insert(name.to_string(), out.clone());
                }
                let handler: svc::OutputHandler =
                    Some(Arc::new(move |text: &str, _| out.lock().unwrap().push_str(text)));
                let task = tokio::spawn(async move { client.wait_for_async_run(&run, handler, timeout).await });
                let name = r#as.unwrap();
                if step["background"] == json!(true) {
                    self.background.insert(name, task);
                } else {
                    let outcome = task.await.expect("wait task");
                    self.outcomes.insert(name, (outcome, Instant::now()));
                }
            }
            "await_subscribed" => {
                let client = self.client(step);
                let deadline = Instant::now() + WAIT;
                while client.demux_stats().await.subscriptions == 0 {
                    assert!(Instant::now() < deadline, "the run-wait never subscribed");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            "output" => {
                let client = self.client(step);
                let name = self.str_arg(step, "name");
                let out = client
                    .get_app_output(
                        &name,
                        step["position"].as_u64().unwrap(),
                        None,
                        None,
                        None,
                        step["timeout_seconds"].as_u64().map(|t| t as u32),
                    )
                    .await
                    .expect("output");
                let value = json!({ "bytes": out.output.len(), "exit_code": out.exit_code });
                self.vars.insert(r#as.unwrap(), value);
            }
            "advance_clock" => {
                // The client's own timers run on tokio's clock, paused here and advanced past any
                // receive timeout while the inner step's request is outstanding.
                let ms = step["ms"].as_u64().unwrap();
                tokio::time::pause();
                let inner = step["while"].clone();
                let advance = async {
                    tokio::task::yield_now().await;
                    tokio::time::advance(Duration::from_millis(ms)).await;
                };
                let (_, ()) = tokio::join!(Box::pin(self.run_step(&inner)), advance);
                tokio::time::resume();
            }
            "request" => self.request_step(step).await,
            "disable" => {
                self.client(step)
                    .disable_app(&self.str_arg(step, "name"))
                    .await
                    .expect("disable");
            }
            "delete_app" => {
                self.client(step)
                    .delete_app(&self.str_arg(step, "name"))
                    .await
                    .expect("delete");
            }
            "unsubscribe" => {
                self.client(step)
                    .unsubscribe(&self.str_arg(step, "id"))
                    .await
                    .expect("unsubscribe");
            }
            "get_app" => {
                let result = self.client(step).get_app(&self.str_arg(step, "name")).await;
                let value = match result {
                    Ok(app) => serde_json::to_value(app).unwrap(),
                    Err(e) => json!({ "$error": outcome_error_name(&e) }),
                };
                self.vars.insert(r#as.unwrap(), value);
            }
            "await_event" => {
                let events = self.events[step["events"].as_str().unwrap()].clone();
                let wanted = step["event_type"].as_str().unwrap();
                let deadline = Instant::now() + WAIT;
                while !events.lock().unwrap().iter().any(|e| e.event_type == wanted) {
                    assert!(Instant::now() < deadline, "no {wanted} event");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            "kill_daemon" => {
                self.daemon.kill_svcd();
                self.killed_at = Some(Instant::now());
            }
            "await_closed" => {
                let client = self.client(step);
                tokio::time::timeout(WAIT, client.closed())
                    .await
                    .expect("the transport closed");
            }
            "close" => self.client(step).close().await,
            "expect" => self.expect(step).await,
            other => panic!("unknown step {other}"),
        }
    }

    async fn request_step(&mut self, step: &Value) {
        let client = self.client(step);
        let method = step["method"].as_str().unwrap().to_string();
        let path = self.str_arg(step, "path");
        let query: Vec<(String, String)> = step["query"]
            .as_object()
            .map(|q| {
                q.iter()
                    .map(|(k, v)| (k.clone(), self.subst(v).as_str().unwrap().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let count = step["count"].as_u64().unwrap_or(1) as usize;
        let call = |client: SvcClient, method: String, path: String, query: Vec<(String, String)>| async move {
            let reply = client
                .raw_request(&method, &path, query, vec![], vec![])
                .await
                .expect("request");
            assert!(reply.is_success(), "{method} {path}: {} {}", reply.status, reply.text());
            serde_json::from_slice::<Value>(&reply.body).unwrap_or(Value::Null)
        };
        let mut answers = Vec::new();
        if step["sequential"] == json!(true) {
            for _ in 0..count {
                answers.push(call(client.clone(), method.clone(), path.clone(), query.clone()).await);
            }
        } else {
            let tasks: Vec<_> = (0..count)
                .map(|_| tokio::spawn(call(client.clone(), method.clone(), path.clone(), query.clone())))
                .collect();
            for task in tasks {
                answers.push(task.await.expect("request task"));
            }
        }
        if let Some(name) = step["as"].as_str() {
            self.vars.insert(name.to_string(), Value::Array(answers));
        }
    }

    async fn outcome(&mut self, name: &str) -> &(Outcome, Instant) {
        if let Some(task) = self.background.remove(name) {
            let outcome = tokio::time::timeout(WAIT, task)
                .await
                .expect("the wait ended")
                .expect("wait task");
            self.outcomes.insert(name.to_string(), (outcome, Instant::now()));
        }
        &self.outcomes[name]
    }

    fn calls(&self, spec: &str) -> Vec<(String, String)> {
        let (client, method) = spec.split_once('.').unwrap();
        let log = self.clients[client].request_log();
        let matches = |(m, p): &(String, String)| -> bool {
            let parts: Vec<&str> = p.trim_start_matches('/').split('/').collect();
            match method {
                "deleteApplication" => m == "DELETE" && parts.len() == 3 && parts[..2] == ["svc", "app"],
                "getApplication" => m == "GET" && parts.len() == 3 && parts[..2] == ["svc", "app"],
                "unsubscribe" => m == "DELETE" && parts.last() == Some(&"subscribe"),
                other => panic!("unrecorded call {other}"),
            }
        };
        log.into_iter().filter(matches).collect()
    }

    async fn expect(&mut self, step: &Value) {
        if let Some(spec) = step["calls"].as_str() {
            let calls = self.calls(spec);
            if let Some(count) = step["count"].as_u64() {
                assert_eq!(calls.len() as u64, count, "{spec} calls: {calls:?}");
            }
            if let Some(with) = step.get("with") {
                let name = self.subst(&with[0]);
                let wanted = format!("/svc/app/{}", name.as_str().unwrap());
                assert!(calls.iter().any(|(_, p)| *p == wanted), "{spec} with {name}: {calls:?}");
            }
            return;
        }
        if let Some(client) = step["demux"].as_str() {
            let client = self.clients[client].clone();
            let wanted = step["equals"].as_object().unwrap().clone();
            let deadline = Instant::now()
                + if step["eventually"] == json!(true) {
                    WAIT
                } else {
                    Duration::ZERO
                };
            loop {
                let stats = client.demux_stats().await;
                let actual = json!({
                    "dropped_events": stats.dropped_events,
                    "buffered_subscriptions": stats.buffered_subscriptions,
                    "pending_requests": stats.pending_requests,
                });
                if wanted.iter().all(|(k, v)| actual[k] == *v) {
                    return;
                }
                assert!(Instant::now() < deadline, "demux {actual} instead of {wanted:?}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let of = step["of"].as_str().expect("of");
        if self.background.contains_key(of) || self.outcomes.contains_key(of) {
            return self.expect_outcome(of, step).await;
        }
        if self.events.contains_key(of) {
            return self.expect_events(of, step);
        }
        let value = if let Some(out) = self.outputs.get(of) {
            json!(*out.lock().unwrap())
        } else {
            self.lookup(of)
        };
        if let Some(equals) = step.get("equals") {
            assert_eq!(value, self.subst(equals), "{of}");
        }
        if step["absent"] == json!(true) {
            assert!(value.is_null(), "{of} is {value}");
        }
        if let Some(kind) = step["type"].as_str() {
            assert!(kind != "string" || value.is_string(), "{of} is {value}, not a {kind}");
        }
        if let Some(every) = step["every"].as_object() {
            for item in value.as_array().expect("an array") {
                for (k, v) in every {
                    assert_eq!(item[k], self.subst(v), "{of}: {item}");
                }
            }
        }
        if let Some(error) = step["error"].as_str() {
            assert_eq!(value["$error"], json!(error), "{of}");
        }
    }

    async fn expect_outcome(&mut self, of: &str, step: &Value) {
        let killed_at = self.killed_at;
        let (outcome, at) = self.outcome(of).await;
        if let Some(error) = step["error"].as_str() {
            match outcome {
                Err(e) => assert_eq!(outcome_error_name(e), error, "{of}: {e}"),
                Ok(v) => panic!("{of}: {v:?} instead of the error {error}"),
            }
            if let Some(ms) = step["within_ms_of_kill"].as_u64() {
                let took = at.duration_since(killed_at.expect("killed"));
                assert!(took <= Duration::from_millis(ms), "{of} came {took:?} after the kill");
            }
        }
        if let Some(equals) = step.get("equals") {
            match outcome {
                Ok(code) => assert_eq!(json!(code), *equals, "{of}"),
                Err(e) => panic!("{of}: {e} instead of {equals}"),
            }
        }
    }

    fn expect_events(&self, of: &str, step: &Value) {
        let events = self.events[of].lock().unwrap().clone();
        let until = step["until"].as_str().unwrap();
        let end = events
            .iter()
            .position(|e| e.event_type == until)
            .expect("the until event")
            + 1;
        let events = &events[..end];
        if step["sequences_gapless"] == json!(true) {
            let seqs: Vec<u64> = events.iter().map(|e| e.sequence).collect();
            let first = seqs[0];
            assert_eq!(
                seqs,
                (first..first + seqs.len() as u64).collect::<Vec<_>>(),
                "sequences"
            );
        }
        if let Some(first) = step["first_type"].as_str() {
            assert_eq!(events[0].event_type, first);
        }
        let stdout: Vec<&AppEvent> = events.iter().filter(|e| e.event_type == "STDOUT").collect();
        if let Some(text) = step["stdout_text"].as_str() {
            let joined: String = stdout.iter().map(|e| e.data["output"].as_str().unwrap_or("")).collect();
            assert_eq!(joined, text);
        }
        if step["last_stdout_finished"] == json!(true) {
            assert_eq!(stdout.last().expect("a STDOUT event").data["finished"], json!(true));
        }
    }
}

async fn run_scenario(id: &str, transport: &str) {
    let path = repo_root().join(format!("spec/conformance/{id}.json"));
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(spec["transports"].as_array().unwrap().contains(&json!(transport)));
    let fresh = (spec["daemon"]["fresh"] == json!(true)).then(|| Daemon::start(&[]));
    let daemon = fresh.as_ref().unwrap_or_else(|| Daemon::shared());
    let mut scenario = Scenario {
        transport,
        daemon,
        vars: HashMap::new(),
        clients: HashMap::new(),
        events: HashMap::new(),
        outputs: HashMap::new(),
        background: HashMap::new(),
        outcomes: HashMap::new(),
        killed_at: None,
    };
    for step in spec["daemon"]["steps"].as_array().unwrap() {
        scenario.run_step(step).await;
    }
    for client in scenario.clients.values() {
        client.close().await;
    }
}

macro_rules! scenarios {
    ($($name:ident: $id:literal $transport:literal;)*) => {
        $(
            // current_thread: S1 pauses and advances tokio's clock (only that flavour can).
            #[tokio::test(flavor = "current_thread")]
            async fn $name() {
                run_scenario($id, $transport).await;
            }
        )*

        const COVERED: &[&str] = &[$($id),*];
    };
}

scenarios! {
    s1_tcp: "S1" "tcp"; s1_wss: "S1" "wss";
    s2_tcp: "S2" "tcp"; s2_wss: "S2" "wss";
    s3_tcp: "S3" "tcp"; s3_wss: "S3" "wss";
    s4_tcp: "S4" "tcp"; s4_wss: "S4" "wss";
    s5_tcp: "S5" "tcp"; s5_wss: "S5" "wss";
    s6_tcp: "S6" "tcp"; s6_wss: "S6" "wss";
    s7_tcp: "S7" "tcp"; s7_wss: "S7" "wss";
    s8_tcp: "S8" "tcp"; s8_wss: "S8" "wss";
}

#[test]
fn every_scenario_file_is_run() {
    let dir = repo_root().join("spec/conformance");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(id) = name.strip_suffix(".json") {
            assert!(COVERED.contains(&id), "{id} is not run");
        }
    }
}
