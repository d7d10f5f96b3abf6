//! Errors of the client: [`SvcError`] and the daemon's error codes ([`ErrorCode`], one variant per
//! code of `spec/errors.json`; a test keeps the two in step).

use std::fmt;

/// Result of every client call.
pub type Result<T> = std::result::Result<T, SvcError>;

/// Every error code the daemon answers with (`{"error": "<code>", "message": "…"}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is malformed. (400)
    BadRequest,
    /// The body is not valid JSON. (400)
    InvalidJson,
    /// The application definition fails validation. (400)
    InvalidApp,
    /// A name in the path does not match ^[A-Za-z0-9_.-]{1,128}$. (400)
    InvalidName,
    /// A query parameter is missing or has a bad value. (400)
    InvalidQuery,
    /// A process key was sent in the query string; it is accepted only in X-Svc-Process-Key. (400)
    ObsoleteProcessKey,
    /// A TCP or WSS message could not be decoded. (400)
    InvalidFrame,
    /// X-Target-Host is not a valid host[:port] (the target instance's TCP API address). (400)
    InvalidTargetHost,
    /// No bearer token was presented. (401)
    Unauthorized,
    /// The bearer token is invalid, expired or from another issuer. (401)
    InvalidToken,
    /// The principal lacks the permission this operation needs. (403)
    Forbidden,
    /// The principal record was deleted. (403)
    PrincipalTombstoned,
    /// System applications cannot be changed through the API. (403)
    SystemApp,
    /// X-Target-Host names an instance that is not an allowed target. (403)
    TargetNotAllowed,
    /// A request carrying X-Svc-Process-Key (worker task RPC) is never forwarded to another instance. (403)
    ProcessKeyNotForwarded,
    /// A process key is accepted only on a loopback or private transport. (403)
    ProcessKeyTransport,
    /// No such resource. (404)
    NotFound,
    /// No application with this name. (404)
    AppNotFound,
    /// No operation at this path. (404)
    RouteNotFound,
    /// The agent serves /auth/* only in builtin auth mode; in external mode sign in at the external identity provider. (404)
    ExternalIdentityProvider,
    /// The path exists but not with this method. (405)
    MethodNotAllowed,
    /// Subscriptions need a persistent connection (TCP or WSS). (405)
    PersistentConnectionRequired,
    /// The operation did not complete within its timeout. (408)
    Timeout,
    /// A conflicting concurrent change. (409)
    Conflict,
    /// The task was cancelled before its result arrived (by its submitter, or its worker exited). (409)
    TaskCancelled,
    /// The process key belongs to a process that was superseded. (412)
    ProcessSuperseded,
    /// The body or frame exceeds the size limit. (413)
    PayloadTooLarge,
    /// Too many connections or requests from this client. (429)
    TooManyConnections,
    /// An unexpected error inside the service. (500)
    Internal,
    /// The forward target could not be reached or its connection failed (refused, TLS verification, closed mid-request). (502)
    TargetUnreachable,
    /// The agent could not reach the daemon or the built-in issuer behind it. (502)
    UpstreamUnavailable,
    /// The bounded queue is full. (503)
    QueueFull,
    /// A dependency is unavailable (for example the token issuer). (503)
    Unavailable,
    /// The connection to the forward target was not established within the connect timeout. (504)
    TargetTimeout,
    /// A code this client version does not know (kept verbatim).
    Unknown(String),
}

const CODES: &[(ErrorCode, &str, u16)] = &[
    (ErrorCode::BadRequest, "bad_request", 400),
    (ErrorCode::InvalidJson, "invalid_json", 400),
    (ErrorCode::InvalidApp, "invalid_app", 400),
    (ErrorCode::InvalidName, "invalid_name", 400),
    (ErrorCode::InvalidQuery, "invalid_query", 400),
    (ErrorCode::ObsoleteProcessKey, "obsolete_process_key", 400),
    (ErrorCode::InvalidFrame, "invalid_frame", 400),
    (ErrorCode::InvalidTargetHost, "invalid_target_host", 400),
    (ErrorCode::Unauthorized, "unauthorized", 401),
    (ErrorCode::InvalidToken, "invalid_token", 401),
    (ErrorCode::Forbidden, "forbidden", 403),
    (ErrorCode::PrincipalTombstoned, "principal_tombstoned", 403),
    (ErrorCode::SystemApp, "system_app", 403),
    (ErrorCode::TargetNotAllowed, "target_not_allowed", 403),
    (ErrorCode::ProcessKeyNotForwarded, "process_key_not_forwarded", 403),
    (ErrorCode::ProcessKeyTransport, "process_key_transport", 403),
    (ErrorCode::NotFound, "not_found", 404),
    (ErrorCode::AppNotFound, "app_not_found", 404),
    (ErrorCode::RouteNotFound, "route_not_found", 404),
    (ErrorCode::ExternalIdentityProvider, "external_identity_provider", 404),
    (ErrorCode::MethodNotAllowed, "method_not_allowed", 405),
    (
        ErrorCode::PersistentConnectionRequired,
        "persistent_connection_required",
        405,
    ),
    (ErrorCode::Timeout, "timeout", 408),
    (ErrorCode::Conflict, "conflict", 409),
    (ErrorCode::TaskCancelled, "task_cancelled", 409),
    (ErrorCode::ProcessSuperseded, "process_superseded", 412),
    (ErrorCode::PayloadTooLarge, "payload_too_large", 413),
    (ErrorCode::TooManyConnections, "too_many_connections", 429),
    (ErrorCode::Internal, "internal", 500),
    (ErrorCode::TargetUnreachable, "target_unreachable", 502),
    (ErrorCode::UpstreamUnavailable, "upstream_unavailable", 502),
    (ErrorCode::QueueFull, "queue_full", 503),
    (ErrorCode::Unavailable, "unavailable", 503),
    (ErrorCode::TargetTimeout, "target_timeout", 504),
];

impl ErrorCode {
    /// Every known code, in `spec/errors.json` order.
    pub fn all() -> impl Iterator<Item = &'static ErrorCode> {
        CODES.iter().map(|(code, _, _)| code)
    }

    /// The code for a wire string (`Unknown` for one this version does not know).
    pub fn from_code(code: &str) -> Self {
        CODES
            .iter()
            .find(|(_, name, _)| *name == code)
            .map(|(c, _, _)| c.clone())
            .unwrap_or_else(|| ErrorCode::Unknown(code.to_string()))
    }

    /// The wire string of the code.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Unknown(code) => code,
            known => CODES
                .iter()
                .find(|(c, _, _)| c == known)
                .map(|(_, n, _)| *n)
                .unwrap_or(""),
        }
    }

    /// The HTTP status the daemon answers this code with (None for an unknown code).
    pub fn status(&self) -> Option<u16> {
        CODES.iter().find(|(c, _, _)| c == self).map(|(_, _, s)| *s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every failure of a client call. Variant names follow App Mesh 3.0's Rust SDK (`AppMeshError`
/// renamed); the spec's per-language names (`AppRemoved`, `TransportDisconnected`,
/// `ProcessSuperseded`, `Cancelled`) are variants here.
#[derive(Debug)]
#[non_exhaustive]
pub enum SvcError {
    /// A URL could not be parsed.
    InvalidUrl(String),
    /// The daemon answered with an error status. `code` is the body's `error` (spec/errors.json),
    /// or `None` when the body was not an error document. A worker rejected with 400 gets this.
    RequestFailed {
        status: u16,
        code: Option<ErrorCode>,
        message: String,
    },
    /// The token provider could not supply or refresh a token, or an OAuth exchange failed.
    AuthenticationFailed(String),
    /// The client was configured wrongly (missing worker environment variable, bad CA file, ...).
    ConfigurationError(String),
    /// The connection could not be made or failed outside a persistent transport.
    ConnectionError(String),
    /// A body could not be (de)serialized.
    SerializationError(String),
    /// A local file error.
    IoError(String),
    /// The operation needs another transport (e.g. subscribe over plain HTTP).
    UnsupportedFeature { feature: String, transport: String },
    /// A TCP or WSS message or frame the client could not read.
    Protocol(String),
    /// The worker's process key belongs to a superseded process (the daemon answered 412).
    ProcessSuperseded(String),
    /// `wait_for_async_run`: the application was removed before its exit was observed.
    AppRemoved,
    /// The persistent transport disconnected (a pending request, or `wait_for_async_run`).
    TransportDisconnected,
    /// The caller cancelled the operation (e.g. `SvcWorker::stop`).
    Cancelled,
    /// Anything else.
    Other(String),
}

impl SvcError {
    /// The HTTP status of a `RequestFailed` error.
    pub fn status(&self) -> Option<u16> {
        match self {
            SvcError::RequestFailed { status, .. } => Some(*status),
            SvcError::ProcessSuperseded(_) => Some(412),
            _ => None,
        }
    }

    /// The daemon's error code of a `RequestFailed` error.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            SvcError::RequestFailed { code, .. } => code.as_ref(),
            _ => None,
        }
    }

    /// The error of a non-2xx answer: the body's `{"error", "message"}` when it is one.
    pub fn from_response(status: u16, body: &[u8]) -> SvcError {
        #[derive(serde::Deserialize)]
        struct Body {
            error: String,
            #[serde(default)]
            message: String,
        }
        match serde_json::from_slice::<Body>(body) {
            Ok(b) => SvcError::RequestFailed {
                status,
                code: Some(ErrorCode::from_code(&b.error)),
                message: b.message,
            },
            Err(_) => SvcError::RequestFailed {
                status,
                code: None,
                message: String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
            },
        }
    }
}

impl fmt::Display for SvcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUrl(m) => write!(f, "invalid URL: {m}"),
            Self::RequestFailed {
                status,
                code: Some(code),
                message,
            } => {
                write!(f, "request failed with status {status} ({code}): {message}")
            }
            Self::RequestFailed {
                status,
                code: None,
                message,
            } => {
                write!(f, "request failed with status {status}: {message}")
            }
            Self::AuthenticationFailed(m) => write!(f, "authentication failed: {m}"),
            Self::ConfigurationError(m) => write!(f, "configuration error: {m}"),
            Self::ConnectionError(m) => write!(f, "connection error: {m}"),
            Self::SerializationError(m) => write!(f, "serialization error: {m}"),
            Self::IoError(m) => write!(f, "I/O error: {m}"),
            Self::UnsupportedFeature { feature, transport } => {
                write!(f, "{feature} is not supported by the {transport} transport")
            }
            Self::Protocol(m) => write!(f, "protocol error: {m}"),
            Self::ProcessSuperseded(m) => write!(f, "process superseded: {m}"),
            Self::AppRemoved => write!(f, "the application was removed before it exited"),
            Self::TransportDisconnected => write!(f, "the transport disconnected"),
            Self::Cancelled => write!(f, "cancelled"),
            Self::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SvcError {}

impl From<serde_json::Error> for SvcError {
    fn from(e: serde_json::Error) -> Self {
        SvcError::SerializationError(e.to_string())
    }
}

impl From<std::io::Error> for SvcError {
    fn from(e: std::io::Error) -> Self {
        SvcError::IoError(e.to_string())
    }
}

impl From<url::ParseError> for SvcError {
    fn from(e: url::ParseError) -> Self {
        SvcError::InvalidUrl(e.to_string())
    }
}

impl From<reqwest::Error> for SvcError {
    fn from(e: reqwest::Error) -> Self {
        // reqwest's text may carry the URL; ours never holds secrets (tokens travel in headers).
        SvcError::ConnectionError(e.without_url().to_string())
    }
}
