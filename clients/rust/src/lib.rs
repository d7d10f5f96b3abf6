//! Rust client of svc: REST, TCP (TLS, framed msgpack) and WSS transports, the event
//! demultiplexer, run-wait, the worker loop, and the token contract (static bearer or provider,
//! OAuth helper with the built-in password exchange). Public names follow App Mesh 3.0's Rust
//! SDK with the brand renamed (`AppMeshClient` → `SvcClient`, `AppMeshError` → `SvcError`, ...).

mod client;
pub mod demux;
mod error;
mod models;
mod oauth;
mod run_wait;
mod token;
pub mod transport;
pub mod wire;
mod worker;

pub use client::{ClientBuilder, ClientBuilderTCP, ClientBuilderWSS, SvcClient, SvcClientTCP, SvcClientWSS};
pub use demux::DemuxStats;
pub use error::{ErrorCode, Result, SvcError};
pub use models::{
    print_output_handler, AppEvent, AppOutput, AppRun, Application, ClusterApp, ClusterNode, ClusterNodeResource,
    ClusterPlacement, ClusterTopologyEntry, EventCallback, OutputFn, OutputHandler, SubscriptionResult,
    EVENT_TYPE_DISCONNECTED,
};
pub use oauth::{
    pkce_challenge, AuthorizationRequest, DeviceAuthorization, DevicePoll, Discovery, OAuth2Config, OAuthClient,
    SvcClientOAuth, TokenSet, DEFAULT_OAUTH_SCOPE,
};
pub use token::{StaticToken, TokenProvider};
pub use transport::{WireCall, WireReply};
pub use worker::{SvcWorker, WorkerTask, WORKER_RETRY_FLOOR};
