//! Where a client's bearer comes from (spec "Client token contract" rules 3–4): a static bearer,
//! which never refreshes, or a provider that may refresh once after a 401.

use futures_util::future::BoxFuture;

use crate::error::Result;

/// Supplies access tokens to a client.
pub trait TokenProvider: Send + Sync {
    /// The current access token (may fetch one).
    fn access_token(&self) -> BoxFuture<'_, Result<String>>;
    /// Called after a 401 on a replayable request: a new access token, or `None` when this
    /// provider cannot refresh (the 401 then stands). Never called after a 403.
    fn refresh(&self) -> BoxFuture<'_, Result<Option<String>>>;
}

/// A fixed bearer: used as-is, never refreshed.
pub struct StaticToken(String);

impl StaticToken {
    pub fn new(token: impl Into<String>) -> Self {
        StaticToken(token.into())
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(<redacted>)")
    }
}

impl TokenProvider for StaticToken {
    fn access_token(&self) -> BoxFuture<'_, Result<String>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }

    fn refresh(&self) -> BoxFuture<'_, Result<Option<String>>> {
        Box::pin(async { Ok(None) })
    }
}
