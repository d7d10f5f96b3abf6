//! The OAuth helper (spec "Client token contract" rule 4): authorization code with PKCE, device
//! authorization, refresh, best-effort revocation, and the built-in password exchange against
//! `{base_url}/auth/token`. It is a [`TokenProvider`]: the refresh token stays here and is never
//! sent to the daemon; nothing is persisted unless the application stores `token_set()` itself.
//!
//! Discovery (`{route}/.well-known/openid-configuration`) must publish exactly the configured
//! issuer. `route` is an optional separate access route to the same issuer (e.g. the agent's
//! `{base_url}/auth`): endpoints under the issuer are reached through it, and issuer validation is
//! unchanged. No nonce is sent and the ID token is not used, so no ID-token validator is needed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::client::SvcClient;
use crate::error::{Result, SvcError};
use crate::token::TokenProvider;

/// The scope every user token request names (audience `svc-api`, colon-separated).
pub const DEFAULT_OAUTH_SCOPE: &str = "openid audience:server:client_id:svc-api";
const DEVICE_CODE_GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Where the issuer is and who the client is.
#[derive(Clone)]
pub struct OAuth2Config {
    /// The issuer, exactly as discovery must publish it (e.g. `http://127.0.0.1:6062/auth`).
    pub issuer: String,
    /// A separate access route to the same issuer (e.g. `https://host:6060/auth` through the
    /// agent), or None to reach the issuer directly.
    pub route: Option<String>,
    /// The OAuth client id (`svc-cli` for native clients).
    pub client_id: String,
    /// The secret of a confidential client (e.g. `svc-automation`); None for public clients.
    pub client_secret: Option<String>,
    /// Requested scope (default [`DEFAULT_OAUTH_SCOPE`]).
    pub scope: String,
}

impl std::fmt::Debug for OAuth2Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2Config")
            .field("issuer", &self.issuer)
            .field("route", &self.route)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("scope", &self.scope)
            .finish()
    }
}

impl OAuth2Config {
    /// A public client of `issuer` with the default scope.
    pub fn new(issuer: impl Into<String>, client_id: impl Into<String>) -> Self {
        OAuth2Config {
            issuer: issuer.into(),
            route: None,
            client_id: client_id.into(),
            client_secret: None,
            scope: DEFAULT_OAUTH_SCOPE.to_string(),
        }
    }

    /// Reaches the issuer through `route` (issuer validation unchanged).
    pub fn with_route(mut self, route: impl Into<String>) -> Self {
        self.route = Some(route.into());
        self
    }
}

/// The endpoints discovery published (rewritten onto the route).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub device_authorization_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
}

/// The tokens of the last grant. `Debug` never shows them.
#[derive(Clone, Default, Deserialize)]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub expires_in: Option<u64>,
    #[serde(default)]
    pub token_type: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

/// Device authorization response (RFC 8628 §3.2).
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: String,
    #[serde(default)]
    pub verification_uri: Option<String>,
    #[serde(default)]
    pub verification_uri_complete: Option<String>,
    #[serde(default = "default_expires_in")]
    pub expires_in: u64,
    #[serde(default = "default_interval")]
    pub interval: u64,
}

fn default_expires_in() -> u64 {
    600
}

fn default_interval() -> u64 {
    5
}

/// One device-grant token poll (RFC 8628 §3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevicePoll {
    /// Keep polling at the current interval.
    Pending,
    /// Poll 5 seconds slower.
    SlowDown,
    /// The token was issued (and stored).
    Token,
}

/// A started authorization-code sign-in: send the user to `url`; the callback carries `state`.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    pub url: String,
    pub state: String,
}

struct PendingAuthorization {
    verifier: String,
    redirect_uri: String,
}

/// The OAuth client of one issuer and the tokens it obtained.
pub struct OAuthClient {
    config: OAuth2Config,
    http: reqwest::Client,
    discovery: tokio::sync::OnceCell<Discovery>,
    tokens: Mutex<Option<TokenSet>>,
    pending: Mutex<HashMap<String, PendingAuthorization>>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn random_token(bytes: usize) -> Result<String> {
    let mut buffer = vec![0u8; bytes];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buffer)
        .map_err(|_| SvcError::Other("no system randomness".into()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// PKCE S256 challenge of a verifier.
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

fn oauth_error(body: &[u8]) -> (String, String) {
    let value: Value = serde_json::from_slice(body).unwrap_or_default();
    let text = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (text("error"), text("error_description"))
}

impl OAuthClient {
    /// A client using `http` (give it a client that trusts the route's CA, e.g. from
    /// [`crate::transport::http_client`]).
    pub fn with_http_client(config: OAuth2Config, http: reqwest::Client) -> Self {
        OAuthClient {
            config,
            http,
            discovery: tokio::sync::OnceCell::new(),
            tokens: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// A client trusting the PEM CA file `ca_file` for an HTTPS route or issuer.
    pub fn new(config: OAuth2Config, ca_file: &std::path::Path) -> Result<Self> {
        let tls = crate::transport::tls_config(ca_file)?;
        Ok(Self::with_http_client(config, crate::transport::http_client(&tls)?))
    }

    fn base(&self) -> &str {
        self.config
            .route
            .as_deref()
            .unwrap_or(&self.config.issuer)
            .trim_end_matches('/')
    }

    /// An endpoint under the issuer, moved onto the route.
    fn routed(&self, endpoint: &str) -> String {
        let issuer = self.config.issuer.trim_end_matches('/');
        match endpoint.strip_prefix(issuer) {
            Some(rest) if self.config.route.is_some() => format!("{}{rest}", self.base()),
            _ => endpoint.to_string(),
        }
    }

    /// Discovery, fetched once; fails unless it publishes exactly the configured issuer.
    pub async fn discover(&self) -> Result<&Discovery> {
        self.discovery
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.base());
                let response = self.http.get(&url).send().await?;
                if !response.status().is_success() {
                    return Err(SvcError::AuthenticationFailed(format!(
                        "discovery answered {}",
                        response.status()
                    )));
                }
                let doc: Value = response.json().await?;
                let field = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
                let issuer = field("issuer").unwrap_or_default();
                if issuer != self.config.issuer {
                    return Err(SvcError::AuthenticationFailed(format!(
                        "discovery publishes issuer {issuer:?}, not the configured {:?}",
                        self.config.issuer
                    )));
                }
                let required = |k: &str| {
                    field(k)
                        .map(|e| self.routed(&e))
                        .ok_or_else(|| SvcError::AuthenticationFailed(format!("no {k}")))
                };
                Ok(Discovery {
                    authorization_endpoint: required("authorization_endpoint")?,
                    token_endpoint: required("token_endpoint")?,
                    device_authorization_endpoint: field("device_authorization_endpoint").map(|e| self.routed(&e)),
                    revocation_endpoint: field("revocation_endpoint").map(|e| self.routed(&e)),
                    issuer,
                })
            })
            .await
    }

    /// The token endpoint in use (`{base_url}/auth/token` through the agent).
    pub async fn token_endpoint(&self) -> Result<String> {
        Ok(self.discover().await?.token_endpoint.clone())
    }

    /// The tokens of the last grant (for an application that persists them itself).
    pub fn token_set(&self) -> Option<TokenSet> {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Restores tokens the application persisted.
    pub fn set_token_set(&self, tokens: Option<TokenSet>) {
        *self.tokens.lock().unwrap_or_else(|e| e.into_inner()) = tokens;
    }

    /// The current access token, if any.
    pub fn current_access_token(&self) -> Option<String> {
        self.token_set().map(|t| t.access_token)
    }

    fn authenticated(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        // HTTP Basic: a public client sends its id with an empty secret.
        request.basic_auth(
            &self.config.client_id,
            Some(self.config.client_secret.clone().unwrap_or_default()),
        )
    }

    async fn post_form(&self, url: &str, form: &[(&str, &str)]) -> Result<(u16, Vec<u8>)> {
        let response = self.authenticated(self.http.post(url)).form(form).send().await?;
        let status = response.status().as_u16();
        Ok((status, response.bytes().await?.to_vec()))
    }

    /// A grant at the token endpoint; the tokens are stored.
    async fn grant(&self, form: &[(&str, &str)]) -> Result<TokenSet> {
        let endpoint = self.token_endpoint().await?;
        let (status, body) = self.post_form(&endpoint, form).await?;
        if !(200..300).contains(&status) {
            let (error, description) = oauth_error(&body);
            return Err(SvcError::AuthenticationFailed(format!(
                "token endpoint answered {status} {error}: {description}"
            )));
        }
        let mut tokens: TokenSet = serde_json::from_slice(&body)?;
        if tokens.refresh_token.is_none() {
            // A grant without a new refresh token keeps the previous one (refresh may omit it).
            tokens.refresh_token = self.token_set().and_then(|t| t.refresh_token);
        }
        self.set_token_set(Some(tokens.clone()));
        Ok(tokens)
    }

    /// The built-in password exchange (builtin mode, while the password grant is enabled).
    pub async fn login(&self, username: &str, password: &str) -> Result<TokenSet> {
        let scope = self.config.scope.clone();
        self.grant(&[
            ("grant_type", "password"),
            ("username", username),
            ("password", password),
            ("scope", &scope),
        ])
        .await
    }

    /// The client-credentials grant of a confidential client (e.g. `svc-automation`).
    pub async fn login_client_credentials(&self) -> Result<TokenSet> {
        let scope = self.config.scope.clone();
        self.grant(&[("grant_type", "client_credentials"), ("scope", &scope)])
            .await
    }

    /// Starts an authorization-code sign-in with PKCE (S256) and a single-use `state`.
    /// `redirect_uri`: a loopback URL (RFC 8252) such as `http://127.0.0.1:<port>/callback`.
    pub async fn authorization_url(&self, redirect_uri: &str) -> Result<AuthorizationRequest> {
        let endpoint = self.discover().await?.authorization_endpoint.clone();
        let state = random_token(24)?;
        let verifier = random_token(48)?;
        let mut url = url::Url::parse(&endpoint)?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", &self.config.scope)
            .append_pair("state", &state)
            .append_pair("code_challenge", &pkce_challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(
            state.clone(),
            PendingAuthorization {
                verifier,
                redirect_uri: redirect_uri.to_string(),
            },
        );
        Ok(AuthorizationRequest {
            url: url.to_string(),
            state,
        })
    }

    /// Completes a sign-in from the callback URL. The `state` must be one this client issued
    /// and not used yet; it is checked (and consumed) before the code is exchanged.
    pub async fn exchange_callback(&self, callback_url: &str) -> Result<TokenSet> {
        let url = url::Url::parse(callback_url)?;
        let params: HashMap<String, String> = url.query_pairs().into_owned().collect();
        let state = params.get("state").cloned().unwrap_or_default();
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&state);
        let Some(pending) = pending else {
            return Err(SvcError::AuthenticationFailed("unknown or already used state".into()));
        };
        if let Some(error) = params.get("error") {
            return Err(SvcError::AuthenticationFailed(format!("authorization failed: {error}")));
        }
        let code = params
            .get("code")
            .ok_or_else(|| SvcError::AuthenticationFailed("the callback has no code".into()))?;
        self.grant(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &pending.redirect_uri),
            ("code_verifier", &pending.verifier),
        ])
        .await
    }

    /// Starts the device authorization grant.
    pub async fn request_device_authorization(&self) -> Result<DeviceAuthorization> {
        let endpoint = self
            .discover()
            .await?
            .device_authorization_endpoint
            .clone()
            .ok_or_else(|| SvcError::AuthenticationFailed("no device authorization endpoint".into()))?;
        let (status, body) = self
            .post_form(
                &endpoint,
                &[("client_id", &self.config.client_id), ("scope", &self.config.scope)],
            )
            .await?;
        if !(200..300).contains(&status) {
            let (error, description) = oauth_error(&body);
            return Err(SvcError::AuthenticationFailed(format!(
                "device authorization: {status} {error}: {description}"
            )));
        }
        Ok(serde_json::from_slice(&body)?)
    }

    /// One poll of the device grant.
    pub async fn poll_device_token(&self, device: &DeviceAuthorization) -> Result<DevicePoll> {
        match self
            .grant(&[
                ("grant_type", DEVICE_CODE_GRANT_TYPE),
                ("device_code", &device.device_code),
            ])
            .await
        {
            Ok(_) => Ok(DevicePoll::Token),
            Err(SvcError::AuthenticationFailed(m)) if m.contains("authorization_pending") => Ok(DevicePoll::Pending),
            Err(SvcError::AuthenticationFailed(m)) if m.contains("slow_down") => Ok(DevicePoll::SlowDown),
            Err(e) => Err(e),
        }
    }

    /// Polls the device grant at its interval until a token, a terminal error or `timeout`.
    pub async fn login_device_flow(&self, device: &DeviceAuthorization, timeout: Duration) -> Result<TokenSet> {
        let deadline = tokio::time::Instant::now() + timeout.min(Duration::from_secs(device.expires_in));
        let mut interval = Duration::from_secs(device.interval.max(1));
        loop {
            match self.poll_device_token(device).await? {
                DevicePoll::Token => return self.token_set().ok_or(SvcError::Other("no token stored".into())),
                DevicePoll::SlowDown => interval += Duration::from_secs(5),
                DevicePoll::Pending => {}
            }
            if tokio::time::Instant::now() + interval > deadline {
                return Err(SvcError::AuthenticationFailed(
                    "the device code was not approved in time".into(),
                ));
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// A new access token from the stored refresh token (which rotates).
    pub async fn refresh_tokens(&self) -> Result<TokenSet> {
        let refresh = self
            .token_set()
            .and_then(|t| t.refresh_token)
            .ok_or_else(|| SvcError::AuthenticationFailed("no refresh token".into()))?;
        self.grant(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)])
            .await
    }

    /// Best-effort revocation: the refresh token (the long-lived credential), else the access
    /// token. The tokens are forgotten whatever the issuer answers; true when it accepted.
    /// (The built-in issuer's access tokens are JWTs that cannot be revoked; they expire.)
    pub async fn revoke(&self) -> bool {
        let Some(tokens) = self.token_set() else { return true };
        self.set_token_set(None);
        let Ok(discovery) = self.discover().await else {
            return false;
        };
        let Some(endpoint) = discovery.revocation_endpoint.clone() else {
            return false;
        };
        let (token, hint) = match tokens.refresh_token {
            Some(refresh) => (refresh, "refresh_token"),
            None => (tokens.access_token, "access_token"),
        };
        let answered = self
            .post_form(&endpoint, &[("token", &token), ("token_type_hint", hint)])
            .await;
        matches!(answered, Ok((200..=299, _)))
    }
}

impl TokenProvider for OAuthClient {
    fn access_token(&self) -> BoxFuture<'_, Result<String>> {
        Box::pin(async move {
            self.current_access_token()
                .ok_or_else(|| SvcError::AuthenticationFailed("not signed in".into()))
        })
    }

    fn refresh(&self) -> BoxFuture<'_, Result<Option<String>>> {
        Box::pin(async move {
            if self.token_set().and_then(|t| t.refresh_token).is_none() {
                return Ok(None);
            }
            Ok(Some(self.refresh_tokens().await?.access_token))
        })
    }
}

/// A client whose bearer comes from an [`OAuthClient`] (App Mesh's `AppMeshClientOAuth`
/// renamed); derefs to the [`SvcClient`] for API calls.
#[derive(Debug, Clone)]
pub struct SvcClientOAuth {
    client: SvcClient,
    oauth: Arc<OAuthClient>,
}

impl std::ops::Deref for SvcClientOAuth {
    type Target = SvcClient;
    fn deref(&self) -> &SvcClient {
        &self.client
    }
}

impl SvcClientOAuth {
    /// Installs `oauth` as the token provider of `client`.
    pub fn new(oauth: OAuthClient, client: SvcClient) -> Self {
        let oauth = Arc::new(oauth);
        client.set_token_provider(oauth.clone());
        SvcClientOAuth { client, oauth }
    }

    /// The underlying API client.
    pub fn svc(&self) -> &SvcClient {
        &self.client
    }

    /// The OAuth client.
    pub fn oauth(&self) -> &Arc<OAuthClient> {
        &self.oauth
    }

    /// The built-in password exchange; later API calls use the token. A persistent transport is
    /// reopened so the connection carries the new principal.
    pub async fn login(&self, username: &str, password: &str) -> Result<()> {
        self.oauth.login(username, password).await?;
        self.client.reconnect().await
    }

    /// The device grant: `show` gets the authorization (URI and user code) to present.
    pub async fn login_device_flow(&self, show: impl FnOnce(&DeviceAuthorization), timeout: Duration) -> Result<()> {
        let device = self.oauth.request_device_authorization().await?;
        show(&device);
        self.oauth.login_device_flow(&device, timeout).await?;
        self.client.reconnect().await
    }

    /// Refreshes the access token now and reopens a persistent transport.
    pub async fn renew_token(&self) -> Result<()> {
        self.oauth.refresh_tokens().await?;
        self.client.reconnect().await
    }

    /// Revokes (best effort) and forgets the tokens; true when the issuer accepted both.
    pub async fn logout(&self) -> bool {
        let revoked = self.oauth.revoke().await;
        self.client.close().await;
        revoked
    }
}
