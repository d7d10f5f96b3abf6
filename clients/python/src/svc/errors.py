"""Exceptions of the svc client.

The hierarchy keeps App Mesh 3.0's names under the svc brand (``SvcError``, ``SvcAuthError``,
``SvcConnectionError``, ``SvcTimeoutError``, ``SvcRequestError``, ``SvcAppRemovedError``,
``SvcProcessSupersededError``, ``SvcWorkerRejectedError``) and adds one class per stable error code
of the daemon (``spec/errors.json``): an error answer ``{"error": "<code>", "message": "..."}``
is raised as the class of its code, which is a subclass of the class of its HTTP status.

    SvcError
    ├── SvcConnectionError            transport down or disconnected (never a timeout)
    │   └── SvcTimeoutError           idle receive timeout on a healthy connection
    ├── SvcAppRemovedError            run-wait: the app was removed before its exit was seen
    └── SvcRequestError               the daemon answered an error status (status_code, code)
        ├── SvcBadRequestError (400)  ... SvcWorkerRejectedError, SvcInvalidAppError, ...
        ├── SvcAuthError (401, 403)   SvcUnauthorizedError, SvcForbiddenError and their codes
        ├── SvcNotFoundError (404)    SvcAppNotFoundError, ...
        ├── ... one class per status, one per code
        └── SvcProcessSupersededError (412)
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = [
    "ERROR_CLASSES",
    "STATUS_CLASSES",
    "SvcAppNotFoundError",
    "SvcAppRemovedError",
    "SvcAuthError",
    "SvcBadRequestError",
    "SvcConflictError",
    "SvcConnectionError",
    "SvcError",
    "SvcExternalIdentityProviderError",
    "SvcForbiddenError",
    "SvcInternalError",
    "SvcInvalidAppError",
    "SvcInvalidFrameError",
    "SvcInvalidJsonError",
    "SvcInvalidNameError",
    "SvcInvalidQueryError",
    "SvcInvalidTargetHostError",
    "SvcInvalidTokenError",
    "SvcMethodNotAllowedError",
    "SvcNotFoundError",
    "SvcObsoleteProcessKeyError",
    "SvcPayloadTooLargeError",
    "SvcPersistentConnectionRequiredError",
    "SvcPrincipalTombstonedError",
    "SvcProcessKeyNotForwardedError",
    "SvcProcessKeyTransportError",
    "SvcProcessSupersededError",
    "SvcQueueFullError",
    "SvcRequestError",
    "SvcRequestTimeoutError",
    "SvcRouteNotFoundError",
    "SvcSystemAppError",
    "SvcTargetNotAllowedError",
    "SvcTargetTimeoutError",
    "SvcTargetUnreachableError",
    "SvcTaskCancelledError",
    "SvcTimeoutError",
    "SvcTooManyConnectionsError",
    "SvcUnauthorizedError",
    "SvcUnavailableError",
    "SvcUpstreamUnavailableError",
    "SvcWorkerRejectedError",
    "error_from_response",
]


class SvcError(Exception):
    """Base class of every error raised by the svc client."""


class SvcConnectionError(SvcError):
    """The transport could not connect, or disconnected (a disconnect is never a timeout)."""


class SvcTimeoutError(SvcConnectionError):
    """An idle receive timeout on an otherwise healthy connection (safe to continue)."""


class SvcAppRemovedError(SvcError):
    """The application was removed before its process exit was observed."""


class SvcRequestError(SvcError):
    """The daemon answered with an error status.

    ``status_code`` is the HTTP status, ``code`` the stable error code of the body (``""`` when the
    body carried none), ``detail`` the human text of the body.
    """

    #: The error code this class stands for (``""`` for a class that covers a whole status).
    CODE = ""
    #: The HTTP status this class stands for (0 for a class that covers several).
    STATUS = 0

    def __init__(self, message: str, status_code: int | None = None, *, code: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code if status_code is not None else (self.STATUS or None)
        self.code = code or self.CODE
        self.detail = detail


class SvcBadRequestError(SvcRequestError):
    STATUS = 400


class SvcAuthError(SvcRequestError):
    """Authentication (401: the credential is rejected) or authorization (403: not permitted).

    Never treat the two alike: a refresh can cure a 401, never a 403.
    """


class SvcUnauthorizedError(SvcAuthError):
    STATUS = 401
    CODE = "unauthorized"


class SvcForbiddenError(SvcAuthError):
    STATUS = 403
    CODE = "forbidden"


class SvcNotFoundError(SvcRequestError):
    STATUS = 404
    CODE = "not_found"


class SvcMethodNotAllowedError(SvcRequestError):
    STATUS = 405
    CODE = "method_not_allowed"


class SvcRequestTimeoutError(SvcRequestError):
    """The daemon gave up waiting (408, e.g. a task nobody answered); not a transport timeout."""

    STATUS = 408
    CODE = "timeout"


class SvcConflictError(SvcRequestError):
    STATUS = 409
    CODE = "conflict"


class SvcProcessSupersededError(SvcRequestError):
    """The worker's process key was superseded by a newer process of its app (412)."""

    STATUS = 412
    CODE = "process_superseded"


class SvcPayloadTooLargeError(SvcRequestError):
    STATUS = 413
    CODE = "payload_too_large"


class SvcTooManyConnectionsError(SvcRequestError):
    STATUS = 429
    CODE = "too_many_connections"


class SvcInternalError(SvcRequestError):
    STATUS = 500
    CODE = "internal"


class SvcBadGatewayError(SvcRequestError):
    STATUS = 502


class SvcServiceUnavailableError(SvcRequestError):
    STATUS = 503


class SvcGatewayTimeoutError(SvcRequestError):
    STATUS = 504


# --- one class per code ----------------------------------------------------------------------


class SvcInvalidJsonError(SvcBadRequestError):
    CODE = "invalid_json"


class SvcInvalidAppError(SvcBadRequestError):
    CODE = "invalid_app"


class SvcInvalidNameError(SvcBadRequestError):
    CODE = "invalid_name"


class SvcInvalidQueryError(SvcBadRequestError):
    CODE = "invalid_query"


class SvcObsoleteProcessKeyError(SvcBadRequestError):
    CODE = "obsolete_process_key"


class SvcInvalidFrameError(SvcBadRequestError):
    CODE = "invalid_frame"


class SvcInvalidTargetHostError(SvcBadRequestError):
    CODE = "invalid_target_host"


class SvcWorkerRejectedError(SvcBadRequestError):
    """The daemon permanently rejected a worker task request (400); retrying cannot help."""


class SvcInvalidTokenError(SvcUnauthorizedError):
    CODE = "invalid_token"


class SvcPrincipalTombstonedError(SvcForbiddenError):
    CODE = "principal_tombstoned"


class SvcSystemAppError(SvcForbiddenError):
    CODE = "system_app"


class SvcTargetNotAllowedError(SvcForbiddenError):
    CODE = "target_not_allowed"


class SvcProcessKeyNotForwardedError(SvcForbiddenError):
    CODE = "process_key_not_forwarded"


class SvcProcessKeyTransportError(SvcForbiddenError):
    CODE = "process_key_transport"


class SvcAppNotFoundError(SvcNotFoundError):
    CODE = "app_not_found"


class SvcRouteNotFoundError(SvcNotFoundError):
    CODE = "route_not_found"


class SvcExternalIdentityProviderError(SvcNotFoundError):
    CODE = "external_identity_provider"


class SvcPersistentConnectionRequiredError(SvcMethodNotAllowedError):
    CODE = "persistent_connection_required"


class SvcTaskCancelledError(SvcConflictError):
    CODE = "task_cancelled"


class SvcTargetUnreachableError(SvcBadGatewayError):
    CODE = "target_unreachable"


class SvcUpstreamUnavailableError(SvcBadGatewayError):
    CODE = "upstream_unavailable"


class SvcQueueFullError(SvcServiceUnavailableError):
    CODE = "queue_full"


class SvcUnavailableError(SvcServiceUnavailableError):
    CODE = "unavailable"


class SvcTargetTimeoutError(SvcGatewayTimeoutError):
    CODE = "target_timeout"


#: Every error code of the daemon (spec/errors.json) -> the exception raised for it.
ERROR_CLASSES: Mapping[str, type[SvcRequestError]] = {
    "bad_request": SvcBadRequestError,
    "invalid_json": SvcInvalidJsonError,
    "invalid_app": SvcInvalidAppError,
    "invalid_name": SvcInvalidNameError,
    "invalid_query": SvcInvalidQueryError,
    "obsolete_process_key": SvcObsoleteProcessKeyError,
    "invalid_frame": SvcInvalidFrameError,
    "invalid_target_host": SvcInvalidTargetHostError,
    "unauthorized": SvcUnauthorizedError,
    "invalid_token": SvcInvalidTokenError,
    "forbidden": SvcForbiddenError,
    "principal_tombstoned": SvcPrincipalTombstonedError,
    "system_app": SvcSystemAppError,
    "target_not_allowed": SvcTargetNotAllowedError,
    "process_key_not_forwarded": SvcProcessKeyNotForwardedError,
    "process_key_transport": SvcProcessKeyTransportError,
    "not_found": SvcNotFoundError,
    "app_not_found": SvcAppNotFoundError,
    "route_not_found": SvcRouteNotFoundError,
    "external_identity_provider": SvcExternalIdentityProviderError,
    "method_not_allowed": SvcMethodNotAllowedError,
    "persistent_connection_required": SvcPersistentConnectionRequiredError,
    "timeout": SvcRequestTimeoutError,
    "conflict": SvcConflictError,
    "task_cancelled": SvcTaskCancelledError,
    "process_superseded": SvcProcessSupersededError,
    "payload_too_large": SvcPayloadTooLargeError,
    "too_many_connections": SvcTooManyConnectionsError,
    "internal": SvcInternalError,
    "target_unreachable": SvcTargetUnreachableError,
    "upstream_unavailable": SvcUpstreamUnavailableError,
    "queue_full": SvcQueueFullError,
    "unavailable": SvcUnavailableError,
    "target_timeout": SvcTargetTimeoutError,
}

#: The class for an error status whose body names no known code.
STATUS_CLASSES: Mapping[int, type[SvcRequestError]] = {
    400: SvcBadRequestError,
    401: SvcUnauthorizedError,
    403: SvcForbiddenError,
    404: SvcNotFoundError,
    405: SvcMethodNotAllowedError,
    408: SvcRequestTimeoutError,
    409: SvcConflictError,
    412: SvcProcessSupersededError,
    413: SvcPayloadTooLargeError,
    429: SvcTooManyConnectionsError,
    500: SvcInternalError,
    502: SvcBadGatewayError,
    503: SvcServiceUnavailableError,
    504: SvcGatewayTimeoutError,
}


def _parse_error_body(body: bytes) -> tuple[str, str]:
    """``(code, message)`` of an error body; empty strings when it is not the contract's shape."""
    if not body or len(body) > 64 * 1024:
        return "", ""
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "", ""
    if not isinstance(parsed, dict):
        return "", ""
    code = parsed.get("error")
    message = parsed.get("message")
    return (code if isinstance(code, str) else ""), (message if isinstance(message, str) else "")


def error_from_response(status: int, body: bytes, context: str = "") -> SvcRequestError:
    """The exception for an error answer: the class of its code, else of its status.

    The message holds the status, the code and the daemon's text (bounded), never request headers
    (so never a bearer).
    """
    code, detail = _parse_error_body(body)
    cls = ERROR_CLASSES.get(code)
    if cls is None or (cls.STATUS and status != cls.STATUS):
        cls = STATUS_CLASSES.get(status, SvcRequestError)
        if status in (401, 403) and cls is SvcRequestError:
            cls = SvcAuthError
    text = detail or body[:200].decode("utf-8", errors="replace")
    prefix = f"{context}: " if context else ""
    label = f" {code}" if code else ""
    return cls(f"{prefix}HTTP {status}{label}: {text}".rstrip(": "), status, code=code, detail=detail)
