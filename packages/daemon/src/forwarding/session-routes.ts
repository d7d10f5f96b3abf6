// Forwarded subscriptions (spec "Forwarding", Events rule 7). Each client connection (TCP or WSS)
// gets one dedicated link per target for its subscription requests; every push arriving on that
// link belongs to that client and is relayed to it as is. The route ends when its last subscription
// is removed or the client disconnects — closing the link is what makes the target drop its
// subscriptions, so none leak. When the link fails instead, each subscription of the route gets a
// `__disconnected__` push with `data.message`.
import { SvcError, type Request as WireRequest, type Response as WireResponse } from '@svc/protocol';
import type { PersistentConnection } from '../api/types.ts';
import { ALL_APPS } from '../events/subscription-registry.ts';
import type { Logger } from '../log/logger.ts';
import { disconnectedPush, fromWireResponse, subscriptionOf } from './gateway.ts';
import type { ResolvedTarget } from './targets.ts';
import type { UpstreamLink } from './upstream-link.ts';

export interface SessionRoutesOptions {
  /** Opens a dedicated link whose pushes and failure are reported to the callbacks. */
  connect(
    target: ResolvedTarget,
    hooks: { onPush: (push: WireResponse) => void; onClose: (error: SvcError | undefined) => void },
  ): Promise<UpstreamLink>;
  logger: Logger;
  /** Routes (targets) one client connection may hold; default 16. */
  maxRoutesPerConnection?: number;
  /** Dedicated links in total; default 1024. */
  maxRoutes?: number;
  now?: () => number;
}

interface RouteSubscription {
  app: string;
  /** Pushes relayed so far: the target's sequence is gapless, so this is the last one sent. */
  sequence: number;
}

interface Route {
  readonly connection: PersistentConnection;
  readonly target: ResolvedTarget;
  link: Promise<UpstreamLink>;
  /** The link once connected (closed at once when the route ends). */
  connected: UpstreamLink | undefined;
  readonly subscriptions: Map<string, RouteSubscription>;
  inFlight: number;
  ended: boolean;
}

export class SessionRoutes {
  readonly #options: SessionRoutesOptions;
  /** connection id → target key → route */
  readonly #routes = new Map<string, Map<string, Route>>();
  /** Connections whose close is already hooked (once per connection, however often routes come and go). */
  readonly #hooked = new WeakSet<PersistentConnection>();
  #total = 0;

  constructor(options: SessionRoutesOptions) {
    this.#options = options;
  }

  /** Routes currently open (tests, metrics). */
  get size(): number {
    return this.#total;
  }

  /** Forwards one subscription request over the client's dedicated link and keeps the route. */
  async send(
    connection: PersistentConnection,
    target: ResolvedTarget,
    request: WireRequest,
    kind: 'subscribe' | 'unsubscribe',
  ): Promise<WireResponse> {
    const route = this.#route(connection, target);
    route.inFlight++;
    let response: WireResponse;
    try {
      response = await (await route.link).send(request);
    } finally {
      route.inFlight--;
    }
    if (kind === 'subscribe') {
      const created = subscriptionOf(fromWireResponse(response));
      if (created !== undefined) {
        const known = route.subscriptions.get(created.id);
        if (known === undefined) route.subscriptions.set(created.id, { app: created.app, sequence: 0 });
        else known.app = created.app;
      }
    } else if (response.http_status >= 200 && response.http_status < 300) {
      const id = request.query['subscription_id'];
      if (id !== undefined) route.subscriptions.delete(id);
    }
    if (route.subscriptions.size === 0 && route.inFlight === 0) this.#end(route, undefined);
    return response;
  }

  /** Ends every route (daemon shutdown). */
  close(): void {
    for (const routes of [...this.#routes.values()])
      for (const route of [...routes.values()]) this.#end(route, undefined);
  }

  #route(connection: PersistentConnection, target: ResolvedTarget): Route {
    let routes = this.#routes.get(connection.id);
    const existing = routes?.get(target.key);
    if (existing !== undefined) return existing;
    if (this.#total >= (this.#options.maxRoutes ?? 1024))
      throw new SvcError('unavailable', 'too many forwarded subscription routes; retry later');
    if ((routes?.size ?? 0) >= (this.#options.maxRoutesPerConnection ?? 16))
      throw new SvcError('unavailable', 'this connection has too many forwarded subscription routes');
    if (routes === undefined) {
      routes = new Map();
      this.#routes.set(connection.id, routes);
    }
    if (!this.#hooked.has(connection)) {
      this.#hooked.add(connection);
      // The client went away: its routes end, and with their links the target's subscriptions.
      connection.onClose(() => {
        for (const route of [...(this.#routes.get(connection.id)?.values() ?? [])])
          this.#end(route, undefined);
      });
    }
    const route: Route = {
      connection,
      target,
      link: Promise.resolve(undefined as unknown as UpstreamLink),
      connected: undefined,
      subscriptions: new Map(),
      inFlight: 0,
      ended: false,
    };
    route.link = this.#options.connect(target, {
      onPush: (push) => this.#relay(route, push),
      onClose: (error) => {
        if (error !== undefined) this.#end(route, error);
      },
    });
    // A failed connect ends the route; the caller sees the rejection through `route.link`.
    route.link.then(
      (link) => {
        route.connected = link;
        if (route.ended) link.close();
      },
      () => this.#end(route, undefined),
    );
    routes.set(target.key, route);
    this.#total++;
    return route;
  }

  #relay(route: Route, push: WireResponse): void {
    if (route.ended) return;
    const id = headerValue(push, 'x-subscription-id');
    if (id !== undefined) {
      let subscription = route.subscriptions.get(id);
      if (subscription === undefined) {
        // A push can be read before the subscribe answer is processed (same TCP read).
        subscription = { app: headerValue(push, 'x-app-name') ?? '', sequence: 0 };
        route.subscriptions.set(id, subscription);
      }
      subscription.sequence++;
    }
    route.connection.push(push);
    // The target purges an app's own subscriptions right after their REMOVED event.
    if (id !== undefined && headerValue(push, 'x-event-type') === 'REMOVED') {
      if (route.subscriptions.get(id)?.app !== ALL_APPS) route.subscriptions.delete(id);
      if (route.subscriptions.size === 0 && route.inFlight === 0) this.#end(route, undefined);
    }
  }

  #end(route: Route, error: SvcError | undefined): void {
    if (route.ended) return;
    route.ended = true;
    this.#total--;
    const routes = this.#routes.get(route.connection.id);
    if (routes?.get(route.target.key) === route) {
      routes.delete(route.target.key);
      if (routes.size === 0) this.#routes.delete(route.connection.id);
    }
    if (error !== undefined) {
      this.#options.logger.warn('forwarded subscription route failed', {
        target: route.target.key,
        subscriptions: route.subscriptions.size,
        reason: error.message,
      });
      const now = (this.#options.now ?? Date.now)();
      for (const [id, subscription] of route.subscriptions)
        route.connection.push(disconnectedPush({ id, ...subscription }, error.message, now));
    }
    route.subscriptions.clear();
    route.connected?.close(); // still connecting: closed by the handler above once connected
  }
}

function headerValue(message: WireResponse, lowerName: string): string | undefined {
  for (const [name, value] of Object.entries(message.headers))
    if (name.toLowerCase() === lowerName) return value;
  return undefined;
}
