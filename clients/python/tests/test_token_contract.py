"""Client token contract: a static bearer or a provider; on 401 one refresh and one retry; never
after 403; a static provider never refreshes. Against a real svcd on every transport."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SENT, Served, make_client, unique

import svc


class ScriptedProvider(svc.TokenProvider):
    """Hands out ``tokens`` in order: the first from ``get_access_token``, later ones on refresh."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.current = self.tokens.pop(0)
        self.rejected: list[str | None] = []

    @property
    def can_refresh(self) -> bool:
        return True

    def get_access_token(self) -> str | None:
        return self.current

    def refresh_access_token(self, rejected_token: str | None = None) -> str | None:
        self.rejected.append(rejected_token)
        if self.tokens:
            self.current = self.tokens.pop(0)
        return self.current


def _client(served: Served, transport: str, provider: svc.TokenProvider) -> svc.SvcClient:
    client = make_client(served, transport, identity="")
    client.set_token_provider(provider)
    return client


def _sent(path: str) -> int:
    return sum(1 for _, p in SENT if p == path)


def test_refresh_once_after_401_then_retry(served: Served, transport: str) -> None:
    provider = ScriptedProvider("expired.token.value", served["tokens"]["svc-admin"])
    client = _client(served, transport, provider)
    before = _sent("/svc/principal/self")
    assert client.get_current_principal()["principal_id"] == served["principals"]["svc-admin"]
    assert provider.rejected == ["expired.token.value"]  # refreshed once, naming the rejected token
    assert _sent("/svc/principal/self") - before == 2  # the request and its one retry
    client.close()


def test_no_second_refresh(served: Served, transport: str) -> None:
    provider = ScriptedProvider("bad.one", "bad.two", served["tokens"]["svc-admin"])
    client = _client(served, transport, provider)
    with pytest.raises(svc.SvcUnauthorizedError) as caught:
        client.list_apps()
    assert provider.rejected == ["bad.one"]
    assert "bad.two" not in str(caught.value)
    client.close()


def test_never_refresh_or_retry_after_403(served: Served, transport: str) -> None:
    provider = ScriptedProvider(served["tokens"]["svc-viewer"], served["tokens"]["svc-admin"])
    client = _client(served, transport, provider)
    before = _sent("/svc/label/py_forbidden")
    client.request("GET", "/svc/labels")  # label-view: the viewer has it
    with pytest.raises(svc.SvcForbiddenError) as caught:
        client.add_label("py_forbidden", "x")
    assert caught.value.status_code == 403
    assert provider.rejected == []
    assert _sent("/svc/label/py_forbidden") - before == 1  # no retry
    client.close()


def test_machine_identity_may_not_register_or_run_tasks(served: Served, transport: str) -> None:
    admin = make_client(served, "https")
    name = unique("machine", transport)
    admin.add_app(svc.App({"name": name, "command": "sleep 300", "shell": True}))
    client = make_client(served, transport, identity="machine")
    try:
        with pytest.raises(svc.SvcForbiddenError):
            client.add_app(svc.App({"name": unique("machine-new", transport), "command": "true"}))
        with pytest.raises(svc.SvcForbiddenError):
            client.run_task(name, "x")
    finally:
        admin.delete_app(name)
        client.close()


def test_a_static_bearer_never_refreshes(served: Served, transport: str) -> None:
    client = make_client(served, transport, identity="")
    client.set_bearer_token("static.but.wrong")
    assert client.token_provider is not None
    assert client.token_provider.can_refresh is False
    before = _sent("/svc/applications")
    with pytest.raises(svc.SvcUnauthorizedError):
        client.list_apps()
    assert _sent("/svc/applications") - before == 1
    client.clear_bearer_token()
    assert client.token_provider is None
    client.close()


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_static_provider_rejects_empty_tokens(bad: str | None) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        svc.StaticAccessTokenProvider(bad)  # type: ignore[arg-type]


def test_bearer_and_provider_are_exclusive(served: Served) -> None:
    with pytest.raises(ValueError, match="exclusive"):
        svc.SvcClient(served["rest"], ssl_verify=served["ca"], bearer_token="a", token_provider=ScriptedProvider("b"))  # noqa: S106


def test_tls_is_verified_by_default(served: Served, transport: str) -> None:
    client = make_client(served, transport)
    client.ssl_verify = True  # system CAs only: the test daemon's CA is not among them
    if isinstance(client, svc.SvcClientTCP | svc.SvcClientWSS):
        client.reconnect()
    with pytest.raises(svc.SvcConnectionError):
        client.list_apps()
    client.close()


def test_default_ca_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from svc.client_http import SvcClient as Rest

    monkeypatch.setattr(Rest, "_DEFAULT_SSL_DIR", tmp_path / "none")
    monkeypatch.setattr(Rest, "_PACKAGED_CA", tmp_path / "packaged.pem")
    assert Rest._resolve_ssl_verify(None) is True  # nothing installed: the system CAs
    (tmp_path / "packaged.pem").write_text("x")
    assert Rest._resolve_ssl_verify(None) == str(tmp_path / "packaged.pem")
    assert Rest._resolve_ssl_verify(False) is False
    with pytest.raises(ValueError, match="does not exist"):
        Rest._resolve_ssl_verify(str(tmp_path / "missing.pem"))
