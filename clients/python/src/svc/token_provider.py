"""Access-token providers: where a client gets the bearer it sends (client token contract rule 3).

A client holds either a static bearer (``StaticAccessTokenProvider``, never refreshes) or a provider.
After a 401 on a replayable request the client asks a provider that ``can_refresh`` for a new token
once and retries once; after a 403 it never refreshes or retries. Refresh credentials stay inside
the provider: only an access token crosses into the client.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

__all__ = ["StaticAccessTokenProvider", "TokenProvider"]


class TokenProvider(ABC):
    @abstractmethod
    def get_access_token(self) -> str | None:
        """A current access token (a provider may refresh ahead of expiry)."""

    @property
    def can_refresh(self) -> bool:
        """Whether ``refresh_access_token`` can replace a rejected token."""
        return False

    def refresh_access_token(self, rejected_token: str | None = None) -> str | None:
        """Replace ``rejected_token`` (the one the daemon answered 401 to) and return the new token.

        Providers compare ``rejected_token`` with their current token so that racing requests
        refresh once."""
        del rejected_token
        return self.get_access_token()

    def clear(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Forget in-memory token state."""


class StaticAccessTokenProvider(TokenProvider):
    """A caller-owned access token, used as is until the caller replaces it."""

    def __init__(self, token: str) -> None:
        if not isinstance(token, str) or not token.strip():
            raise ValueError("bearer token must be a non-empty string")
        self._lock = threading.Lock()
        self._token: str | None = token.strip()

    def get_access_token(self) -> str | None:
        with self._lock:
            return self._token

    def clear(self) -> None:
        with self._lock:
            self._token = None
