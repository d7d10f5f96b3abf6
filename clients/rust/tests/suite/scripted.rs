//! The scripted-server halves of spec/conformance/S<n>.json (`scripted.transcript`): a local TLS
//! socket speaking the TCP framing, whose every answer the transcript decides, against the TCP
//! client. The server's certificate is the shared test daemon's (issued for 127.0.0.1).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use svc::wire::{encode_frame, FrameDecoder, RequestMessage, ResponseMessage, CLIENT_MAX_BODY_BYTES};
use svc::{AppEvent, ClientBuilderTCP, SvcClient, SvcError};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;

use crate::daemon::{repo_root, Daemon};

type Writer = Arc<tokio::sync::Mutex<Option<WriteHalf<TlsStream<TcpStream>>>>>;
type Reply = Result<Value, SvcError>;
const WAIT: Duration = Duration::from_secs(30);

struct Server {
    writer: Writer,
    requests: mpsc::UnboundedReceiver<RequestMessage>,
    current: Option<RequestMessage>,
    /// `answer_every_request`: (status, body) answered by the reader at once.
    auto: Arc<Mutex<Option<(u16, Value)>>>,
    reader: JoinHandle<()>,
}

fn ssl_file(name: &str) -> PathBuf {
    PathBuf::from(Daemon::shared().field("home"))
        .join("work/ssl")
        .join(name)
}

fn answer_bytes(request: &RequestMessage, status: u16, body: &Value) -> Vec<u8> {
    let body = match body.get("echo").and_then(Value::as_str) {
        Some("request_uri") => json!({ "name": request.request_uri }),
        _ => body.clone(),
    };
    let message = ResponseMessage {
        uuid: request.uuid.clone(),
        request_uri: request.request_uri.clone(),
        http_status: status,
        body_msg_type: "application/json".into(),
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: serde_json::to_vec(&body).unwrap(),
    };
    encode_frame(&message.encode())
}

fn push_bytes(subscription_id: &str, sequence: u64, event_type: &str, data: &Value) -> Vec<u8> {
    let body = json!({
        "subscription_id": subscription_id, "event_type": event_type, "app_name": "a",
        "timestamp": 0, "sequence": sequence, "data": data,
    });
    let message = ResponseMessage {
        uuid: uuid::Uuid::new_v4().to_string(),
        request_uri: "/svc/event".into(),
        http_status: 200,
        body_msg_type: "application/json".into(),
        headers: vec![
            ("X-Subscription-Id".into(), subscription_id.into()),
            ("X-Event-Type".into(), event_type.into()),
            ("X-App-Name".into(), "a".into()),
        ],
        body: serde_json::to_vec(&body).unwrap(),
    };
    encode_frame(&message.encode())
}

async fn read_requests(
    mut reader: ReadHalf<TlsStream<TcpStream>>,
    requests: mpsc::UnboundedSender<RequestMessage>,
    writer: Writer,
    auto: Arc<Mutex<Option<(u16, Value)>>>,
) {
    let mut decoder = FrameDecoder::new(CLIENT_MAX_BODY_BYTES);
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for body in decoder.push(&buffer[..n]).expect("client frames") {
            let request = RequestMessage::decode(&body).expect("a client request");
            let answer = auto.lock().unwrap().clone();
            match answer {
                Some((status, body)) => {
                    if let Some(w) = writer.lock().await.as_mut() {
                        let _ = w.write_all(&answer_bytes(&request, status, &body)).await;
                    }
                }
                None => {
                    let _ = requests.send(request);
                }
            }
        }
    }
}

impl Server {
    async fn start() -> (Server, SvcClient) {
        let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(ssl_file("server.pem"))
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        let key = PrivateKeyDer::from_pem_file(ssl_file("server-key.pem")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = ClientBuilderTCP::new()
            .address("127.0.0.1", port)
            .ssl_ca_cert(Daemon::shared().ca())
            .jwt_token("test-token")
            .build()
            .unwrap()
            .client()
            .clone();
        // The client connects on its first call; `connect` makes that happen now.
        let connecting = {
            let client = client.clone();
            tokio::spawn(async move { client.reconnect().await })
        };
        let (tcp, _) = listener.accept().await.unwrap();
        let stream = tokio_rustls::TlsAcceptor::from(Arc::new(config))
            .accept(tcp)
            .await
            .unwrap();
        connecting.await.unwrap().expect("client connected");
        let (reader, writer) = tokio::io::split(stream);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Some(writer)));
        let (tx, requests) = mpsc::unbounded_channel();
        let auto = Arc::new(Mutex::new(None));
        let reader = tokio::spawn(read_requests(reader, tx, writer.clone(), auto.clone()));
        (
            Server {
                writer,
                requests,
                current: None,
                auto,
                reader,
            },
            client,
        )
    }

    async fn write(&self, bytes: &[u8]) {
        self.writer
            .lock()
            .await
            .as_mut()
            .expect("connection open")
            .write_all(bytes)
            .await
            .expect("write");
    }
}

struct Transcript {
    server: Server,
    client: SvcClient,
    replies: HashMap<String, Vec<JoinHandle<Reply>>>,
    results: HashMap<String, Vec<Reply>>,
    events: HashMap<String, Arc<Mutex<Vec<AppEvent>>>>,
}

fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|x| contains(x, v))),
        (Value::Array(a), Value::Array(e)) => a.len() == e.len() && a.iter().zip(e).all(|(x, y)| contains(x, y)),
        _ => actual == expected,
    }
}

impl Transcript {
    async fn results(&mut self, name: &str) -> &Vec<Reply> {
        if let Some(handles) = self.replies.remove(name) {
            let mut results = Vec::new();
            for handle in handles {
                results.push(tokio::time::timeout(WAIT, handle).await.expect("answered").unwrap());
            }
            self.results.insert(name.to_string(), results);
        }
        &self.results[name]
    }

    async fn step(&mut self, entry: &Value) {
        if let Some(action) = entry["client"].as_str() {
            return self.client_step(action, entry).await;
        }
        if let Some(action) = entry["server"].as_str() {
            return self.server_step(action, entry).await;
        }
        if let Some(clock) = entry.get("client_clock") {
            // No client timer may fire while the clock runs far past any receive timeout. The
            // clock is paused only for this step: a paused clock would also fire this test's own
            // timeouts while it waits for socket data.
            tokio::time::pause();
            tokio::time::advance(Duration::from_millis(clock["advance_ms"].as_u64().unwrap())).await;
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            tokio::time::resume();
            return;
        }
        self.expect(&entry["expect"]).await;
    }

    async fn client_step(&mut self, action: &str, entry: &Value) {
        match action {
            "request" => {
                let count = entry["count"].as_u64().unwrap_or(1);
                let handles = (0..count)
                    .map(|i| {
                        let client = self.client.clone();
                        let method = entry["method"].as_str().unwrap().to_string();
                        let path = entry["path"].as_str().unwrap().replace("${i}", &i.to_string());
                        tokio::spawn(async move {
                            let reply = client.raw_request(&method, &path, vec![], vec![], vec![]).await?;
                            Ok(serde_json::from_slice(&reply.body).unwrap_or(Value::Null))
                        })
                    })
                    .collect();
                self.replies.insert(entry["as"].as_str().unwrap().to_string(), handles);
            }
            "subscribe" => {
                let sink: Arc<Mutex<Vec<AppEvent>>> = Arc::default();
                self.events
                    .insert(entry["events_as"].as_str().unwrap().to_string(), sink.clone());
                let client = self.client.clone();
                let app = entry["app"].as_str().unwrap().to_string();
                let events: Vec<String> = entry["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e.as_str().unwrap().to_string())
                    .collect();
                let handle = tokio::spawn(async move {
                    let names: Vec<&str> = events.iter().map(String::as_str).collect();
                    let callback = Arc::new(move |e: AppEvent| sink.lock().unwrap().push(e));
                    let answer = client.subscribe(&app, Some(&names), Some(callback)).await?;
                    Ok(serde_json::to_value(answer).unwrap())
                });
                self.replies.insert("subscribe".into(), vec![handle]);
            }
            "await" => {
                let name = entry["of"].as_str().unwrap().to_string();
                for result in self.results(&name).await {
                    assert!(result.is_ok(), "{name}: {result:?}");
                }
            }
            other => panic!("unknown client action {other}"),
        }
    }

    async fn server_step(&mut self, action: &str, entry: &Value) {
        match action {
            "expect" => {
                let request = tokio::time::timeout(WAIT, self.server.requests.recv())
                    .await
                    .expect("a request arrived")
                    .expect("connection open");
                assert_eq!(request.http_method, entry["method"].as_str().unwrap());
                assert_eq!(request.request_uri, entry["path"].as_str().unwrap());
                for (name, value) in entry["headers"].as_object().into_iter().flatten() {
                    let got = request
                        .headers
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v);
                    assert_eq!(got.map(String::as_str), value.as_str(), "header {name}");
                }
                self.server.current = Some(request);
            }
            "answer" => {
                let request = self.server.current.as_ref().expect("an expected request");
                let bytes = answer_bytes(request, entry["status"].as_u64().unwrap() as u16, &entry["body"]);
                self.server.write(&bytes).await;
            }
            "answer_every_request" => {
                *self.server.auto.lock().unwrap() =
                    Some((entry["status"].as_u64().unwrap() as u16, entry["body"].clone()));
            }
            "push" => {
                let bytes = push_bytes(
                    entry["subscription_id"].as_str().unwrap(),
                    entry["sequence"].as_u64().unwrap(),
                    entry["event_type"].as_str().unwrap_or("STDOUT"),
                    entry.get("data").unwrap_or(&json!({})),
                );
                self.server.write(&bytes).await;
            }
            "burst" => {
                let mut bytes = Vec::new();
                for frame in entry["frames"].as_array().unwrap() {
                    if let Some(push) = frame.get("push") {
                        let id = push["subscription_id"].as_str().unwrap();
                        let kind = push["event_type"].as_str().unwrap_or("STDOUT");
                        bytes.extend(push_bytes(id, push["sequence"].as_u64().unwrap(), kind, &json!({})));
                    } else {
                        let answer = &frame["answer"];
                        let request = self.server.current.as_ref().expect("an expected request");
                        bytes.extend(answer_bytes(
                            request,
                            answer["status"].as_u64().unwrap() as u16,
                            &answer["body"],
                        ));
                    }
                }
                self.server.write(&bytes).await;
            }
            "flood" => {
                let prefix = entry["ids"]["prefix"].as_str().unwrap();
                let count = entry["ids"]["count"].as_u64().unwrap();
                let mut bytes = Vec::new();
                for sequence in
                    entry["sequences"]["from"].as_u64().unwrap()..=entry["sequences"]["to"].as_u64().unwrap()
                {
                    for id in 0..count {
                        bytes.extend(push_bytes(&format!("{prefix}{id}"), sequence, "STDOUT", &json!({})));
                    }
                }
                self.server.write(&bytes).await;
            }
            "reset" => {
                // Drop both halves of the connection (no TLS close_notify).
                self.server.reader.abort();
                let _ = (&mut self.server.reader).await;
                drop(self.server.writer.lock().await.take());
                self.server.requests.close();
            }
            other => panic!("unknown server action {other}"),
        }
    }

    async fn expect(&mut self, check: &Value) {
        if let Some(counter) = check["demux"].as_str() {
            let stats = self.client.demux_stats().await;
            let actual = match counter {
                "buffered_subscriptions" => stats.buffered_subscriptions as u64,
                "dropped_events" => stats.dropped_events,
                "pending_requests" => stats.pending_requests as u64,
                other => panic!("unknown counter {other}"),
            };
            assert_eq!(json!(actual), check["equals"], "{counter}");
            return;
        }
        let of = check["of"].as_str().unwrap().to_string();
        if let Some(events) = self.events.get(&of).cloned() {
            // Callbacks run on their subscription's own thread: even an immediate check gives the
            // delivery a moment (order is what matters; nothing may be missing or extra).
            let deadline = Instant::now()
                + if check["eventually"] == json!(true) {
                    WAIT
                } else {
                    Duration::from_secs(5)
                };
            loop {
                let got: Vec<AppEvent> = events.lock().unwrap().clone();
                let ok = match (check.get("sequences"), check.get("equals")) {
                    (Some(seqs), _) => json!(got.iter().map(|e| e.sequence).collect::<Vec<_>>()) == *seqs,
                    (_, Some(equals)) => contains(&serde_json::to_value(&got).unwrap(), equals),
                    _ => panic!("unknown events check {check}"),
                };
                if ok {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "{of}: {:?} vs {check}",
                    got.iter().map(|e| (&e.event_type, e.sequence)).collect::<Vec<_>>()
                );
                tokio::task::yield_now().await;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        if check["pending"] == json!(true) {
            let handles = &self.replies[&of];
            assert!(handles.iter().all(|h| !h.is_finished()), "{of} is no longer pending");
            return;
        }
        let results = self.results(&of).await;
        if let Some(error) = check["error"].as_str() {
            let failed = results.iter().all(|r| match r {
                Err(SvcError::TransportDisconnected) => error == "transport_disconnected",
                _ => false,
            });
            assert!(failed, "{of}: {results:?} instead of {error}");
        }
        if let Some(equals) = check.get("equals") {
            let value = results[0].as_ref().expect("an answer");
            assert!(contains(value, equals), "{of}: {value} does not hold {equals}");
        }
        if let Some(count) = check["count"].as_u64() {
            assert_eq!(results.len() as u64, count);
            // Each answer is its own (matched by uuid): app-<i> got {"name": "/svc/app/app-<i>"}.
            for (i, result) in results.iter().enumerate() {
                let value = result.as_ref().expect("an answer");
                assert!(
                    value["name"].is_null() || value["name"] == json!(format!("/svc/app/app-{i}")),
                    "{i}: {value}"
                );
            }
        }
    }
}

async fn run_transcript(id: &str) {
    let path = repo_root().join(format!("spec/conformance/{id}.json"));
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let entries = spec["scripted"]["transcript"].as_array().expect("a transcript").clone();
    let (server, client) = Server::start().await;
    let mut transcript = Transcript {
        server,
        client,
        replies: HashMap::new(),
        results: HashMap::new(),
        events: HashMap::new(),
    };
    for entry in &entries {
        transcript.step(entry).await;
    }
    transcript.client.close().await;
}

macro_rules! transcripts {
    ($($name:ident: $id:literal;)*) => {
        $(
            #[tokio::test(flavor = "current_thread")]
            async fn $name() {
                run_transcript($id).await;
            }
        )*

        const COVERED: &[&str] = &[$($id),*];
    };
}

transcripts! {
    s1_scripted: "S1";
    s2_scripted: "S2";
    s4_scripted: "S4";
    s5_scripted: "S5";
    s7_scripted: "S7";
}

#[test]
fn every_transcript_is_run() {
    for entry in std::fs::read_dir(repo_root().join("spec/conformance")).unwrap() {
        let path = entry.unwrap().path();
        let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let id = spec["id"].as_str().unwrap();
        if spec.get("scripted").is_some() {
            assert!(COVERED.contains(&id), "the transcript of {id} is not run");
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_frame_over_the_1_gib_receive_bound_disconnects() {
    let (mut server, client) = Server::start().await;
    let pending = {
        let client = client.clone();
        tokio::spawn(async move { client.raw_request("GET", "/svc/self", vec![], vec![], vec![]).await })
    };
    tokio::time::timeout(WAIT, server.requests.recv())
        .await
        .expect("a request")
        .expect("open");
    // A header announcing 1 GiB + 1: rejected from the header alone, without waiting for a body.
    let mut header = svc::wire::FRAME_MAGIC.to_be_bytes().to_vec();
    header.extend_from_slice(&((CLIENT_MAX_BODY_BYTES as u32) + 1).to_be_bytes());
    server.write(&header).await;
    let outcome = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the waiter was woken")
        .unwrap();
    assert!(matches!(outcome, Err(SvcError::TransportDisconnected)), "{outcome:?}");
    tokio::time::timeout(WAIT, client.closed())
        .await
        .expect("the transport closed");
    let later = client.raw_request("GET", "/svc/self", vec![], vec![], vec![]).await;
    assert!(
        matches!(later, Err(SvcError::TransportDisconnected)),
        "later calls fail at once"
    );
}
