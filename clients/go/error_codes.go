package svc

// The error codes of spec/errors.json, one sentinel each: errors.Is(err, ErrAppNotFound) holds for
// an *APIError with that code. TestErrorCodesMatchSpec keeps this table equal to the registry.

var (
	// ErrBadRequest: 400 bad_request. The request is malformed.
	ErrBadRequest = &ErrorCode{Code: "bad_request", Status: 400}
	// ErrInvalidJson: 400 invalid_json. The body is not valid JSON.
	ErrInvalidJson = &ErrorCode{Code: "invalid_json", Status: 400}
	// ErrInvalidApp: 400 invalid_app. The application definition fails validation.
	ErrInvalidApp = &ErrorCode{Code: "invalid_app", Status: 400}
	// ErrInvalidName: 400 invalid_name. A name in the path does not match ^[A-Za-z0-9_.-]{1,128}$.
	ErrInvalidName = &ErrorCode{Code: "invalid_name", Status: 400}
	// ErrInvalidQuery: 400 invalid_query. A query parameter is missing or has a bad value.
	ErrInvalidQuery = &ErrorCode{Code: "invalid_query", Status: 400}
	// ErrObsoleteProcessKey: 400 obsolete_process_key. A process key was sent in the query string; it is accepted only in X-Svc-Process-Key.
	ErrObsoleteProcessKey = &ErrorCode{Code: "obsolete_process_key", Status: 400}
	// ErrInvalidFrame: 400 invalid_frame. A TCP or WSS message could not be decoded.
	ErrInvalidFrame = &ErrorCode{Code: "invalid_frame", Status: 400}
	// ErrInvalidTargetHost: 400 invalid_target_host. X-Target-Host is not a valid host[:port] (the target instance's TCP API address).
	ErrInvalidTargetHost = &ErrorCode{Code: "invalid_target_host", Status: 400}
	// ErrUnauthorized: 401 unauthorized. No bearer token was presented.
	ErrUnauthorized = &ErrorCode{Code: "unauthorized", Status: 401}
	// ErrInvalidToken: 401 invalid_token. The bearer token is invalid, expired or from another issuer.
	ErrInvalidToken = &ErrorCode{Code: "invalid_token", Status: 401}
	// ErrForbidden: 403 forbidden. The principal lacks the permission this operation needs.
	ErrForbidden = &ErrorCode{Code: "forbidden", Status: 403}
	// ErrPrincipalTombstoned: 403 principal_tombstoned. The principal record was deleted.
	ErrPrincipalTombstoned = &ErrorCode{Code: "principal_tombstoned", Status: 403}
	// ErrSystemApp: 403 system_app. System applications cannot be changed through the API.
	ErrSystemApp = &ErrorCode{Code: "system_app", Status: 403}
	// ErrTargetNotAllowed: 403 target_not_allowed. X-Target-Host names an instance that is not an allowed target.
	ErrTargetNotAllowed = &ErrorCode{Code: "target_not_allowed", Status: 403}
	// ErrProcessKeyNotForwarded: 403 process_key_not_forwarded. A request carrying X-Svc-Process-Key (worker task RPC) is never forwarded to another instance.
	ErrProcessKeyNotForwarded = &ErrorCode{Code: "process_key_not_forwarded", Status: 403}
	// ErrProcessKeyTransport: 403 process_key_transport. A process key is accepted only on a loopback or private transport.
	ErrProcessKeyTransport = &ErrorCode{Code: "process_key_transport", Status: 403}
	// ErrNotFound: 404 not_found. No such resource.
	ErrNotFound = &ErrorCode{Code: "not_found", Status: 404}
	// ErrAppNotFound: 404 app_not_found. No application with this name.
	ErrAppNotFound = &ErrorCode{Code: "app_not_found", Status: 404}
	// ErrRouteNotFound: 404 route_not_found. No operation at this path.
	ErrRouteNotFound = &ErrorCode{Code: "route_not_found", Status: 404}
	// ErrExternalIdentityProvider: 404 external_identity_provider. The agent serves /auth/* only in builtin auth mode; in external mode sign in at the external identity provider.
	ErrExternalIdentityProvider = &ErrorCode{Code: "external_identity_provider", Status: 404}
	// ErrMethodNotAllowed: 405 method_not_allowed. The path exists but not with this method.
	ErrMethodNotAllowed = &ErrorCode{Code: "method_not_allowed", Status: 405}
	// ErrPersistentConnectionRequired: 405 persistent_connection_required. Subscriptions need a persistent connection (TCP or WSS).
	ErrPersistentConnectionRequired = &ErrorCode{Code: "persistent_connection_required", Status: 405}
	// ErrTimeout: 408 timeout. The operation did not complete within its timeout.
	ErrTimeout = &ErrorCode{Code: "timeout", Status: 408}
	// ErrConflict: 409 conflict. A conflicting concurrent change.
	ErrConflict = &ErrorCode{Code: "conflict", Status: 409}
	// ErrTaskCancelled: 409 task_cancelled. The task was cancelled before its result arrived (by its submitter, or its worker exited).
	ErrTaskCancelled = &ErrorCode{Code: "task_cancelled", Status: 409}
	// ErrProcessSuperseded: 412 process_superseded. The process key belongs to a process that was superseded.
	ErrProcessSuperseded = &ErrorCode{Code: "process_superseded", Status: 412}
	// ErrPayloadTooLarge: 413 payload_too_large. The body or frame exceeds the size limit.
	ErrPayloadTooLarge = &ErrorCode{Code: "payload_too_large", Status: 413}
	// ErrTooManyConnections: 429 too_many_connections. Too many connections or requests from this client.
	ErrTooManyConnections = &ErrorCode{Code: "too_many_connections", Status: 429}
	// ErrInternal: 500 internal. An unexpected error inside the service.
	ErrInternal = &ErrorCode{Code: "internal", Status: 500}
	// ErrTargetUnreachable: 502 target_unreachable. The forward target could not be reached or its connection failed (refused, TLS verification, closed mid-request).
	ErrTargetUnreachable = &ErrorCode{Code: "target_unreachable", Status: 502}
	// ErrUpstreamUnavailable: 502 upstream_unavailable. The agent could not reach the daemon or the built-in issuer behind it.
	ErrUpstreamUnavailable = &ErrorCode{Code: "upstream_unavailable", Status: 502}
	// ErrQueueFull: 503 queue_full. The bounded queue is full.
	ErrQueueFull = &ErrorCode{Code: "queue_full", Status: 503}
	// ErrUnavailable: 503 unavailable. A dependency is unavailable (for example the token issuer).
	ErrUnavailable = &ErrorCode{Code: "unavailable", Status: 503}
	// ErrTargetTimeout: 504 target_timeout. The connection to the forward target was not established within the connect timeout.
	ErrTargetTimeout = &ErrorCode{Code: "target_timeout", Status: 504}
)

// errorCodes lists every sentinel, by code.
var errorCodes = map[string]*ErrorCode{
	"bad_request":                    ErrBadRequest,
	"invalid_json":                   ErrInvalidJson,
	"invalid_app":                    ErrInvalidApp,
	"invalid_name":                   ErrInvalidName,
	"invalid_query":                  ErrInvalidQuery,
	"obsolete_process_key":           ErrObsoleteProcessKey,
	"invalid_frame":                  ErrInvalidFrame,
	"invalid_target_host":            ErrInvalidTargetHost,
	"unauthorized":                   ErrUnauthorized,
	"invalid_token":                  ErrInvalidToken,
	"forbidden":                      ErrForbidden,
	"principal_tombstoned":           ErrPrincipalTombstoned,
	"system_app":                     ErrSystemApp,
	"target_not_allowed":             ErrTargetNotAllowed,
	"process_key_not_forwarded":      ErrProcessKeyNotForwarded,
	"process_key_transport":          ErrProcessKeyTransport,
	"not_found":                      ErrNotFound,
	"app_not_found":                  ErrAppNotFound,
	"route_not_found":                ErrRouteNotFound,
	"external_identity_provider":     ErrExternalIdentityProvider,
	"method_not_allowed":             ErrMethodNotAllowed,
	"persistent_connection_required": ErrPersistentConnectionRequired,
	"timeout":                        ErrTimeout,
	"conflict":                       ErrConflict,
	"task_cancelled":                 ErrTaskCancelled,
	"process_superseded":             ErrProcessSuperseded,
	"payload_too_large":              ErrPayloadTooLarge,
	"too_many_connections":           ErrTooManyConnections,
	"internal":                       ErrInternal,
	"target_unreachable":             ErrTargetUnreachable,
	"upstream_unavailable":           ErrUpstreamUnavailable,
	"queue_full":                     ErrQueueFull,
	"unavailable":                    ErrUnavailable,
	"target_timeout":                 ErrTargetTimeout,
}
