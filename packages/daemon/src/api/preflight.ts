// What a REST request may send before svcd reads its body, decided from the method, path, query and
// headers alone (issue 25 H2): an unknown route answers at once; a route that needs a bearer answers
// 401 (or 503 when tokens cannot be verified), and then its operation's access rule is decided as
// far as the head allows (auth/access-rules.ts `decideFromHead`: the whole rule, except for a run
// of a copy, whose application is named in the body: there the run permission), so that a refused
// request is answered 403/404 before a byte of its body is buffered. A process-key route is decided
// whole from the head; a public route reads a body only up to the pre-authentication cap. A
// request for another node (X-Target-Host) is checked for its bearer only: the rule is the target's
// to decide. The dispatcher checks everything again on the full request (this is an early refusal).
import { SvcError } from '@svc/protocol';
import {
  decideFromHead,
  decideWithoutBearer,
  METRICS_READER_APP,
  needsBearer,
  type AccessResolver,
} from '../auth/access-rules.ts';
import { authenticateBearer } from './bearer.ts';
import { persistentConnectionRequired, type Authenticator } from './dispatcher.ts';
import { errorResponse } from './responses.ts';
import type { Router } from './router.ts';
import type { ApiResponse } from './types.ts';

export interface PreflightRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
  /** The peer's address (the client's when svc-agent relayed the request). */
  readonly remoteAddress: string;
  readonly relayedByAgent: boolean;
}

/** The request may send its body: how much (`full`: the limits, `pre-auth`: 1 MiB) and for whom. */
export interface PreflightPass {
  readonly body: 'full' | 'pre-auth';
  /** The operation reads at most this many bytes (BodySpec.maxBytes), when it says so. */
  readonly maxBytes?: number | undefined;
  /** The bearer's principal, when the route needs one (its in-flight budget pays for the body). */
  readonly principalId?: string | undefined;
}

/** An early answer, or the pass. */
export type PreflightVerdict = ApiResponse | PreflightPass;

export type Preflight = (request: PreflightRequest) => Promise<PreflightVerdict>;

export function isPreflightPass(verdict: PreflightVerdict): verdict is PreflightPass {
  return 'body' in verdict && typeof verdict.body === 'string';
}

const PRE_AUTH: PreflightPass = { body: 'pre-auth' };

export function createPreflight<S>(router: Router<S>, auth: Authenticator, resolver: AccessResolver): Preflight {
  return async (request) => {
    try {
      const { operation, params } = router.match(request.method, request.path);
      const access = operation.access;
      if (access.kind === 'public') return PRE_AUTH;
      if (!needsBearer(access, request.headers)) {
        // A process key (task RPC, GET /svc/metrics for the agent): decided from the head whole;
        // its application pays for the body.
        const input = { params, query: request.query, body: undefined };
        decideWithoutBearer(access, { ...request, connection: undefined }, input, resolver);
        // The anonymous health of a registered service: as public, no principal pays.
        if (access.kind === 'visible-app') return PRE_AUTH;
        const app = access.kind === 'process-key' && access.app === 'path' ? params['name']! : METRICS_READER_APP;
        return { body: 'full', principalId: `process:${app}` };
      }
      // Every other access rule starts with a bearer.
      const principal = await authenticateBearer(auth, request.headers);
      if (request.headers['x-target-host'] !== undefined) return { body: 'full', principalId: principal.id };
      if (operation.connection === 'persistent') throw persistentConnectionRequired();
      decideFromHead(access, principal, { params, query: request.query }, resolver);
      const spec = operation.body;
      return { body: 'full', principalId: principal.id, maxBytes: spec?.kind === 'json' ? spec.maxBytes : undefined };
    } catch (error) {
      if (error instanceof SvcError) return errorResponse(error);
      throw error;
    }
  };
}
