"""The OAuth helper against the real built-in issuer (``svc-testkit serve --builtin``): PKCE with a
scripted browser, device flow, refresh after a 401 (through REST, TCP and WSS), no refresh after a
403, discovery bound to the configured issuer through the agent's separate access route."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import TRANSPORTS, Served, ServedDaemon, make_client
from scripted_browser import Browser

import svc
from svc.client_http import SvcClient

REDIRECT = "http://127.0.0.1:9/callback"  # RFC 8252 loopback redirect; nothing needs to listen


@pytest.fixture(scope="module")
def builtin() -> Iterator[Served]:
    daemon = ServedDaemon(("--builtin",))
    try:
        yield daemon.info
    finally:
        daemon.stop()


def access_url(info: Served) -> str:
    return str(info["auth"]["base_url"]) + "/auth"  # the agent's route to the issuer


def oauth(info: Served, client: SvcClient | None = None, **kwargs: Any) -> svc.OAuthClient:
    return svc.OAuthClient(
        client,
        issuer=info["issuer"],
        access_url=access_url(info),
        ssl_verify=info["ca"],
        sleep=lambda _s: None,
        **kwargs,
    )


def sign_in_with_pkce(info: Served, provider: svc.OAuthClient, user: str = "svc-admin") -> str:
    """Runs the browser half; answers the callback URL."""
    request = provider.authorization_request(REDIRECT)
    browser = Browser(info["ca"])
    # The browser reaches the issuer through the agent as well: same pages, same issuer.
    url = request["authorization_url"].replace(info["issuer"], access_url(info), 1)
    page = browser.get(url, stop_at=REDIRECT)
    assert not isinstance(page, str)
    credentials = info["auth"]["users"][user]
    callback = browser.sign_in(page, credentials["username"], credentials["password"], stop_at=REDIRECT)
    assert isinstance(callback, str), getattr(callback, "text", "")[:2000]
    return callback


def test_discovery_through_the_access_route_keeps_the_configured_issuer(builtin: Served) -> None:
    provider = oauth(builtin)
    assert provider.metadata["issuer"] == builtin["issuer"]
    assert provider._token_endpoint().startswith(access_url(builtin) + "/")
    with pytest.raises(svc.OAuthError, match="configured issuer"):
        svc.OAuthClient(
            None, issuer="http://127.0.0.1:1/other", access_url=access_url(builtin), ssl_verify=builtin["ca"]
        )
    with pytest.raises(svc.OAuthError, match="outside"):
        provider._route("http://evil.example/auth/token")
    from_config = svc.OAuthClient.from_svc(
        svc.SvcClient(builtin["rest"], ssl_verify=builtin["ca"]),
        access_url=access_url(builtin),
        ssl_verify=builtin["ca"],
    )
    assert from_config.issuer == builtin["issuer"]
    assert from_config.client_id == "svc-cli"


def test_plain_http_only_on_loopback() -> None:
    with pytest.raises(ValueError, match="HTTPS"):
        svc.OAuthClient(None, issuer="http://issuer.example/auth", discover=False)
    with pytest.raises(ValueError, match="without credentials"):
        svc.OAuthClient(None, issuer="https://user:pw@issuer.example/auth", discover=False)


def test_pkce_sign_in_and_single_use_state(builtin: Served) -> None:
    client = make_client(builtin, "https", identity="")
    stored: list[dict[str, Any]] = []
    provider = oauth(builtin, client, persist=lambda tokens: stored.append(dict(tokens)))
    with pytest.raises(svc.OAuthError, match="unknown or already used"):
        provider.complete_authorization_callback(REDIRECT + "?code=x&state=never-issued")
    callback = sign_in_with_pkce(builtin, provider)
    tokens = provider.complete_authorization_callback(callback)
    assert tokens["refresh_token"]
    assert client.token_provider is provider
    assert client.get_current_principal()["principal_id"] == builtin["auth"]["users"]["svc-admin"]["principal"]
    assert stored[-1]["access_token"] == tokens["access_token"]  # persisted only through the hook
    with pytest.raises(svc.OAuthError, match="unknown or already used"):
        provider.complete_authorization_callback(callback)  # the state was consumed


def test_callback_checks_come_before_the_exchange(builtin: Served) -> None:
    provider = oauth(builtin)
    request = provider.authorization_request(REDIRECT)
    with pytest.raises(svc.OAuthError, match="redirect URI"):
        provider.complete_authorization_callback(f"http://127.0.0.1:9/elsewhere?code=c&state={request['state']}")
    request = provider.authorization_request(REDIRECT)
    with pytest.raises(svc.OAuthError, match="access_denied"):
        provider.complete_authorization_callback(f"{REDIRECT}?error=access_denied&state={request['state']}")
    request = provider.authorization_request(REDIRECT, nonce="n-1")
    with pytest.raises(svc.OAuthError, match="ID-token validator"):
        provider.complete_authorization_callback(f"{REDIRECT}?code=c&state={request['state']}")
    assert provider.tokens == {}


def test_device_flow(builtin: Served) -> None:
    provider = oauth(builtin)
    device = provider.device_authorization()
    browser = Browser(builtin["ca"])
    page = browser.get(device["verification_uri"].replace(builtin["issuer"], access_url(builtin), 1))
    assert not isinstance(page, str)
    page = browser.submit(page, "/device", {"user_code": device["user_code"]})
    assert not isinstance(page, str)
    page = browser.submit(page, "/device", {"confirm": "yes"})
    assert not isinstance(page, str)
    users = builtin["auth"]["users"]["svc-admin"]
    done = browser.sign_in(page, users["username"], users["password"], stop_at=None)
    assert not isinstance(done, str)
    assert done.status_code == 200
    prompts: list[dict[str, Any]] = []
    tokens = provider.wait_for_device_authorization(device, on_prompt=prompts.append)
    assert prompts and prompts[0]["user_code"] == device["user_code"]
    client = make_client(builtin, "https", identity="")
    client.set_token_provider(provider)
    assert client.get_current_principal()["principal_id"] == users["principal"]
    assert tokens["refresh_token"]


class Capture:
    """Everything the svc client sent to the daemon (headers, query, body)."""

    def __init__(self, client: SvcClient) -> None:
        self.seen: list[str] = []
        original = client._send

        def send(method: Any, path: str, query: Any, headers: Any, payload: Any, token: Any, sink: Any) -> Any:
            self.seen.append(f"{method} {path} {query} {headers} {payload!r} {token}")
            return original(method, path, query, headers, payload, token, sink)

        client._send = send  # type: ignore[method-assign,assignment]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_refresh_after_401_then_retry(builtin: Served, transport: str) -> None:
    client = make_client(builtin, transport, identity="")
    provider = oauth(builtin, client)
    provider.complete_authorization_callback(sign_in_with_pkce(builtin, provider))
    first_refresh = provider.tokens["refresh_token"]
    capture = Capture(client)
    provider._tokens["access_token"] = "revoked.or.expired"  # noqa: S105 - the daemon will answer 401
    assert isinstance(client.list_apps(), list)
    assert provider.tokens["access_token"] != "revoked.or.expired"  # noqa: S105
    assert provider.tokens["refresh_token"] != first_refresh  # rotated on use
    assert any("revoked.or.expired" in line for line in capture.seen)
    for line in capture.seen:  # the refresh token never reaches svc
        assert first_refresh not in line
        assert provider.tokens["refresh_token"] not in line
    client.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_refresh_after_403(builtin: Served, transport: str) -> None:
    client = make_client(builtin, transport, identity="")
    provider = oauth(builtin, client)
    provider.complete_authorization_callback(sign_in_with_pkce(builtin, provider, user="svc-viewer"))
    before = provider.tokens
    with pytest.raises(svc.SvcForbiddenError):
        client.add_label("py_oauth_guest", "x")
    assert provider.tokens == before  # neither refreshed nor replaced
    client.close()


def test_revocation_is_best_effort_and_forgets(builtin: Served) -> None:
    client = make_client(builtin, "https", identity="")
    provider = oauth(builtin, client)
    provider.complete_authorization_callback(sign_in_with_pkce(builtin, provider))
    refresh = provider.tokens["refresh_token"]
    assert provider.revoke() is True
    assert provider.tokens == {}
    assert client.token_provider is None
    again = svc.OAuthClient.from_token_set(
        builtin["auth"]["token_endpoint"],
        access_token="x",  # noqa: S106 - not a secret
        refresh_token=refresh,
        ssl_verify=builtin["ca"],
    )
    with pytest.raises(svc.OAuthError) as caught:
        again.refresh()
    assert caught.value.error == "invalid_grant"
    assert again.tokens == {}  # a dead refresh token is dropped


def _offline(**kwargs: Any) -> svc.OAuthClient:
    provider = svc.OAuthClient(None, issuer="https://issuer.example/auth", discover=False, **kwargs)
    provider.metadata = {
        "issuer": "https://issuer.example/auth",
        "authorization_endpoint": "https://issuer.example/auth/auth",
        "token_endpoint": "https://issuer.example/auth/token",
    }
    return provider


@pytest.mark.parametrize(
    "query",
    [
        "",
        "code=c",
        "state=&code=c",
        "state={s}&state={s}&code=c",
        "state={s}",
        "state={s}&code=",
        "state={s}&code=a&code=b",
        "state=" + "x" * 100_000 + "&code=c",
        "state=%00%ff&code=c",
    ],
)
def test_hostile_callbacks_are_refused_before_any_exchange(query: str) -> None:
    provider = _offline()
    request = provider.authorization_request(REDIRECT)
    with pytest.raises(svc.OAuthError):
        provider.complete_authorization_callback(f"{REDIRECT}?{query.format(s=request['state'])}")
    assert provider.tokens == {}  # nothing was exchanged (the issuer is not even reachable)


def test_the_state_is_single_use_even_when_the_callback_fails() -> None:
    provider = _offline()
    request = provider.authorization_request(REDIRECT)
    with pytest.raises(svc.OAuthError, match="redirect URI"):
        provider.complete_authorization_callback(f"http://127.0.0.1:9/other?code=c&state={request['state']}")
    with pytest.raises(svc.OAuthError, match="unknown or already used"):
        provider.complete_authorization_callback(f"{REDIRECT}?code=c&state={request['state']}")


def test_an_expired_authorization_request_is_refused() -> None:
    now = [1000.0]
    provider = _offline(clock=lambda: now[0])
    request = provider.authorization_request(REDIRECT)
    now[0] += provider.AUTHORIZATION_REQUEST_LIFETIME + 1
    with pytest.raises(svc.OAuthError, match="expired"):
        provider.complete_authorization_callback(f"{REDIRECT}?code=c&state={request['state']}")


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"access_token": ""},
        {"access_token": "a", "token_type": "mac"},
        {"access_token": "a", "expires_in": -5},
        {"access_token": "a", "expires_in": "soon"},
    ],
)
def test_malformed_token_answers_are_refused(answer: dict[str, Any]) -> None:
    with pytest.raises(svc.OAuthError):
        _offline()._install(answer)


def test_pkce_challenge_and_scope() -> None:
    import base64
    import hashlib
    from urllib import parse

    provider = _offline()
    request = provider.authorization_request(REDIRECT)
    query = dict(parse.parse_qsl(parse.urlsplit(request["authorization_url"]).query))
    digest = hashlib.sha256(request["code_verifier"].encode()).digest()
    assert query["code_challenge"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert query["code_challenge_method"] == "S256"
    assert query["scope"].split()[0] == "openid"
    assert "audience:server:client_id:svc-api" in query["scope"].split()
    assert _offline(refresh_token=False)._scope().count("offline_access") == 0
