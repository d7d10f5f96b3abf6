// Errors of the client library. Every error the library throws extends SvcClientError.
//
//   SvcClientError
//   ├── ApiError (status, code from the one registry ERROR_CODES; one subclass per code, generated below)
//   ├── TransportDisconnectedError   the persistent transport is gone (a connection error, never a timeout)
//   ├── AppRemovedError              waitForAsyncRun: the app was removed before it exited
//   ├── ProcessSupersededError       runWorker: 412, the process key belongs to a superseded process
//   ├── WorkerRejectedError          runWorker: 400, permanent rejection (never retried)
//   └── WorkerEnvironmentError       runWorker: SVC_PROCESS_KEY / SVC_APPLICATION_NAME / SVC_DAEMON_URL missing
import { ERROR_CODES, isErrorCode, type ErrorCode } from '@svc/protocol';

export class SvcClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
}

/** The persistent transport (TCP or WSS) disconnected or was closed. A connection error, not a timeout. */
export class TransportDisconnectedError extends SvcClientError {}

/** waitForAsyncRun: the run's app was removed (REMOVED event) before its exit was observed. */
export class AppRemovedError extends SvcClientError {
  readonly appName: string;
  constructor(appName: string, options?: { cause?: unknown }) {
    super(`application ${appName} was removed before its process exited`, options);
    this.appName = appName;
  }
}

/** runWorker: the daemon answered 412, this process was superseded. The loop stopped, no retry. */
export class ProcessSupersededError extends SvcClientError {}

/** runWorker: the daemon answered 400 (invalid request or obsolete query-string key). No retry. */
export class WorkerRejectedError extends SvcClientError {}

/** runWorker: a required environment variable is missing. Raised at once, never retried. */
export class WorkerEnvironmentError extends SvcClientError {}

/** A non-2xx answer of the daemon: `{error: code, message}` with the HTTP status of the code. */
export class ApiError extends SvcClientError {
  readonly status: number;
  /** The registry code, or the raw `error` string when the daemon sent one this client does not know. */
  readonly code: ErrorCode | (string & {});
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    code: ErrorCode | (string & {}),
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.headers = options?.headers ?? {};
  }
}

type ApiErrorClass = new (
  message: string,
  options?: { cause?: unknown; headers?: Record<string, string> },
) => ApiError;

function pascal(code: string): string {
  return code.replace(/(^|_)([a-z])/g, (_m, _s: string, c: string) => c.toUpperCase());
}

function defineCodeClass(code: ErrorCode): ApiErrorClass {
  const status = ERROR_CODES[code].status;
  const cls = class extends ApiError {
    constructor(message: string, options?: { cause?: unknown; headers?: Record<string, string> }) {
      super(status, code, message, options);
    }
  };
  const name = `${pascal(code)}Error`;
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}

/**
 * One class per registry code, generated from ERROR_CODES: `API_ERRORS.app_not_found` is
 * `AppNotFoundError` (status 404, code 'app_not_found'). Test with `instanceof API_ERRORS.<code>`
 * or compare `error.code`.
 */
export const API_ERRORS: { readonly [C in ErrorCode]: ApiErrorClass } = Object.fromEntries(
  (Object.keys(ERROR_CODES) as ErrorCode[]).map((code) => [code, defineCodeClass(code)]),
) as { readonly [C in ErrorCode]: ApiErrorClass };

/** The error for a non-2xx answer; `body` is the raw response body. */
export function apiErrorFrom(
  status: number,
  body: Uint8Array,
  headers: Record<string, string> = {},
): ApiError {
  let code: string | undefined;
  let message = `HTTP ${status}`;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(body));
    if (typeof parsed === 'object' && parsed !== null) {
      const record = parsed as Record<string, unknown>;
      if (typeof record['error'] === 'string') code = record['error'];
      if (typeof record['message'] === 'string') message = record['message'];
    }
  } catch {
    // not a JSON error body: keep the status line as the message
  }
  if (code !== undefined && isErrorCode(code)) return new API_ERRORS[code](message, { headers });
  return new ApiError(status, code ?? `http_${status}`, message, { headers });
}
