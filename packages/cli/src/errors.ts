// Errors the command reports to the user: a message and an exit code, never a stack trace.

/** Documented exit codes (README "Exit codes"). `svc run` exits with the process's own code. */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  auth: 3,
  forbidden: 4,
  notFound: 5,
  unreachable: 6,
  conflict: 7,
  timeout: 124,
  interrupted: 130,
} as const;

/** A user-facing failure: `message` is printed as `svc: <message>`, then the process exits `code`. */
export class CliError extends Error {
  readonly code: number;
  readonly hint: string | undefined;
  constructor(message: string, code: number = EXIT.error, hint?: string) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.hint = hint;
  }
}

/** The daemon answered with an error status and (usually) its `{error, message}` body. */
export class ApiError extends CliError {
  readonly status: number;
  readonly errorCode: string;
  constructor(status: number, errorCode: string, message: string) {
    const { code, hint } = classify(status, errorCode);
    super(message, code, hint);
    this.name = 'ApiError';
    this.status = status;
    this.errorCode = errorCode;
  }
}

function classify(status: number, errorCode: string): { code: number; hint: string | undefined } {
  if (status === 401)
    return { code: EXIT.auth, hint: 'sign in with `svc login` (or set a valid SVC_BEARER_TOKEN)' };
  if (status === 403)
    return errorCode === 'system_app'
      ? { code: EXIT.forbidden, hint: 'system applications are managed by svc itself' }
      : { code: EXIT.forbidden, hint: 'ask an administrator for a role with this permission' };
  if (status === 404) return { code: EXIT.notFound, hint: 'list what exists with `svc ls`' };
  if (status === 409) return { code: EXIT.conflict, hint: 'retry: another change happened at the same time' };
  if (status === 408) return { code: EXIT.timeout, hint: 'raise --timeout' };
  return { code: EXIT.error, hint: undefined };
}

/** Turns a network or TLS failure into an actionable message. */
export function transportError(error: unknown, server: string): CliError {
  const code = (error as { code?: string }).code ?? '';
  const reason = (error as Error).message;
  if (code === 'ECONNREFUSED')
    return new CliError(
      `cannot reach the svc daemon at ${server}: connection refused`,
      EXIT.unreachable,
      'is svcd running? choose another server with -H <url>',
    );
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new CliError(`cannot resolve the host of ${server}`, EXIT.unreachable, 'check the -H <url>');
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code) || /certificate|self[- ]signed/i.test(reason))
    return new CliError(
      `TLS: the certificate of ${server} is not trusted (${reason})`,
      EXIT.unreachable,
      "trust the daemon's CA with --ca <file> (e.g. $SVC_HOME/work/ssl/ca.pem) or NODE_EXTRA_CA_CERTS",
    );
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT')
    return new CliError(`connection to ${server} lost (${code})`, EXIT.unreachable);
  return new CliError(`request to ${server} failed: ${reason}`, EXIT.unreachable);
}
