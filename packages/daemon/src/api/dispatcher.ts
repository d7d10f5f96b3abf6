// The one entry point of every transport: route, authenticate, authorize, run the operation, and
// turn every failure into the registry's error body. Nothing here knows which transport is calling.
import { SvcError } from '@svc/protocol';
import type { Principal } from '../auth/principal.ts';
import type { Forwarder } from '../forwarding/forwarder.ts';
import type { Logger } from '../log/logger.ts';
import { errorResponse } from './responses.ts';
import type { Router } from './router.ts';
import type { ApiRequest, ApiResponse, PersistentConnection } from './types.ts';

export interface Authenticator {
  /** Verify a bearer token and resolve its principal record. Throws SvcError (401 / 503). */
  authenticate(token: string): Promise<Principal>;
  /** Permission check; throws SvcError('forbidden'). */
  authorize(
    principal: Principal,
    permission: Principal['permissions'] extends ReadonlySet<infer P> ? P : never,
  ): void;
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

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function createDispatcher<S>(options: DispatcherOptions<S>): Dispatch {
  const { router, services, auth, logger } = options;

  const unauthorized = (
    request: Pick<ApiRequest, 'headers'>,
    code: 'unauthorized' | 'invalid_token',
    message: string,
    cause?: unknown,
  ): SvcError =>
    new SvcError(code, message, {
      cause,
      headers: {
        'www-authenticate': auth.challenge(code === 'unauthorized' ? undefined : message, request.headers),
      },
    });

  const principalOf = async (request: ApiRequest): Promise<Principal> => {
    const header = request.headers['authorization'];
    if (header === undefined || header === '')
      throw unauthorized(request, 'unauthorized', 'a bearer token is required');
    const match = BEARER.exec(header);
    if (match === null)
      throw unauthorized(request, 'invalid_token', 'the Authorization header is not a Bearer token');
    let principal: Principal;
    try {
      principal = await auth.authenticate(match[1]!);
    } catch (cause) {
      if (cause instanceof SvcError && cause.code === 'invalid_token')
        throw unauthorized(request, 'invalid_token', cause.message, cause);
      throw cause;
    }
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
    authenticate: principalOf,
    unauthorized: (request: ApiRequest, message: string) => unauthorized(request, 'unauthorized', message),
  };

  return async (request) => {
    try {
      if (options.forwarder !== undefined && request.headers['x-target-host'] !== undefined) {
        const forwarded = await options.forwarder.forward(request, forwardContext);
        if (forwarded !== undefined) return forwarded;
      }
      const { operation, params } = router.match(request.method, request.path);
      let principal: Principal | undefined;
      const access = operation.access;
      const connection = request.connection;
      // A request that presents the process key an operation also accepts goes to its handler,
      // which verifies the key; it never falls back to the bearer.
      const byProcessKey =
        access.kind === 'process-key' ||
        (access.kind === 'permission' &&
          access.orProcessKeyOf !== undefined &&
          request.headers['x-svc-process-key'] !== undefined);
      if (connection?.transport === 'wss' && connection.principalId === undefined && !byProcessKey)
        // spec: a WSS session without a bearer is limited to the worker task RPC.
        throw unauthorized(
          request,
          'unauthorized',
          'this WSS session has no bearer; it may only use the worker task RPC',
        );
      if (access.kind === 'authenticated' || (access.kind === 'permission' && !byProcessKey)) {
        principal = await principalOf(request);
        if (access.kind === 'permission') {
          if (principal.status === 'tombstoned')
            throw new SvcError('principal_tombstoned', 'the principal record was deleted');
          auth.authorize(principal, access.permission);
        }
      }
      return await operation.handle({ request, params, principal, services });
    } catch (error) {
      if (error instanceof SvcError) return errorResponse(error);
      logger.error('operation failed', { method: request.method, path: request.path, error: error as Error });
      return errorResponse(new SvcError('internal', 'internal error', { cause: error }));
    }
  };
}
