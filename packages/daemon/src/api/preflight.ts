// What a REST request may send before svcd reads its body, decided from the method, path and
// headers alone: a route that needs a bearer answers 401 (or 503 when tokens cannot be verified)
// before a byte of the body is buffered; an unknown route answers at once; public and process-key
// routes read a body only up to the pre-authentication cap unless the request carries a process
// key. The dispatcher checks everything again on the full request (this is only an early refusal).
import { SvcError } from '@svc/protocol';
import { needsBearer } from '../auth/access-rules.ts';
import { PROCESS_KEY_HEADER } from '../tasks/worker-auth.ts';
import { authenticateBearer } from './bearer.ts';
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

export function createPreflight<S>(router: Router<S>, auth: Authenticator): Preflight {
  return async (request) => {
    let access;
    try {
      access = router.match(request.method, request.path).operation.access;
    } catch (error) {
      if (error instanceof SvcError) return errorResponse(error);
      throw error;
    }
    if (!needsBearer(access, request.headers)) {
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
    try {
      await authenticateBearer(auth, request.headers);
    } catch (error) {
      if (error instanceof SvcError) return errorResponse(error);
      throw error;
    }
    return 'full';
  };
}
