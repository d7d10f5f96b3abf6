// The gateway at work: called by the dispatcher for every request that carries X-Target-Host.
// Decides (gateway.ts), authenticates at the gateway BEFORE any connection is opened, then sends the
// request over a pooled link (stateless) or the client's dedicated link (subscriptions).
import type { SvcError, Response as WireResponse } from '@svc/protocol';
import type { Principal } from '../auth/principal.ts';
import type { ApiRequest, ApiResponse } from '../api/types.ts';
import type { Logger } from '../log/logger.ts';
import {
  checkUpgradeTarget,
  decideForward,
  forwardedRequest,
  fromWireResponse,
  type RouteInfo,
} from './gateway.ts';
import { LinkPool } from './link-pool.ts';
import { SessionRoutes } from './session-routes.ts';
import type { AllowedTargets, ResolvedTarget, SelfIdentity } from './targets.ts';
import { UpstreamLink } from './upstream-link.ts';

export interface ForwarderOptions {
  /** Allowed targets; cluster mode adds its registered nodes with `targets.addProvider`. */
  targets: AllowedTargets;
  self: SelfIdentity;
  /** PEM CAs a target certificate must chain to: this daemon's CA plus the forward CA file. */
  ca: readonly string[];
  logger: Logger;
  connectTimeoutMs?: number;
  idleMs?: number;
}

/** What the dispatcher lends the forwarder: its router and its bearer check (with pinning). */
export interface ForwardContext {
  route(method: string, path: string): RouteInfo | undefined;
  /** The dispatcher's bearer check: 401 on a missing/invalid bearer or another pinned principal. */
  authenticate(request: ApiRequest): Promise<Principal>;
  /** A 401 with the dispatcher's WWW-Authenticate challenge. */
  unauthorized(request: ApiRequest, message: string): SvcError;
}

export class Forwarder {
  readonly targets: AllowedTargets;
  readonly #options: ForwarderOptions;
  readonly #pool: LinkPool;
  readonly #sessions: SessionRoutes;

  constructor(options: ForwarderOptions) {
    this.#options = options;
    this.targets = options.targets;
    const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    const logger = options.logger;
    const open = (
      target: ResolvedTarget,
      hooks: { onPush?: (push: WireResponse) => void; onClose: (error: SvcError | undefined) => void },
    ): Promise<UpstreamLink> =>
      UpstreamLink.connect({ target, ca: options.ca, connectTimeoutMs, ...hooks }).catch((error: unknown) => {
        logger.warn('forward target connection failed', {
          target: target.key,
          reason: error instanceof Error ? error.message : String(error),
        });
        throw error;
      });
    this.#pool = new LinkPool({
      connect: (target, onClose) => open(target, { onClose: () => onClose() }),
      ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
    });
    this.#sessions = new SessionRoutes({ connect: open, logger });
  }

  /** Open links: pooled and dedicated (tests). */
  get openLinks(): { pool: number; routes: number } {
    return { pool: this.#pool.size, routes: this.#sessions.size };
  }

  /**
   * Forwards `request` when its X-Target-Host names another allowed instance; undefined when the
   * request is for this node (no header, or the header names this node). Throws SvcError.
   */
  async forward(request: ApiRequest, context: ForwardContext): Promise<ApiResponse | undefined> {
    let route: RouteInfo | undefined;
    try {
      route = context.route(request.method, request.path);
    } catch {
      route = undefined; // not a local route (or a bad path): forwarded, bearer required
    }
    const decision = decideForward({
      request,
      route,
      targets: this.#options.targets,
      self: this.#options.self,
    });
    if (decision.kind === 'local') return undefined;
    const connection = request.connection;
    if (connection?.bearerAtOpen === true && connection.principalId === undefined)
      // spec: a WSS session without a bearer is limited to the worker task RPC, never forwarded.
      throw context.unauthorized(
        request,
        'this WSS session has no bearer; it may only use the worker task RPC',
      );
    // The bearer is checked here, before any connection to the target is opened and before a byte
    // of the body is read (within the limits of the bearer's principal, or of an anonymous caller).
    const principal = decision.authenticate ? await context.authenticate(request) : undefined;
    const body =
      request.body.declaredLength === 0
        ? new Uint8Array(0)
        : await request.body.bytes({ authenticated: principal !== undefined, payer: principal?.id });
    const wire = forwardedRequest(request, body);
    const answer =
      decision.channel === 'session' && connection !== undefined && decision.subscription !== undefined
        ? await this.#sessions.send(connection, decision.target, wire, decision.subscription)
        : await this.#pool.send(decision.target, principal?.id ?? '', wire);
    return fromWireResponse(answer);
  }

  /** A WSS upgrade's X-Target-Host (its frames' default target): throws SvcError unless allowed. */
  checkUpgradeTarget(header: string): void {
    checkUpgradeTarget(header, this.#options.targets, this.#options.self);
  }

  close(): void {
    this.#sessions.close();
    this.#pool.close();
  }
}
