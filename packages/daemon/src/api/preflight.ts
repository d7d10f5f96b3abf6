// What a REST request may send before svcd reads its body, decided from the method, path and
// headers alone: a route that needs a bearer answers 401 (or 503 when tokens cannot be verified)
// before a byte of the body is buffered; an unknown route answers at once; public and process-key
// routes read a body only up to the pre-authentication cap unless the request carries a process
// key. The dispatcher checks everything again on the full request (this is only an early refusal).
import { SvcError } from '@svc/protocol';
import { PROCESS_KEY_HEADER } from '../tasks/worker-auth.ts';
import type { Authenticator } from './dispatcher.ts';
import { errorResponse } from './responses.ts';
import type { Router } from './router.ts';
import type { ApiResponse } from './types.ts';

export interface PreflightRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** An early answer, or how much body the request may send: `full` (limits) or `pre-auth`. */
export type PreflightVerdict = ApiResponse | 'full' | 'pre-auth';

export type Preflight = (request: PreflightRequest) => Promise<PreflightVerdict>;

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function createPreflight<S>(router: Router<S>, auth: Authenticator): Preflight {
  const unauthorized = (request: PreflightRequest, code: 'unauthorized' | 'invalid_token', message: string) =>
    errorResponse(
      new SvcError(code, message, {
        headers: {
          'www-authenticate': auth.challenge(code === 'unauthorized' ? undefined : message, request.headers),
        },
      }),
    );

  return async (request) => {
    let access;
    try {
      access = router.match(request.method, request.path).operation.access;
    } catch (error) {
      if (error instanceof SvcError) return errorResponse(error);
      throw error;
    }
    if (access.kind === 'public' || access.kind === 'process-key') {
      const key = request.headers[PROCESS_KEY_HEADER];
      return key !== undefined && key !== '' ? 'full' : 'pre-auth';
    }
    // A rule that also takes one app's process key (GET /svc/metrics): the key, if presented,
    // is judged by the handler alone, as in the dispatcher.
    if (access.kind === 'permission' && access.orProcessKeyOf !== undefined) {
      const key = request.headers[PROCESS_KEY_HEADER];
      if (key !== undefined) return key !== '' ? 'full' : 'pre-auth';
    }
    // Every other access rule starts with a bearer.
    const header = request.headers['authorization'];
    if (header === undefined || header === '')
      return unauthorized(request, 'unauthorized', 'a bearer token is required');
    const match = BEARER.exec(header);
    if (match === null)
      return unauthorized(request, 'invalid_token', 'the Authorization header is not a Bearer token');
    try {
      await auth.authenticate(match[1]!);
    } catch (cause) {
      if (cause instanceof SvcError && cause.code === 'invalid_token')
        return unauthorized(request, 'invalid_token', cause.message);
      if (cause instanceof SvcError) return errorResponse(cause);
      throw cause;
    }
    return 'full';
  };
}
