"""``OAuthClient``: a refreshable token provider backed by an OIDC issuer (client token contract 4).

Flows: authorization code with PKCE S256 (RFC 7636; the callback's single-use ``state`` is checked
before the code is exchanged), device authorization (RFC 8628), refresh (proactive before expiry,
and on demand after a 401 of the daemon), best-effort revocation (RFC 7009).

Trust: discovery must publish exactly the configured ``issuer``. ``access_url`` is how this process
reaches the issuer (e.g. the agent's ``{base_url}/auth``); the endpoints discovery publishes are
mapped onto it, and a route change never changes which issuer is accepted. The refresh token stays
in this object: only access tokens reach the svc client. Nothing is written anywhere unless the
application passes ``persist`` (called with the token set after each change).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib import parse

import requests

from .errors import SvcAuthError, SvcConnectionError
from .token_provider import TokenProvider

if TYPE_CHECKING:
    from .client_http import SvcClient

__all__ = ["OAuthClient", "OAuthError"]

IdTokenValidator = Callable[[str, str, dict[str, Any]], None]
Persist = Callable[[Mapping[str, Any]], None]


class OAuthError(SvcAuthError):
    """The issuer refused a request (``error`` / ``error_description``) or answered nonsense."""

    def __init__(self, message: str, status_code: int | None = None, *, error: str = "") -> None:
        super().__init__(message, status_code, code=error)
        self.error = error


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _base_url(value: str, name: str, allow_plain_http: bool) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} is required")
    candidate = value.strip().rstrip("/")
    parsed = parse.urlsplit(candidate)
    try:
        port = parsed.port
    except ValueError as error:
        raise ValueError(f"{name} has an invalid port") from error
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or parsed.username is not None
        or parsed.password is not None
        or parsed.query
        or parsed.fragment
        or (port is not None and not 0 < port < 65536)
    ):
        raise ValueError(f"{name} must be an absolute HTTP(S) URL without credentials, query or fragment")
    if parsed.scheme == "http" and not allow_plain_http and not _is_loopback(parsed.hostname):
        raise ValueError(f"{name} must use HTTPS unless it is on loopback (or allow_plain_http=True)")
    return candidate


def _unsupported_token_type(response: requests.Response) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    return response.status_code == 400 and isinstance(body, dict) and body.get("error") == "unsupported_token_type"


class OAuthClient(TokenProvider):
    DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
    DEFAULT_SCOPES = ("openid", "profile", "email", "groups", "offline_access")
    #: How long an authorization request's state stays redeemable, seconds.
    AUTHORIZATION_REQUEST_LIFETIME = 600.0

    def __init__(
        self,
        svc_client: SvcClient | None,
        issuer: str,
        access_url: str | None = None,
        client_id: str = "svc-cli",
        audience: str | None = "svc-api",
        scopes: Iterable[str] | str | None = None,
        ssl_verify: bool | str = True,
        timeout: tuple[float, float] | None = (30, 60),
        allow_plain_http: bool = False,
        refresh_token: bool = True,
        *,
        persist: Persist | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        discover: bool = True,
    ) -> None:
        if not client_id:
            raise ValueError("client_id is required")
        if not isinstance(ssl_verify, bool) and not (isinstance(ssl_verify, str) and os.path.exists(ssl_verify)):
            raise ValueError("ssl_verify must be True, False or an existing CA path")
        self.svc_client = svc_client
        self.issuer = _base_url(issuer, "issuer", allow_plain_http)
        self.access_url = _base_url(access_url or issuer, "access_url", allow_plain_http)
        self.client_id = client_id
        self.audience = audience
        selected = self.DEFAULT_SCOPES if scopes is None else scopes
        self.scopes = tuple(selected.split() if isinstance(selected, str) else selected)
        self.refresh_token = refresh_token
        self.ssl_verify = ssl_verify
        self.timeout = timeout
        self._persist = persist
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.RLock()
        self.session: requests.Session | None = requests.Session()
        self._tokens: dict[str, Any] = {}
        self._refresh_at: float | None = None
        self._pending: dict[str, dict[str, Any]] = {}
        self._token_endpoint_override: str | None = None
        self.metadata: dict[str, Any] = self._discover() if discover else {}

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_svc(
        cls,
        svc_client: SvcClient,
        access_url: str | None = None,
        client_id: str | None = None,
        scopes: Iterable[str] | None = None,
        ssl_verify: bool | str = True,
        **kwargs: Any,
    ) -> OAuthClient:
        """From the daemon's public ``/svc/auth/config``: its ``issuer`` is the one accepted;
        ``access_url`` (default: the issuer) is the route to it."""
        config = svc_client.get_auth_config()
        return cls(
            svc_client,
            issuer=config["issuer"],
            access_url=access_url or config["issuer"],
            client_id=client_id or config.get("public_client_id") or "svc-cli",
            audience=config.get("audience"),
            scopes=scopes or config.get("scopes"),
            ssl_verify=ssl_verify,
            refresh_token=bool(config.get("refresh_token", True)),
            **kwargs,
        )

    @classmethod
    def from_token_set(
        cls,
        token_url: str,
        client_id: str = "svc-cli",
        access_token: str | None = None,
        refresh_token: str | None = None,
        expires_in: float | None = None,
        svc_client: SvcClient | None = None,
        ssl_verify: bool | str = True,
        timeout: tuple[float, float] | None = (30, 60),
        **kwargs: Any,
    ) -> OAuthClient:
        """A refresh-only provider from a token pair the application kept (e.g. its own
        persistence); the token endpoint is explicit, so nothing is discovered."""
        if not access_token or not refresh_token:
            raise ValueError("access_token and refresh_token are required")
        endpoint = _base_url(token_url, "token_url", bool(kwargs.pop("allow_plain_http", False)))
        instance = cls(
            svc_client, endpoint, None, client_id, None, (), ssl_verify, timeout, True, discover=False, **kwargs
        )
        instance._token_endpoint_override = endpoint
        tokens: dict[str, Any] = {"access_token": access_token, "token_type": "Bearer", "refresh_token": refresh_token}
        if expires_in is not None:
            tokens["expires_in"] = expires_in
        instance._install(tokens)
        return instance

    # -- discovery and endpoints ----------------------------------------------------------------

    def _discover(self) -> dict[str, Any]:
        url = self.access_url + "/.well-known/openid-configuration"
        try:
            response = self._session().get(url, verify=self.ssl_verify, timeout=self.timeout)
            response.raise_for_status()
            metadata = response.json()
        except (requests.RequestException, ValueError) as error:
            raise SvcConnectionError(f"issuer discovery failed: {type(error).__name__}") from error
        if not isinstance(metadata, dict) or metadata.get("issuer") != self.issuer:
            raise OAuthError("discovery does not publish the configured issuer")
        for name in ("authorization_endpoint", "token_endpoint"):
            if not metadata.get(name):
                raise OAuthError(f"discovery has no {name}")
            self._route(metadata[name])
        return metadata

    def _route(self, published: object) -> str:
        """Map an endpoint the issuer published onto ``access_url``; refuse one outside the issuer."""
        if not isinstance(published, str) or not published:
            raise OAuthError("discovery published an invalid endpoint")
        url = parse.urlsplit(published)
        issuer = parse.urlsplit(self.issuer)
        if (url.scheme, url.netloc) != (issuer.scheme, issuer.netloc) or url.username or url.fragment:
            raise OAuthError("discovery published an endpoint outside the configured issuer")
        root = issuer.path.rstrip("/")
        if root and url.path != root and not url.path.startswith(root + "/"):
            raise OAuthError("discovery published an endpoint outside the issuer's path")
        return self.access_url + url.path[len(root) :] + (f"?{url.query}" if url.query else "")

    def _token_endpoint(self) -> str:
        if self._token_endpoint_override is not None:
            return self._token_endpoint_override
        return self._route(self.metadata.get("token_endpoint"))

    def _scope(self, scopes: Iterable[str] | str | None = None) -> str:
        selected = self.scopes if scopes is None else scopes
        requested = selected.split() if isinstance(selected, str) else list(selected)
        if not self.refresh_token:
            requested = [s for s in requested if s != "offline_access"]
        if "openid" not in requested:
            requested.insert(0, "openid")
        if self.audience:
            requested.append(f"audience:server:client_id:{self.audience}")
        return " ".join(dict.fromkeys(requested))

    def _session(self) -> requests.Session:
        if self.session is None:
            raise SvcConnectionError("the OAuth client is closed")
        return self.session

    def _post_form(self, endpoint: str, form: Mapping[str, str]) -> dict[str, Any]:
        try:
            response = self._session().post(
                endpoint, data=dict(form), verify=self.ssl_verify, timeout=self.timeout, allow_redirects=False
            )
        except requests.RequestException as error:
            raise SvcConnectionError(f"request to the issuer failed: {type(error).__name__}") from error
        try:
            body = response.json()
        except ValueError:
            body = None
        if not response.ok:
            reason = body.get("error") if isinstance(body, dict) else None
            description = body.get("error_description") if isinstance(body, dict) else None
            code: str = reason if isinstance(reason, str) else "oauth_request_failed"
            text = f"{code}: {description}" if isinstance(description, str) and description else code
            raise OAuthError(text, response.status_code, error=code)
        if not isinstance(body, dict):
            raise OAuthError("the issuer answered a token request without a JSON object", response.status_code)
        return body

    # -- token state ----------------------------------------------------------------------------

    def _install(self, tokens: dict[str, Any]) -> dict[str, Any]:
        access = tokens.get("access_token")
        if not isinstance(access, str) or not access:
            raise OAuthError("the token answer has no access_token")
        kind = tokens.get("token_type", "Bearer")
        if not isinstance(kind, str) or kind.lower() != "bearer":
            raise OAuthError("the token answer is not a bearer token")
        refresh_at = None
        lifetime = tokens.get("expires_in")
        if lifetime is not None:
            if isinstance(lifetime, bool) or not isinstance(lifetime, (int, float)) or lifetime <= 0:
                raise OAuthError("the token answer has an invalid expires_in")
            refresh_at = self._clock() + lifetime - max(30.0, lifetime * 0.1)
        with self._lock:
            self._tokens = dict(tokens)
            self._refresh_at = refresh_at
            snapshot = dict(self._tokens)
        if self.svc_client is not None:
            self.svc_client.set_token_provider(self)
        if self._persist is not None:
            self._persist(snapshot)
        return snapshot

    @property
    def tokens(self) -> dict[str, Any]:
        """A copy of the current token set (for the application's own persistence)."""
        with self._lock:
            return dict(self._tokens)

    @property
    def can_refresh(self) -> bool:
        with self._lock:
            return bool(self._tokens.get("refresh_token"))

    def get_access_token(self) -> str | None:
        with self._lock:
            token = self._tokens.get("access_token")
            if token and self._refresh_at is not None and self._clock() >= self._refresh_at and self.can_refresh:
                return str(self._refresh_locked()["access_token"])
            return token if isinstance(token, str) else None

    def refresh_access_token(self, rejected_token: str | None = None) -> str | None:
        """Replace the token the daemon rejected; a concurrent caller that already refreshed wins."""
        with self._lock:
            current = self._tokens.get("access_token")
            if rejected_token and current and current != rejected_token:
                return str(current)
            return str(self._refresh_locked()["access_token"])

    def refresh(self) -> dict[str, Any]:
        with self._lock:
            return self._refresh_locked()

    def _refresh_locked(self) -> dict[str, Any]:
        refresh = self._tokens.get("refresh_token")
        if not refresh:
            raise OAuthError("no refresh token is held")
        try:
            tokens = self._post_form(
                self._token_endpoint(),
                {"grant_type": "refresh_token", "client_id": self.client_id, "refresh_token": refresh},
            )
        except OAuthError as error:
            if error.error == "invalid_grant":
                self.clear()  # the refresh token is dead: nothing left to use
            raise
        tokens.setdefault("refresh_token", refresh)
        return self._install(tokens)

    # -- authorization code + PKCE --------------------------------------------------------------

    @staticmethod
    def _pkce_pair() -> tuple[str, str]:
        verifier = secrets.token_urlsafe(64)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest())
        return verifier, challenge.rstrip(b"=").decode("ascii")

    def authorization_request(
        self,
        redirect_uri: str,
        scopes: Iterable[str] | str | None = None,
        state: str | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]:
        """A browser authorization URL (PKCE S256). The request is remembered under its ``state``
        for ``complete_authorization_callback``, which redeems it once."""
        verifier, challenge = self._pkce_pair()
        state = state or secrets.token_urlsafe(32)
        if nonce is not None and not nonce:
            raise ValueError("nonce must be non-empty when given")
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": self._scope(scopes),
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if nonce is not None:
            query["nonce"] = nonce
        now = self._clock()
        with self._lock:
            self._pending = {
                k: v for k, v in self._pending.items() if now - v["created_at"] <= self.AUTHORIZATION_REQUEST_LIFETIME
            }
            if state in self._pending:
                raise OAuthError("an authorization request already uses this state")
            self._pending[state] = {
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "nonce": nonce,
                "created_at": now,
            }
        endpoint = str(self.metadata.get("authorization_endpoint", ""))
        self._route(endpoint)  # validated; the browser gets the issuer's public URL
        separator = "&" if parse.urlsplit(endpoint).query else "?"
        return {
            "authorization_url": endpoint + separator + parse.urlencode(query),
            "code_verifier": verifier,
            "state": state,
            "nonce": nonce or "",
        }

    def complete_authorization_callback(
        self, callback_url: str, id_token_validator: IdTokenValidator | None = None
    ) -> dict[str, Any]:
        """Check the callback (single-use state, redirect URI, error) before exchanging its code.

        A request made with a ``nonce`` needs ``id_token_validator(id_token, nonce, metadata)``, a
        standards-compliant ID-token validator (signature, issuer, audience, expiry, nonce)."""
        callback = parse.urlsplit(callback_url)
        parameters = parse.parse_qs(callback.query, keep_blank_values=True)
        states = parameters.get("state", [])
        if len(states) != 1 or not states[0]:
            raise OAuthError("the callback has no single state")
        with self._lock:
            pending = self._pending.pop(states[0], None)  # single use, whatever follows
        if pending is None:
            raise OAuthError("the callback's state is unknown or already used")
        if self._clock() - pending["created_at"] > self.AUTHORIZATION_REQUEST_LIFETIME:
            raise OAuthError("the authorization request expired")
        expected = parse.urlsplit(pending["redirect_uri"])
        if (callback.scheme, callback.netloc, callback.path) != (expected.scheme, expected.netloc, expected.path):
            raise OAuthError("the callback does not match the redirect URI")
        if parameters.get("error"):
            error = parameters["error"][0]
            description = (parameters.get("error_description") or [""])[0]
            raise OAuthError(f"{error}: {description}" if description else error, error=error)
        codes = parameters.get("code", [])
        if len(codes) != 1 or not codes[0]:
            raise OAuthError("the callback has no single code")
        if pending["nonce"] is not None and id_token_validator is None:
            raise OAuthError("a request with a nonce needs an ID-token validator")
        tokens = self._post_form(
            self._token_endpoint(),
            {
                "grant_type": "authorization_code",
                "client_id": self.client_id,
                "code": codes[0],
                "redirect_uri": pending["redirect_uri"],
                "code_verifier": pending["code_verifier"],
            },
        )
        if pending["nonce"] is not None and id_token_validator is not None:
            id_token = tokens.get("id_token")
            if not isinstance(id_token, str) or not id_token:
                raise OAuthError("the token answer has no ID token for the nonce")
            id_token_validator(id_token, pending["nonce"], dict(self.metadata))
        return self._install(tokens)

    def exchange_authorization_code(self, code: str, redirect_uri: str, code_verifier: str) -> dict[str, Any]:
        """Low level: exchange a code whose state the caller validated itself."""
        tokens = self._post_form(
            self._token_endpoint(),
            {
                "grant_type": "authorization_code",
                "client_id": self.client_id,
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": code_verifier,
            },
        )
        return self._install(tokens)

    # -- device authorization -------------------------------------------------------------------

    def device_authorization(self, scopes: Iterable[str] | str | None = None) -> dict[str, Any]:
        """Start a device authorization: ``user_code``, ``verification_uri``, ``device_code``, ..."""
        endpoint = self.metadata.get("device_authorization_endpoint")
        if not endpoint:
            raise OAuthError("the issuer offers no device authorization")
        device = self._post_form(self._route(endpoint), {"client_id": self.client_id, "scope": self._scope(scopes)})
        for key in ("verification_uri", "verification_uri_complete"):
            if device.get(key):
                self._route(device[key])
        if not isinstance(device.get("device_code"), str):
            raise OAuthError("the device authorization answer has no device_code")
        return device

    def wait_for_device_authorization(
        self, device: Mapping[str, Any], on_prompt: Callable[[dict[str, Any]], None] | None = None
    ) -> dict[str, Any]:
        """Poll the token endpoint until the user approved (tokens installed), denied or it expired."""
        if on_prompt is not None:
            on_prompt(dict(device))
        interval = max(float(device.get("interval", 5)), 0.0)
        deadline = self._clock() + float(device.get("expires_in", 600))
        while self._clock() < deadline:
            self._sleep(min(interval, max(deadline - self._clock(), 0.0)))
            try:
                tokens = self._post_form(
                    self._token_endpoint(),
                    {
                        "grant_type": self.DEVICE_GRANT,
                        "client_id": self.client_id,
                        "device_code": device["device_code"],
                    },
                )
            except OAuthError as error:
                if error.error == "authorization_pending":
                    continue
                if error.error == "slow_down":
                    interval += 5
                    continue
                raise
            return self._install(tokens)
        raise OAuthError("the device authorization expired before it was approved")

    # -- ending ---------------------------------------------------------------------------------

    def revoke(self) -> bool:
        """Best effort: revoke the refresh and access tokens, then forget them. ``True`` when every
        revocation was accepted (or there was nothing to revoke). A token type the issuer cannot
        revoke (RFC 7009 ``unsupported_token_type``, e.g. a JWT access token, which simply expires)
        does not count as a failure."""
        ok = True
        tokens = self.tokens
        endpoint = self.metadata.get("revocation_endpoint")
        try:
            if endpoint:
                for hint in ("refresh_token", "access_token"):
                    token = tokens.get(hint)
                    if not token:
                        continue
                    try:
                        response = self._session().post(
                            self._route(endpoint),
                            data={"token": token, "token_type_hint": hint, "client_id": self.client_id},
                            verify=self.ssl_verify,
                            timeout=self.timeout,
                        )
                        ok = ok and (response.ok or _unsupported_token_type(response))
                    except (requests.RequestException, OAuthError, SvcConnectionError):
                        ok = False
            else:
                ok = not tokens
        finally:
            self.clear()
        return ok

    def clear(self) -> None:
        """Forget every token and pending request locally (no network)."""
        with self._lock:
            self._tokens = {}
            self._refresh_at = None
            self._pending = {}
        if self.svc_client is not None and self.svc_client.token_provider is self:
            self.svc_client.clear_bearer_token()
        if self._persist is not None:
            self._persist({})

    def close(self) -> None:
        """Release the HTTP session (tokens stay usable until ``clear``/``revoke``)."""
        with self._lock:
            if self.session is not None:
                self.session.close()
                self.session = None

    def __enter__(self) -> OAuthClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
