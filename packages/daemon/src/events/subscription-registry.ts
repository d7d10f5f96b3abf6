// In-memory subscriptions (spec "Subscription", "Subscription lifecycle"), indexed by id, by
// application ('*' = all applications) and by connection. Pure bookkeeping: no I/O, no delivery.
import type { EventType } from '@svc/protocol';
import type { PersistentConnection } from '../api/types.ts';
import type { Principal } from '../auth/principal.ts';

/** app_name of a subscription to every application (POST /svc/subscribe). */
export const ALL_APPS = '*';

export interface Subscription {
  readonly id: string;
  /** Application name, or ALL_APPS. */
  readonly app: string;
  readonly events: ReadonlySet<EventType>;
  /** The owner (the subscribing principal), as resolved at subscribe time. */
  readonly principal: Principal;
  readonly connection: PersistentConnection;
  /** Per-app subscriptions: may the owner read this app's output (decided at subscribe time). */
  readonly outputAllowed: boolean;
  /** Sequence number of the last event delivered (0 = none yet); the next event gets +1. */
  sequence: number;
  /** False once removed; a removed subscription never receives another event. */
  active: boolean;
  /** `{"subscription_id":"<id>","sequence":` — the per-subscription head of every push body. */
  readonly bodyHead: string;
  /** Wildcard subscriptions: per-app visibility decisions, cached (see EventHub). */
  readonly decisions: Map<string, { view: boolean; output: boolean }>;
}

export class SubscriptionRegistry {
  readonly #byId = new Map<string, Subscription>();
  readonly #byApp = new Map<string, Set<Subscription>>();
  readonly #byConnection = new Map<string, Set<Subscription>>();
  /** Number of active subscriptions that want STDOUT, per app (ALL_APPS included). */
  readonly #stdout = new Map<string, number>();

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): Subscription | undefined {
    return this.#byId.get(id);
  }

  add(subscription: Subscription): void {
    this.#byId.set(subscription.id, subscription);
    index(this.#byApp, subscription.app, subscription);
    index(this.#byConnection, subscription.connection.id, subscription);
    if (subscription.events.has('STDOUT'))
      this.#stdout.set(subscription.app, (this.#stdout.get(subscription.app) ?? 0) + 1);
  }

  /** Remove one subscription; false when it was already gone. Marks it inactive. */
  remove(subscription: Subscription): boolean {
    if (this.#byId.get(subscription.id) !== subscription) return false;
    subscription.active = false;
    this.#byId.delete(subscription.id);
    unindex(this.#byApp, subscription.app, subscription);
    unindex(this.#byConnection, subscription.connection.id, subscription);
    if (subscription.events.has('STDOUT')) {
      const left = (this.#stdout.get(subscription.app) ?? 1) - 1;
      if (left > 0) this.#stdout.set(subscription.app, left);
      else this.#stdout.delete(subscription.app);
    }
    return true;
  }

  /** Subscriptions to exactly this app (not the wildcard ones). Live set: do not add while iterating. */
  ofApp(app: string): ReadonlySet<Subscription> | undefined {
    return this.#byApp.get(app);
  }

  /** Subscriptions to all applications. */
  wildcard(): ReadonlySet<Subscription> | undefined {
    return this.#byApp.get(ALL_APPS);
  }

  ofConnection(connectionId: string): ReadonlySet<Subscription> | undefined {
    return this.#byConnection.get(connectionId);
  }

  /** Whether some subscription (to this app or to all apps) wants STDOUT of `app`. */
  wantsStdout(app: string): boolean {
    return this.#stdout.has(app) || this.#stdout.has(ALL_APPS);
  }

  /** Whether some subscription to all applications wants STDOUT. */
  wildcardWantsStdout(): boolean {
    return this.#stdout.has(ALL_APPS);
  }
}

function index(map: Map<string, Set<Subscription>>, key: string, subscription: Subscription): void {
  let set = map.get(key);
  if (set === undefined) map.set(key, (set = new Set()));
  set.add(subscription);
}

function unindex(map: Map<string, Set<Subscription>>, key: string, subscription: Subscription): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(subscription);
  if (set.size === 0) map.delete(key);
}
