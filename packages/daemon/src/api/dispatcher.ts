// The one entry point of every transport: route, authenticate, authorize through the operation's
// one access rule, validate the input against its schemas, run the operation, and turn every
// failure into the registry's error body. Nothing here knows which transport is calling.
import { SvcError } from '@svc/protocol';
import {
  decide,
  decideFromHead,
  decideWithoutBearer,
  needsBearer,
  processKeyAppOf,
  type AccessResolver,
  type Grant,
} from '../auth/access-rules.ts';
import type { Principal } from '../auth/principal.ts';
import type { Forwarder } from '../forwarding/forwarder.ts';
import type { Logger } from '../log/logger.ts';
import { authenticateBearer, cachedBearerPrincipal, unauthorizedError } from './bearer.ts';
import { errorResponse, parseJsonBody } from './responses.ts';
import type { Router } from './router.ts';
import type {
  ApiRequest,
  ApiResponse,
  BodyAdmission,
  Operation,
  OperationInput,
  PersistentConnection,
} from './types.ts';
import { validateBody, validateQuery } from './validate-input.ts';

export interface Authenticator {
  /** Verify a bearer token and resolve its principal record. Throws SvcError (401 / 503). */
  authenticate(token: string): Promise<Principal>;
  /**
   * The principal of a token verified recently, without waiting (the usual case on a persistent
   * connection); undefined when `authenticate` must decide. Never throws.
   */
  authenticateCached?(token: string): Principal | undefined;
  /**
   * Value of WWW-Authenticate for a 401 (RFC 6750, RFC 9728 resource_metadata). `description` is
   * set only for a presented-but-invalid token, never for a missing one.
   */
  challenge(description: string | undefined, headers: Readonly<Record<string, string>>): string;
}

export interface DispatcherOptions<S> {
  router: Router<S>;
  services: S;
  auth: Authenticator;
  /** What the access rules may look up (applications, subscriptions, process keys). */
  resolver: AccessResolver;
  logger: Logger;
  /** Gateway for requests carrying X-Target-Host (forwarding/); without it the header is ignored. */
  forwarder?: Forwarder | undefined;
  /**
   * A bearer authenticated a request on a persistent connection (after the principal was pinned):
   * auth/connection-authority.ts keeps the connection authorized until the token's expiry.
   */
  onConnectionAuthenticated?: ((connection: PersistentConnection, principal: Principal) => void) | undefined;
}

export type Dispatch = (request: ApiRequest) => Promise<ApiResponse>;

export function createDispatcher<S>(options: DispatcherOptions<S>): Dispatch {
  const { router, services, auth, resolver, logger } = options;

  const unauthorized = (
    request: Pick<ApiRequest, 'headers'>,
    code: 'unauthorized' | 'invalid_token',
    message: string,
    cause?: unknown,
  ): SvcError => unauthorizedError(auth, request.headers, code, message, cause);

  /** The bearer's principal, without a promise when the token was verified recently. */
  const principalOf = (request: ApiRequest): Principal | Promise<Principal> => {
    const cached = cachedBearerPrincipal(auth, request.headers);
    if (cached !== undefined) return pin(request, cached);
    return authenticateBearer(auth, request.headers).then((principal) => pin(request, principal));
  };

  /** Pins the principal to the request's persistent connection (or refuses another one). */
  const pin = (request: ApiRequest, principal: Principal): Principal => {
    request.authenticated?.();
    const connection = request.connection;
    if (connection !== undefined) {
      // The principal is pinned to a persistent connection (spec: client token contract).
      if (connection.principalId === undefined) connection.principalId = principal.id;
      else if (connection.principalId !== principal.id)
        throw unauthorized(
          request,
          'invalid_token',
          'this connection is bound to another principal; reconnect to switch',
        );
      options.onConnectionAuthenticated?.(connection, principal);
    }
    return principal;
  };

  const forwardContext = {
    route: (method: string, path: string) => {
      const { operation } = router.match(method, path);
      return { operationId: operation.id, access: operation.access };
    },
    authenticate: async (request: ApiRequest) => principalOf(request),
    unauthorized: (request: ApiRequest, message: string) => unauthorized(request, 'unauthorized', message),
  };

  return async (request) => {
    try {
      if (options.forwarder !== undefined && request.headers['x-target-host'] !== undefined) {
        const forwarded = await options.forwarder.forward(request, forwardContext);
        if (forwarded !== undefined) return forwarded;
      }
      const { operation, params } = router.match(request.method, request.path);
      const access = operation.access;
      const connection = request.connection;
      const bearer = needsBearer(access, request.headers);
      if (connection?.bearerAtOpen === true && connection.principalId === undefined && bearer)
        // spec: a WSS session without a bearer is limited to the worker task RPC.
        throw unauthorized(
          request,
          'unauthorized',
          'this WSS session has no bearer; it may only use the worker task RPC',
        );
      const found = bearer ? principalOf(request) : undefined;
      const principal = found instanceof Promise ? await found : found;
      if (operation.connection === 'persistent' && connection === undefined)
        throw persistentConnectionRequired();
      // The access rule as far as the head decides it, before a byte of the body is read: it sees
      // the raw query, so that a caller who may not use the operation at all is refused (403)
      // before the details of its input are judged (400). A run of a copy names its application
      // in the body: that rule is finished once the body is read.
      const head = { params, query: request.query, body: undefined };
      let grant: Grant | undefined;
      if (principal === undefined) {
        grant = decideWithoutBearer(access, request, head, resolver);
        if (access.kind !== 'public') request.authenticated?.(); // a process key
      } else grant = decideFromHead(access, principal, head, resolver);
      const bytes = readsBody(operation, request)
        ? await request.body.bytes(admissionOf(operation, params, principal))
        : NO_BYTES;
      const json = operation.body?.kind === 'json' ? parseJsonBody(bytes) : undefined;
      grant ??= decide(access, principal!, { ...head, body: json }, resolver);
      const input = validateInput(operation, request, params, json, bytes);
      return await operation.handle({ request, params, input, principal, grant, services });
    } catch (error) {
      if (error instanceof SvcError) return errorResponse(error);
      logger.error('operation failed', { method: request.method, path: request.path, error: error as Error });
      return errorResponse(new SvcError('internal', 'internal error', { cause: error }));
    }
  };
}

const NO_BYTES = new Uint8Array(0);

/**
 * Whether the dispatcher reads the request's body (after the access rule, within the operation's
 * bound and the payer's budget): whenever there is one, also for an operation that takes none (as
 * any HTTP body is, so that the connection stays usable), except for one that streams it itself.
 */
function readsBody<S>(operation: Operation<S>, request: ApiRequest): boolean {
  const spec = operation.body;
  return request.body.declaredLength !== 0 && !(spec?.kind === 'raw' && spec.stream === true);
}

/** Who pays for the body and how much it may be: the principal, or the process key's application. */
function admissionOf<S>(
  operation: Operation<S>,
  params: Readonly<Record<string, string>>,
  principal: Principal | undefined,
): BodyAdmission {
  const spec = operation.body;
  const maxBytes = spec?.kind === 'json' ? spec.maxBytes : undefined;
  if (principal !== undefined) return { authenticated: true, payer: principal.id, maxBytes };
  const app = processKeyAppOf(operation.access, params);
  return app === undefined
    ? { authenticated: false, maxBytes }
    : { authenticated: true, payer: `process:${app}`, maxBytes };
}

export function persistentConnectionRequired(): SvcError {
  return new SvcError(
    'persistent_connection_required',
    'subscriptions need a persistent connection (TCP or WSS); plain HTTP cannot carry events',
  );
}

function validateInput<S>(
  operation: Operation<S>,
  request: ApiRequest,
  params: Readonly<Record<string, string>>,
  json: unknown,
  bytes: Uint8Array,
): OperationInput {
  const query = validateQuery(operation.query, request.query);
  const spec = operation.body;
  const body = spec?.kind === 'json' ? validateBody(spec, json) : spec?.kind === 'raw' ? bytes : undefined;
  return { params, query, body };
}
