//! The three transports: REST (reqwest over rustls), TCP (rustls, framed msgpack) and WSS
//! (tokio-tungstenite over rustls, one msgpack message per binary frame, sub-protocol `svc-ws`).
//! TCP and WSS share one persistent connection with a reader task feeding the demultiplexer and
//! a writer task draining an outgoing queue.

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use crate::demux::{Demux, DemuxStats};
use crate::error::{Result, SvcError};
use crate::wire::{encode_frame, FrameDecoder, RequestMessage, ResponseMessage, CLIENT_MAX_BODY_BYTES};

/// WebSocket sub-protocol of the WSS transport.
pub const WS_SUBPROTOCOL: &str = "svc-ws";

/// One request, transport-neutral. `Debug` redacts the bearer and the process key.
#[derive(Clone, Default)]
pub struct WireCall {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl std::fmt::Debug for WireCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let secret = k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("x-svc-process-key");
                (k.as_str(), if secret { "<redacted>" } else { v.as_str() })
            })
            .collect();
        f.debug_struct("WireCall")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("headers", &headers)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// One answer, transport-neutral (header names as sent; look them up case-insensitively).
#[derive(Debug, Clone, Default)]
pub struct WireReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl WireReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A rustls configuration trusting the PEM CA certificates in `ca_file` (ring provider).
pub fn tls_config(ca_file: &Path) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca_file)
        .map_err(|e| SvcError::ConfigurationError(format!("CA file {}: {e}", ca_file.display())))?;
    for cert in certs {
        let cert = cert.map_err(|e| SvcError::ConfigurationError(format!("CA file: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| SvcError::ConfigurationError(format!("CA certificate: {e}")))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| SvcError::ConfigurationError(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A reqwest client using that TLS configuration.
pub fn http_client(tls: &Arc<rustls::ClientConfig>) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .use_preconfigured_tls((**tls).clone())
        .build()
        .map_err(|e| SvcError::ConfigurationError(e.to_string()))
}

/// Sends one call over REST.
pub async fn rest_call(http: &reqwest::Client, base_url: &str, call: &WireCall) -> Result<WireReply> {
    let method = reqwest::Method::from_bytes(call.method.as_bytes())
        .map_err(|_| SvcError::Other(format!("bad method {}", call.method)))?;
    let mut url = url::Url::parse(base_url)?;
    url.set_path(&call.path);
    if !call.query.is_empty() {
        url.query_pairs_mut().extend_pairs(call.query.iter());
    }
    let mut request = http.request(method, url);
    for (k, v) in &call.headers {
        request = request.header(k, v);
    }
    if !call.body.is_empty() || call.method == "POST" || call.method == "PUT" {
        request = request.body(call.body.clone());
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter_map(|(k, v)| v.to_str().ok().map(|v| (k.as_str().to_string(), v.to_string())))
        .collect();
    let body = response.bytes().await?.to_vec();
    Ok(WireReply { status, headers, body })
}

/// A persistent TCP or WSS connection with its demultiplexer.
pub struct Persistent {
    demux: Arc<Demux>,
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    closed: watch::Receiver<bool>,
    shutdown: Arc<Shutdown>,
    /// Whether a request carrying a bearer or process key has been answered (frame bound 1 MiB
    /// before that).
    authenticated: std::sync::atomic::AtomicBool,
}

/// Stops a connection once: the demultiplexer, both tasks, and the closed flag.
struct Shutdown {
    demux: Arc<Demux>,
    tasks: Mutex<Vec<AbortHandle>>,
    closed: watch::Sender<bool>,
}

impl Shutdown {
    fn run(&self) {
        self.demux.stop();
        for task in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            task.abort();
        }
        self.closed.send_replace(true);
    }
}

/// Below this body size a first request may go out before the connection authenticated.
const PRE_AUTH_FRAME_BYTES: usize = 1024 * 1024;

impl Persistent {
    fn start<R, W>(reader: R, writer: W) -> Arc<Self>
    where
        R: FnOnce(Arc<Demux>) -> futures_util::future::BoxFuture<'static, ()>,
        W: FnOnce(mpsc::UnboundedReceiver<Vec<u8>>) -> futures_util::future::BoxFuture<'static, ()>,
    {
        let demux = Demux::new();
        let (outgoing, queue) = mpsc::unbounded_channel();
        let (closed_tx, closed) = watch::channel(false);
        let shutdown = Arc::new(Shutdown {
            demux: demux.clone(),
            tasks: Mutex::new(Vec::new()),
            closed: closed_tx,
        });
        let reader_future = reader(demux.clone());
        let writer_future = writer(queue);
        let (s1, s2) = (shutdown.clone(), shutdown.clone());
        let read_task = tokio::spawn(async move {
            reader_future.await;
            s1.run();
        });
        let write_task = tokio::spawn(async move {
            writer_future.await;
            s2.run();
        });
        {
            let mut tasks = shutdown.tasks.lock().unwrap_or_else(|e| e.into_inner());
            tasks.push(read_task.abort_handle());
            tasks.push(write_task.abort_handle());
        }
        Arc::new(Persistent {
            demux,
            outgoing,
            closed,
            shutdown,
            authenticated: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Connects the TLS TCP transport to `host:port` (server name: the host).
    pub async fn connect_tcp(address: &str, tls: Arc<rustls::ClientConfig>) -> Result<Arc<Self>> {
        let host = address.rsplit_once(':').map(|(h, _)| h).unwrap_or(address);
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let server_name =
            ServerName::try_from(host).map_err(|e| SvcError::ConfigurationError(format!("server name: {e}")))?;
        let tcp = TcpStream::connect(address)
            .await
            .map_err(|e| SvcError::ConnectionError(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(server_name, tcp)
            .await
            .map_err(|e| SvcError::ConnectionError(format!("TLS: {e}")))?;
        let (mut read_half, mut write_half) = tokio::io::split(stream);
        Ok(Self::start(
            move |demux| {
                Box::pin(async move {
                    let mut decoder = FrameDecoder::new(CLIENT_MAX_BODY_BYTES);
                    let mut buffer = vec![0u8; 64 * 1024];
                    loop {
                        let n = match read_half.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        let mut bodies = Vec::new();
                        let framed = decoder.push_collect(&buffer[..n], &mut bodies);
                        for body in bodies {
                            match ResponseMessage::decode(&body) {
                                Ok(message) => demux.route(message),
                                Err(_) => return,
                            }
                        }
                        if framed.is_err() {
                            return;
                        }
                    }
                })
            },
            move |mut queue| {
                Box::pin(async move {
                    while let Some(message) = queue.recv().await {
                        if write_half.write_all(&encode_frame(&message)).await.is_err() {
                            return;
                        }
                    }
                    let _ = write_half.shutdown().await;
                })
            },
        ))
    }

    /// Connects the WSS transport to `url` (`wss://host:port`), bearer at upgrade when given.
    pub async fn connect_wss(url: &str, tls: Arc<rustls::ClientConfig>, bearer: Option<&str>) -> Result<Arc<Self>> {
        let parsed = url::Url::parse(url)?;
        let host = parsed
            .host_str()
            .ok_or_else(|| SvcError::InvalidUrl("no host".into()))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = parsed.port_or_known_default().unwrap_or(443);
        let server_name = ServerName::try_from(host.clone())
            .map_err(|e| SvcError::ConfigurationError(format!("server name: {e}")))?;
        let tcp = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| SvcError::ConnectionError(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(server_name, tcp)
            .await
            .map_err(|e| SvcError::ConnectionError(format!("TLS: {e}")))?;
        let mut request = url
            .into_client_request()
            .map_err(|e| SvcError::InvalidUrl(e.to_string()))?;
        request
            .headers_mut()
            .insert("Sec-WebSocket-Protocol", HeaderValue::from_static(WS_SUBPROTOCOL));
        if let Some(token) = bearer {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| SvcError::AuthenticationFailed("the bearer is not a valid header value".into()))?;
            request.headers_mut().insert("Authorization", value);
        }
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(CLIENT_MAX_BODY_BYTES);
        config.max_frame_size = Some(CLIENT_MAX_BODY_BYTES);
        let (socket, _) = tokio_tungstenite::client_async_with_config(request, stream, Some(config))
            .await
            .map_err(|e| match e {
                tokio_tungstenite::tungstenite::Error::Http(response) => {
                    let body = response.body().clone().unwrap_or_default();
                    SvcError::from_response(response.status().as_u16(), &body)
                }
                other => SvcError::ConnectionError(format!("WebSocket upgrade: {other}")),
            })?;
        let (mut sink, mut stream) = socket.split();
        Ok(Self::start(
            move |demux| {
                Box::pin(async move {
                    while let Some(Ok(message)) = stream.next().await {
                        match message {
                            Message::Binary(bytes) => match ResponseMessage::decode(&bytes) {
                                Ok(message) => demux.route(message),
                                Err(_) => return,
                            },
                            Message::Close(_) => return,
                            _ => {}
                        }
                    }
                })
            },
            move |mut queue| {
                Box::pin(async move {
                    while let Some(message) = queue.recv().await {
                        if sink.send(Message::Binary(message.into())).await.is_err() {
                            return;
                        }
                    }
                    let _ = sink.close().await;
                })
            },
        ))
    }

    /// Sends one request and waits for its answer, with no wait cap of its own. A disconnect
    /// fails it with `TransportDisconnected`.
    pub async fn call(&self, call: &WireCall) -> Result<WireReply> {
        let carries_credentials = call
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("x-svc-process-key"));
        let authenticated = self.authenticated.load(std::sync::atomic::Ordering::Acquire);
        if !authenticated && call.body.len() >= PRE_AUTH_FRAME_BYTES && carries_credentials {
            // The daemon bounds frames to 1 MiB until the connection authenticated: a small
            // authenticated request first.
            let probe = WireCall {
                method: "GET".into(),
                path: "/svc/self".into(),
                headers: call
                    .headers
                    .iter()
                    .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                    .cloned()
                    .collect(),
                ..WireCall::default()
            };
            Box::pin(self.call(&probe)).await?;
        }
        let message = RequestMessage {
            uuid: uuid::Uuid::new_v4().to_string(),
            request_uri: call.path.clone(),
            http_method: call.method.clone(),
            client_addr: String::new(),
            headers: call.headers.clone(),
            query: call.query.clone(),
            body: call.body.clone(),
        };
        let answer = self.demux.register_request(&message.uuid)?;
        if self.outgoing.send(message.encode()).is_err() {
            self.demux.unregister_request(&message.uuid);
            return Err(SvcError::TransportDisconnected);
        }
        let response = answer.await.map_err(|_| SvcError::TransportDisconnected)?;
        if carries_credentials && response.http_status < 400 {
            self.authenticated.store(true, std::sync::atomic::Ordering::Release);
        }
        Ok(WireReply {
            status: response.http_status,
            headers: response.headers,
            body: response.body,
        })
    }

    pub fn demux(&self) -> &Arc<Demux> {
        &self.demux
    }

    pub fn stats(&self) -> DemuxStats {
        self.demux.stats()
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Waits until the connection is closed (by either side).
    pub async fn closed(&self) {
        let mut closed = self.closed.clone();
        let _ = closed.wait_for(|c| *c).await;
    }

    /// Closes the connection (the demultiplexer stops with `__disconnected__` to callbacks).
    pub fn close(&self) {
        self.shutdown.run();
    }
}

impl Drop for Persistent {
    fn drop(&mut self) {
        self.shutdown.run();
    }
}
