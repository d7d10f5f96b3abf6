// The one registry of error codes. Every error body on every transport is
// `{"error": <code>, "message": <human text>}` with `error` taken from this table; the HTTP status
// travels with the code. spec/errors.json is generated from this table (npm run gen:spec) and a
// test keeps the two, the docs and the clients in step.

export const ERROR_CODES = {
  bad_request: { status: 400, description: 'The request is malformed.' },
  invalid_json: { status: 400, description: 'The body is not valid JSON.' },
  invalid_app: { status: 400, description: 'The application definition fails validation.' },
  invalid_name: { status: 400, description: 'A name in the path does not match ^[A-Za-z0-9_.-]{1,128}$.' },
  invalid_query: { status: 400, description: 'A query parameter is missing or has a bad value.' },
  obsolete_process_key: {
    status: 400,
    description: 'A process key was sent in the query string; it is accepted only in X-Svc-Process-Key.',
  },
  invalid_frame: { status: 400, description: 'A TCP or WSS message could not be decoded.' },
  invalid_target_host: {
    status: 400,
    description: "X-Target-Host is not a valid host[:port] (the target instance's TCP API address).",
  },
  unauthorized: { status: 401, description: 'No bearer token was presented.' },
  invalid_token: { status: 401, description: 'The bearer token is invalid, expired or from another issuer.' },
  forbidden: { status: 403, description: 'The principal lacks the permission this operation needs.' },
  principal_tombstoned: { status: 403, description: 'The principal record was deleted.' },
  system_app: { status: 403, description: 'System applications cannot be changed through the API.' },
  target_not_allowed: {
    status: 403,
    description: 'X-Target-Host names an instance that is not an allowed target.',
  },
  process_key_not_forwarded: {
    status: 403,
    description:
      'A request carrying X-Svc-Process-Key (worker task RPC) is never forwarded to another instance.',
  },
  process_key_transport: {
    status: 403,
    description: 'A process key is accepted only on a loopback or private transport.',
  },
  not_found: { status: 404, description: 'No such resource.' },
  app_not_found: { status: 404, description: 'No application with this name.' },
  route_not_found: { status: 404, description: 'No operation at this path.' },
  external_identity_provider: {
    status: 404,
    description:
      'The agent serves /auth/* only in builtin auth mode; in external mode sign in at the external identity provider.',
  },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method.' },
  persistent_connection_required: {
    status: 405,
    description: 'Subscriptions need a persistent connection (TCP or WSS).',
  },
  timeout: { status: 408, description: 'The operation did not complete within its timeout.' },
  conflict: { status: 409, description: 'A conflicting concurrent change.' },
  task_cancelled: {
    status: 409,
    description: 'The task was cancelled before its result arrived (by its submitter, or its worker exited).',
  },
  process_superseded: {
    status: 412,
    description: 'The process key belongs to a process that was superseded.',
  },
  payload_too_large: { status: 413, description: 'The body or frame exceeds the size limit.' },
  too_many_connections: { status: 429, description: 'Too many connections or requests from this client.' },
  internal: { status: 500, description: 'An unexpected error inside the service.' },
  target_unreachable: {
    status: 502,
    description:
      'The forward target could not be reached or its connection failed (refused, TLS verification, closed mid-request).',
  },
  upstream_unavailable: {
    status: 502,
    description: 'The agent could not reach the daemon or the built-in issuer behind it.',
  },
  queue_full: { status: 503, description: 'The bounded queue is full.' },
  unavailable: { status: 503, description: 'A dependency is unavailable (for example the token issuer).' },
  target_timeout: {
    status: 504,
    description: 'The connection to the forward target was not established within the connect timeout.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: ErrorCode;
  message: string;
}

/** An error that crosses the API boundary with a stable code. Always pass `cause` when wrapping. */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra response headers, for example WWW-Authenticate on 401. */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.headers = options?.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error: this.code, message: this.message };
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
