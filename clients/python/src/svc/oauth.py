"""OAuth helper (placeholder until the built-in issuer is testable)."""

from __future__ import annotations

from .errors import SvcAuthError
from .token_provider import TokenProvider


class OAuthError(SvcAuthError):
    """An OAuth error answer of the issuer (``error``, ``error_description``)."""


class OAuthClient(TokenProvider):
    def get_access_token(self) -> str | None:
        raise NotImplementedError
