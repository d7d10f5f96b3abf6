//! The OAuth helper against the real built-in issuer (`svc-testkit serve --builtin`), reached
//! through the agent's `{base_url}/auth` route: the password exchange at `{base_url}/auth/token`,
//! authorization code + PKCE and the device grant with the browser step scripted over plain HTTP
//! (spec/testkit.md), refresh, revocation, issuer validation and the single-use state.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use svc::{OAuth2Config, OAuthClient, SvcClient, SvcClientOAuth, SvcError, TokenSet};

use crate::daemon::Daemon;

const REDIRECT_URI: &str = "http://127.0.0.1:1/callback";

fn builtin() -> &'static Daemon {
    static BUILTIN: OnceLock<Daemon> = OnceLock::new();
    BUILTIN.get_or_init(|| Daemon::start(&["--builtin"]))
}

fn auth(key: &str) -> Value {
    builtin().info["auth"][key].clone()
}

fn user(role: &str) -> (String, String) {
    let u = &builtin().info["auth"]["users"][role];
    (
        u["username"].as_str().unwrap().to_string(),
        u["password"].as_str().unwrap().to_string(),
    )
}

fn config() -> OAuth2Config {
    let daemon = builtin();
    OAuth2Config::new(daemon.field("issuer"), "svc-cli")
        .with_route(format!("{}/auth", auth("base_url").as_str().unwrap()))
}

fn oauth() -> OAuthClient {
    OAuthClient::new(config(), &builtin().ca()).expect("oauth client")
}

fn agent_client() -> SvcClient {
    svc::ClientBuilder::new()
        .url(auth("base_url").as_str().unwrap())
        .ssl_ca_cert(builtin().ca())
        .build()
        .expect("client")
}

/// A scripted browser: keeps cookies, follows no redirect on its own.
struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, String>,
}

struct Page {
    url: String,
    status: u16,
    location: Option<String>,
    body: String,
}

fn decode_entities(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';').filter(|e| *e < 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let ch = match entity {
            "amp" => Some('&'),
            "quot" => Some('"'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "apos" => Some('\''),
            e if e.starts_with("#x") || e.starts_with("#X") => {
                u32::from_str_radix(&e[2..], 16).ok().and_then(char::from_u32)
            }
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The value of attribute `name` in one tag's text.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(&format!("{name}=")) {
        let at = from + i;
        from = at + 1;
        let before = lower[..at].chars().last();
        if !matches!(before, Some(c) if c.is_whitespace()) {
            continue;
        }
        let value = &tag[at + name.len() + 1..];
        let quote = value.chars().next()?;
        if quote == '"' || quote == '\'' {
            let end = value[1..].find(quote)?;
            return Some(decode_entities(&value[1..1 + end]));
        }
        let end = value
            .find(|c: char| c.is_whitespace() || c == '>')
            .unwrap_or(value.len());
        return Some(decode_entities(&value[..end]));
    }
    None
}

/// The form whose action ends with `suffix`: its absolute action URL and hidden inputs.
fn form(page: &Page, suffix: &str) -> (String, Vec<(String, String)>) {
    let lower = page.body.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("<form") {
        let start = from + i;
        let tag_end = start + lower[start..].find('>').expect("form tag end");
        let end = lower[start..].find("</form>").map(|e| start + e).unwrap_or(lower.len());
        from = tag_end;
        let action = attribute(&page.body[start..tag_end], "action").unwrap_or_default();
        if !action.split('?').next().unwrap_or("").ends_with(suffix) {
            continue;
        }
        let mut inputs = Vec::new();
        let mut at = tag_end;
        while let Some(j) = lower[at..end].find("<input") {
            let s = at + j;
            let e = s + lower[s..].find('>').unwrap();
            let tag = &page.body[s..e];
            if attribute(tag, "type").is_some_and(|t| t.eq_ignore_ascii_case("hidden")) {
                if let (Some(n), v) = (attribute(tag, "name"), attribute(tag, "value")) {
                    inputs.push((n, v.unwrap_or_default()));
                }
            }
            at = e;
        }
        let absolute = url::Url::parse(&page.url).unwrap().join(&action).unwrap().to_string();
        return (absolute, inputs);
    }
    panic!(
        "no form ending in {suffix} at {} ({}):\n{}",
        page.url,
        page.status,
        &page.body[..page.body.len().min(2000)]
    );
}

/// Sets a form field (replacing a hidden one of that name).
fn set(fields: &mut Vec<(String, String)>, name: &str, value: &str) {
    fields.retain(|(k, _)| k != name);
    fields.push((name.to_string(), value.to_string()));
}

impl Browser {
    fn new() -> Browser {
        let tls = svc::transport::tls_config(&builtin().ca()).unwrap();
        let http = reqwest::Client::builder()
            .use_preconfigured_tls((*tls).clone())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Browser {
            http,
            cookies: HashMap::new(),
        }
    }

    async fn send(&mut self, url: &str, form: Option<&[(String, String)]>) -> Page {
        let mut request = match form {
            Some(fields) => self.http.post(url).form(fields),
            None => self.http.get(url),
        };
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header("Cookie", jar.join("; "));
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        for cookie in response.headers().get_all("set-cookie") {
            let first = cookie.to_str().unwrap().split(';').next().unwrap();
            if let Some((k, v)) = first.split_once('=') {
                self.cookies.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
        let status = response.status().as_u16();
        let location = response.headers().get("location").map(|l| {
            url::Url::parse(url)
                .unwrap()
                .join(l.to_str().unwrap())
                .unwrap()
                .to_string()
        });
        Page {
            url: url.to_string(),
            status,
            location,
            body: response.text().await.unwrap_or_default(),
        }
    }

    /// Follows redirects from `page` until a page that is not one, or a Location starting with
    /// the redirect URI (returned as the page's `location`, not fetched).
    async fn follow(&mut self, mut page: Page) -> Page {
        for _ in 0..20 {
            let Some(next) = page.location.clone() else { return page };
            if next.starts_with(REDIRECT_URI) {
                return page;
            }
            page = self.send(&next, None).await;
        }
        panic!("too many redirects");
    }

    /// Sends, then follows redirects.
    async fn visit(&mut self, url: &str, form: Option<&[(String, String)]>) -> Page {
        let page = self.send(url, form).await;
        self.follow(page).await
    }

    /// Signs in on the login page and approves the consent page (when one is shown).
    async fn sign_in_and_consent(&mut self, login_page: Page, username: &str, password: &str) -> Page {
        let (action, mut fields) = form(&login_page, "/login");
        set(&mut fields, "username", username);
        set(&mut fields, "password", password);
        let mut page = self.visit(&action.clone(), Some(&fields)).await;
        assert_ne!(page.status, 401, "the sign-in was refused");
        if page.location.is_none() && page.body.to_ascii_lowercase().contains("/confirm") {
            let (action, fields) = form(&page, "/confirm");
            page = self.visit(&action, Some(&fields)).await;
        }
        page
    }
}

async fn pkce_sign_in(oauth: &OAuthClient) -> (String, TokenSet) {
    let request = oauth.authorization_url(REDIRECT_URI).await.expect("authorization url");
    let mut browser = Browser::new();
    let login = browser.visit(&request.url.clone(), None).await;
    let (username, password) = user("svc-admin");
    let done = browser.sign_in_and_consent(login, &username, &password).await;
    let callback = done.location.expect("redirected to the redirect URI");
    assert!(callback.contains(&format!("state={}", request.state)), "{callback}");
    let tokens = oauth.exchange_callback(&callback).await.expect("code exchange");
    (callback, tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_exchange_at_base_url_auth_token() {
    let oauth = oauth();
    assert_eq!(
        oauth.token_endpoint().await.unwrap(),
        auth("token_endpoint").as_str().unwrap()
    );
    let (username, password) = user("svc-admin");
    for transport in ["rest", "tcp"] {
        let client = match transport {
            "rest" => agent_client(),
            _ => builtin().client("tcp", None),
        };
        let signed_in = SvcClientOAuth::new(OAuthClient::new(config(), &builtin().ca()).unwrap(), client);
        signed_in.login(&username, &password).await.expect("password grant");
        let me = signed_in.get_current_user().await.expect("self");
        assert_eq!(
            me["principal_id"],
            builtin().principal("svc-admin").as_str(),
            "{transport}"
        );
        signed_in.svc().close().await;
    }
    let wrong = oauth
        .login(&username, "not-the-password")
        .await
        .expect_err("a wrong password");
    assert!(matches!(wrong, SvcError::AuthenticationFailed(_)), "{wrong}");
    assert!(
        !wrong.to_string().contains("not-the-password"),
        "the password leaked into the error"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_code_with_pkce_and_single_use_state() {
    let oauth = oauth();
    let (callback, tokens) = pkce_sign_in(&oauth).await;
    let client = agent_client();
    client.set_token(&tokens.access_token);
    assert_eq!(client.get_current_user().await.unwrap()["principal_id"], "admin");
    // The state is single-use: the same callback is refused before any exchange.
    let again = oauth.exchange_callback(&callback).await.expect_err("a used state");
    assert!(again.to_string().contains("state"), "{again}");
    // An unknown state is refused too.
    let forged = format!("{REDIRECT_URI}?code=x&state=forged");
    assert!(oauth.exchange_callback(&forged).await.is_err());
    // Malformed, oversized and hostile callbacks are refused before any exchange.
    let huge = format!("{REDIRECT_URI}?code=x&state={}", "s".repeat(1 << 20));
    let hostile = format!("{REDIRECT_URI}?code=%00%ff&state=%00&state=");
    for bad in ["not a url", "", &huge, &hostile, REDIRECT_URI] {
        assert!(oauth.exchange_callback(bad).await.is_err(), "accepted {:.60}", bad);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_authorization_grant() {
    let oauth = oauth();
    let device = oauth
        .request_device_authorization()
        .await
        .expect("device authorization");
    let mut browser = Browser::new();
    let verification = device.verification_uri.clone().expect("verification_uri");
    let page = browser.visit(&verification, None).await;
    let (action, mut fields) = form(&page, "/device");
    set(&mut fields, "user_code", &device.user_code);
    let page = browser.visit(&action, Some(&fields)).await;
    let (action, mut fields) = form(&page, "/device");
    set(&mut fields, "confirm", "yes");
    let login = browser.visit(&action, Some(&fields)).await;
    let (username, password) = user("svc-viewer");
    let done = browser.sign_in_and_consent(login, &username, &password).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let tokens = oauth
        .login_device_flow(&device, Duration::from_secs(120))
        .await
        .expect("device token");
    let client = agent_client();
    client.set_token(&tokens.access_token);
    assert_eq!(
        client.get_current_user().await.unwrap()["principal_id"],
        builtin().principal("svc-viewer").as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_after_401_then_revocation() {
    let (username, password) = user("svc-admin");
    // offline_access: the issuer then hands out a refresh token with the access token.
    let mut with_refresh = config();
    with_refresh.scope.push_str(" offline_access");
    let signed_in = SvcClientOAuth::new(OAuthClient::new(with_refresh, &builtin().ca()).unwrap(), agent_client());
    signed_in.login(&username, &password).await.expect("password grant");
    let first = signed_in.oauth().token_set().expect("tokens");
    assert!(
        first.refresh_token.is_some(),
        "the password grant gave no refresh token"
    );
    // A rejected access token: the provider refreshes once and the request is replayed.
    signed_in.oauth().set_token_set(Some(TokenSet {
        access_token: "rejected".into(),
        ..first.clone()
    }));
    let me = signed_in.get_current_user().await.expect("replayed after the refresh");
    assert_eq!(me["principal_id"], "admin");
    let second = signed_in.oauth().token_set().unwrap();
    assert_ne!(second.access_token, "rejected");
    assert_ne!(second.refresh_token, first.refresh_token, "the refresh token rotates");
    // Logout revokes and forgets: the old refresh token no longer works.
    assert!(signed_in.logout().await, "revocation refused");
    assert!(signed_in.oauth().token_set().is_none());
    signed_in.oauth().set_token_set(Some(second));
    assert!(
        signed_in.oauth().refresh_tokens().await.is_err(),
        "a revoked refresh token still works"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_must_publish_the_configured_issuer() {
    let mut wrong = config();
    wrong.issuer = "http://127.0.0.1:1/not-the-issuer".into();
    let oauth = OAuthClient::new(wrong, &builtin().ca()).unwrap();
    let error = oauth.token_endpoint().await.expect_err("issuer mismatch");
    assert!(error.to_string().contains("issuer"), "{error}");
    // The direct route (no agent) validates the same issuer.
    let direct = OAuth2Config::new(builtin().field("issuer"), "svc-cli");
    let endpoint = OAuthClient::new(direct, &builtin().ca())
        .unwrap()
        .token_endpoint()
        .await
        .unwrap();
    assert!(endpoint.starts_with(&builtin().field("issuer")), "{endpoint}");
}
