package svc;

/**
 * The daemon's error codes (spec/errors.json, the one registry): every non-2xx answer carries
 * {@code {"error": "<code>", "message": "<text>"}} with the status of its code. Tests check that this
 * enum and spec/errors.json hold exactly the same codes and statuses.
 */
public enum SvcErrorCode {
    /** The request is malformed. */
    BAD_REQUEST("bad_request", 400),
    /** The body is not valid JSON. */
    INVALID_JSON("invalid_json", 400),
    /** The application definition fails validation. */
    INVALID_APP("invalid_app", 400),
    /** A name in the path does not match ^[A-Za-z0-9_.-]{1,128}$. */
    INVALID_NAME("invalid_name", 400),
    /** A query parameter is missing or has a bad value. */
    INVALID_QUERY("invalid_query", 400),
    /** A process key was sent in the query string; it is accepted only in X-Svc-Process-Key. */
    OBSOLETE_PROCESS_KEY("obsolete_process_key", 400),
    /** A TCP or WSS message could not be decoded. */
    INVALID_FRAME("invalid_frame", 400),
    /** X-Target-Host is not a valid host[:port] (the target instance's TCP API address). */
    INVALID_TARGET_HOST("invalid_target_host", 400),
    /** No bearer token was presented. */
    UNAUTHORIZED("unauthorized", 401),
    /** The bearer token is invalid, expired or from another issuer. */
    INVALID_TOKEN("invalid_token", 401),
    /** The principal lacks the permission this operation needs. */
    FORBIDDEN("forbidden", 403),
    /** The principal record was deleted. */
    PRINCIPAL_TOMBSTONED("principal_tombstoned", 403),
    /** System applications cannot be changed through the API. */
    SYSTEM_APP("system_app", 403),
    /** X-Target-Host names an instance that is not an allowed target. */
    TARGET_NOT_ALLOWED("target_not_allowed", 403),
    /** A request carrying X-Svc-Process-Key (worker task RPC) is never forwarded to another instance. */
    PROCESS_KEY_NOT_FORWARDED("process_key_not_forwarded", 403),
    /** A process key is accepted only on a loopback or private transport. */
    PROCESS_KEY_TRANSPORT("process_key_transport", 403),
    /** No such resource. */
    NOT_FOUND("not_found", 404),
    /** No application with this name. */
    APP_NOT_FOUND("app_not_found", 404),
    /** No operation at this path. */
    ROUTE_NOT_FOUND("route_not_found", 404),
    /** The agent serves /auth/* only in builtin auth mode; in external mode sign in at the external identity provider. */
    EXTERNAL_IDENTITY_PROVIDER("external_identity_provider", 404),
    /** The path exists but not with this method. */
    METHOD_NOT_ALLOWED("method_not_allowed", 405),
    /** Subscriptions need a persistent connection (TCP or WSS). */
    PERSISTENT_CONNECTION_REQUIRED("persistent_connection_required", 405),
    /** The operation did not complete within its timeout. */
    TIMEOUT("timeout", 408),
    /** A conflicting concurrent change. */
    CONFLICT("conflict", 409),
    /** The task was cancelled before its result arrived (by its submitter, or its worker exited). */
    TASK_CANCELLED("task_cancelled", 409),
    /** The process key belongs to a process that was superseded. */
    PROCESS_SUPERSEDED("process_superseded", 412),
    /** The body or frame exceeds the size limit. */
    PAYLOAD_TOO_LARGE("payload_too_large", 413),
    /** Too many connections or requests from this client. */
    TOO_MANY_CONNECTIONS("too_many_connections", 429),
    /** An unexpected error inside the service. */
    INTERNAL("internal", 500),
    /** The forward target could not be reached or its connection failed (refused, TLS verification, closed mid-request). */
    TARGET_UNREACHABLE("target_unreachable", 502),
    /** The agent could not reach the daemon or the built-in issuer behind it. */
    UPSTREAM_UNAVAILABLE("upstream_unavailable", 502),
    /** The bounded queue is full. */
    QUEUE_FULL("queue_full", 503),
    /** A dependency is unavailable (for example the token issuer). */
    UNAVAILABLE("unavailable", 503),
    /** The connection to the forward target was not established within the connect timeout. */
    TARGET_TIMEOUT("target_timeout", 504);

    private final String code;
    private final int status;

    SvcErrorCode(String code, int status) {
        this.code = code;
        this.status = status;
    }

    /** The wire code, e.g. {@code app_not_found}. */
    public String code() {
        return code;
    }

    /** The HTTP status the daemon answers with this code. */
    public int status() {
        return status;
    }

    /** The constant of a wire code, or null for a code this client does not know. */
    public static SvcErrorCode fromCode(String code) {
        for (SvcErrorCode c : values()) {
            if (c.code.equals(code)) {
                return c;
            }
        }
        return null;
    }
}
