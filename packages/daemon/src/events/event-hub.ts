// The event hub: turns supervisor events (and STDOUT tails) into server pushes on persistent
// connections (spec "Events", "Subscription lifecycle"). See README.md in this folder.
//
// Delivery is synchronous and serial: one JS turn writes an event to every matching subscription
// (connection.push only queues bytes on that connection), in one global order, and never calls
// back into the dispatcher or the supervisor's mutating API. A push that fails (the connection is
// closed, or its output queue is over budget and the session closed it) removes every
// subscription of that connection at once: a subscription never skips a sequence number.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { EVENT_REQUEST_URI, SvcError, type EventType, type Response } from '@svc/protocol';
import type { PersistentConnection } from '../api/types.ts';
import { authorizeApp } from '../auth/authorizer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Logger } from '../log/logger.ts';
import type { SupervisorApi, SupervisorEvent } from '../supervisor/types.ts';
import type { EventSelection } from './event-names.ts';
import { StdoutTail, type StdoutChunk } from './stdout-tail.ts';
import { ALL_APPS, SubscriptionRegistry, type Subscription } from './subscription-registry.ts';

/** Subscriptions one connection may hold. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 1024;

export interface EventHubOptions {
  supervisor: SupervisorApi;
  /** Directory of the output files (<workDir>/stdout): the tail reads <dir>/<name>.out. */
  outputDir: string;
  logger: Logger;
  now?: () => number;
  /** Called for every push with whether it was queued (metrics). */
  onPush?: (type: EventType, queued: boolean) => void;
}

/** Events that need work after the supervisor's call returned (see #queue). */
type Pending = SupervisorEvent;

function isAdmin(principal: Principal): boolean {
  return principal.roles.includes('svc-admin');
}

function may(
  principal: Principal,
  permission: 'app-output-view',
  access: { owner: string | undefined; others: 'deny' | 'read' | 'write' },
): boolean {
  try {
    authorizeApp(principal, permission, access);
    return true;
  } catch {
    return false;
  }
}

export class EventHub {
  readonly #supervisor: SupervisorApi;
  readonly #outputDir: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #onPush: ((type: EventType, queued: boolean) => void) | undefined;
  readonly #registry = new SubscriptionRegistry();
  /** Connections whose onClose hook is registered. */
  readonly #hooked = new Set<string>();
  /** Active STDOUT tails by app. */
  readonly #tails = new Map<string, StdoutTail>();
  /**
   * Events waiting for work that must not run inside the supervisor's call (activating a tail
   * after START, the final drain before EXIT). While it is non-empty every further event queues
   * behind it, so the global order is kept; it is flushed in a microtask (and across turns when a
   * final drain is long).
   */
  #queue: Pending[] | undefined;
  readonly #offSupervisor: () => void;
  #closed = false;

  constructor(options: EventHubOptions) {
    this.#supervisor = options.supervisor;
    this.#outputDir = options.outputDir;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#onPush = options.onPush;
    this.#offSupervisor = options.supervisor.onEvent((event) => this.#onSupervisorEvent(event));
  }

  /** Number of active subscriptions (tests, diagnostics). */
  get size(): number {
    return this.#registry.size;
  }

  /** Apps with an active STDOUT tail (tests, diagnostics). */
  tailedApps(): string[] {
    return [...this.#tails.keys()];
  }

  /**
   * Create a subscription of `connection` owned by `principal` to `app` (or ALL_APPS). The caller
   * checked app-subscribe (and app-view-all for ALL_APPS) and that the app is visible. STDOUT needs
   * app-output-view on the app: asked by name without it is 403; within ALL it is left out (per app
   * for ALL_APPS, at delivery).
   */
  subscribe(
    connection: PersistentConnection,
    principal: Principal,
    app: string,
    selection: EventSelection,
  ): Subscription {
    if (this.#closed) throw new SvcError('unavailable', 'the daemon is stopping');
    if ((this.#registry.ofConnection(connection.id)?.size ?? 0) >= MAX_SUBSCRIPTIONS_PER_CONNECTION)
      throw new SvcError(
        'too_many_connections',
        `at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions per connection`,
      );
    const events = new Set(selection.events);
    let outputAllowed: boolean;
    if (app === ALL_APPS) {
      outputAllowed = principal.permissions.has('app-output-view');
    } else {
      const access = this.#supervisor.access(app);
      // An app not registered yet (atomic registration) will be owned by the subscriber.
      outputAllowed = may(principal, 'app-output-view', access ?? { owner: principal.id, others: 'deny' });
    }
    if (!outputAllowed && events.has('STDOUT')) {
      if (!selection.all)
        throw new SvcError(
          'forbidden',
          `STDOUT events of ${app === ALL_APPS ? 'applications' : app} need app-output-view`,
        );
      events.delete('STDOUT');
    }
    const id = randomUUID();
    const subscription: Subscription = {
      id,
      app,
      events,
      principal,
      connection,
      outputAllowed,
      sequence: 0,
      active: true,
      bodyHead: `{"subscription_id":"${id}","sequence":`,
      decisions: new Map(),
    };
    this.#registry.add(subscription);
    if (!this.#hooked.has(connection.id)) {
      this.#hooked.add(connection.id);
      connection.onClose(() => {
        this.#hooked.delete(connection.id);
        this.removeConnection(connection.id);
      });
    }
    if (subscription.active && events.has('STDOUT')) {
      if (app === ALL_APPS) {
        for (const view of this.#supervisor.list()) this.#tailRunning(view);
      } else {
        const view = this.#supervisor.get(app);
        if (view !== undefined) this.#tailRunning(view);
      }
    }
    return subscription;
  }

  /** Remove a subscription on its owner's request. */
  unsubscribe(id: string, principalId: string, app?: string): Subscription {
    const subscription = this.#registry.get(id);
    if (subscription === undefined || (app !== undefined && subscription.app !== app))
      throw new SvcError(
        'not_found',
        `no subscription ${id.slice(0, 64)}${app === undefined ? '' : ` of ${app}`}`,
      );
    if (subscription.principal.id !== principalId)
      throw new SvcError('forbidden', 'only the principal that created a subscription may remove it');
    this.#remove(subscription);
    return subscription;
  }

  /** Remove a subscription created moments ago (atomic registration that failed). */
  discard(subscription: Subscription): void {
    this.#remove(subscription);
  }

  /** Remove every subscription of a connection (it closed, or a push to it failed). */
  removeConnection(connectionId: string): void {
    const subscriptions = this.#registry.ofConnection(connectionId);
    if (subscriptions === undefined) return;
    for (const subscription of [...subscriptions]) this.#remove(subscription);
  }

  /** Stop listening to the supervisor and close every tail (daemon shutdown). */
  close(): void {
    this.#closed = true;
    this.#offSupervisor();
    for (const tail of this.#tails.values()) tail.close();
    this.#tails.clear();
  }

  #remove(subscription: Subscription): void {
    if (!this.#registry.remove(subscription)) return;
    if (!subscription.events.has('STDOUT')) return;
    // Tear down tails nobody wants any more (not the one in a final drain: the queue finishes it).
    const apps = subscription.app === ALL_APPS ? [...this.#tails.keys()] : [subscription.app];
    for (const app of apps) {
      if (this.#registry.wantsStdout(app)) continue;
      const tail = this.#tails.get(app);
      if (tail === undefined) continue;
      this.#tails.delete(app);
      tail.close();
    }
  }

  // ---- supervisor events ------------------------------------------------------------------

  #onSupervisorEvent(event: SupervisorEvent): void {
    if (this.#closed) return;
    if (this.#queue !== undefined) {
      this.#queue.push(event);
      return;
    }
    const deferred =
      (event.type === 'START' && this.#registry.wantsStdout(event.app)) ||
      (event.type === 'EXIT' && this.#tails.get(event.app)?.processUuid === event.processUuid);
    if (!deferred) {
      this.#handle(event);
      return;
    }
    // Outside the supervisor's call path: the spawn (or adoption) has completed its bookkeeping,
    // including the output file rotation, before the tail opens the file or drains it.
    this.#queue = [event];
    queueMicrotask(() => this.#flush());
  }

  #flush(): void {
    const queue = this.#queue;
    if (queue === undefined) return;
    while (queue.length > 0) {
      const event = queue[0]!;
      if (event.type === 'EXIT') {
        const tail = this.#tails.get(event.app);
        if (tail !== undefined && tail.processUuid === event.processUuid) {
          let done: boolean;
          try {
            done = tail.drain();
          } catch (error) {
            this.#logger.error('stdout drain failed', { app: event.app, error: error as Error });
            done = true;
          }
          if (!done) {
            // A long backlog: the rest in the next turn, later events keep waiting behind EXIT.
            setImmediate(() => this.#flush());
            return;
          }
          if (this.#tails.get(event.app) === tail) this.#tails.delete(event.app);
          tail.finish();
        }
      }
      queue.shift();
      this.#handle(event);
      if (event.type === 'START') this.#activate(event.app, event.processUuid, 'start');
    }
    this.#queue = undefined;
  }

  #handle(event: SupervisorEvent): void {
    switch (event.type) {
      case 'START':
        this.#forget(event.app); // owner or sharing may have changed with a re-registration
        this.#publish(event.app, 'START', { pid: event.pid, process_uuid: event.processUuid });
        return;
      case 'EXIT': {
        const tail = this.#tails.get(event.app);
        if (tail !== undefined && tail.processUuid === event.processUuid) {
          // Reached only when the tail appeared after the EXIT was queued: nothing to drain live.
          this.#tails.delete(event.app);
          tail.close();
        }
        this.#publish(event.app, 'EXIT', {
          pid: event.pid,
          exit_code: event.exitCode ?? null,
          last_error: event.lastError ?? null,
          process_uuid: event.processUuid,
        });
        return;
      }
      case 'HEALTH':
        this.#publish(event.app, 'HEALTH', { health: event.health, previous_health: event.previousHealth });
        return;
      case 'STATUS':
        this.#publish(event.app, 'STATUS', {
          enabled: event.enabled,
          previous_enabled: event.previousEnabled,
        });
        return;
      case 'REMOVED': {
        this.#publish(event.app, 'REMOVED', {});
        // REMOVED first, then the purge: no event of this app reaches these subscriptions again.
        const subscriptions = this.#registry.ofApp(event.app);
        if (subscriptions !== undefined) for (const s of [...subscriptions]) this.#remove(s);
        const tail = this.#tails.get(event.app);
        if (tail !== undefined) {
          this.#tails.delete(event.app);
          tail.close();
        }
        this.#forget(event.app);
        return;
      }
    }
  }

  /** Drop cached wildcard decisions about one app. */
  #forget(app: string): void {
    const wildcard = this.#registry.wildcard();
    if (wildcard !== undefined) for (const s of wildcard) s.decisions.delete(app);
  }

  // ---- STDOUT tails -----------------------------------------------------------------------

  /** Tail an app's current process if it is running and not tailed yet (a late subscriber). */
  #tailRunning(view: Record<string, unknown>): void {
    const name = view['name'];
    const uuid = view['process_uuid'];
    if (typeof name !== 'string' || typeof uuid !== 'string') return;
    if (view['state'] !== 'running' || view['output_captured'] === false) return;
    // A START of this app still queued activates its tail from the start of its file.
    if (this.#queue?.some((e) => e.type === 'START' && e.app === name)) return;
    this.#activate(name, uuid, 'end');
  }

  #activate(app: string, processUuid: string, from: 'start' | 'end'): void {
    if (!this.#registry.wantsStdout(app)) return;
    const current = this.#tails.get(app);
    if (current !== undefined) {
      if (current.processUuid === processUuid) return;
      this.#tails.delete(app);
      current.close();
    }
    const tail = StdoutTail.open({
      app,
      processUuid,
      path: join(this.#outputDir, `${app}.out`),
      from,
      emit: (chunk) => this.#publishStdout(app, processUuid, chunk),
      onError: (error) => this.#logger.warn('stdout tail error', { app, error }),
    });
    if (tail === undefined) return;
    if (tail.closed) return;
    // The first read inside open() may have led to the tail's teardown (a failed push).
    if (this.#registry.wantsStdout(app)) this.#tails.set(app, tail);
    else tail.close();
  }

  #publishStdout(app: string, processUuid: string, chunk: StdoutChunk): void {
    this.#publish(app, 'STDOUT', {
      output: chunk.output,
      position: chunk.position,
      finished: chunk.finished,
      process_uuid: processUuid,
    });
  }

  // ---- delivery -----------------------------------------------------------------------------

  #publish(app: string, type: EventType, data: Record<string, unknown>): void {
    const own = this.#registry.ofApp(app);
    const wildcard = this.#registry.wildcard();
    if (own === undefined && wildcard === undefined) return;
    // The part of the body shared by every subscription, encoded once.
    const tail = Buffer.from(
      `,"event_type":"${type}","app_name":${JSON.stringify(app)},"timestamp":${this.#now()},"data":${JSON.stringify(data)}}`,
    );
    const stdout = type === 'STDOUT';
    // Sets tolerate deletion while iterated: a subscription removed meanwhile is skipped.
    if (own !== undefined)
      for (const s of own) {
        if (s.active && s.events.has(type) && (!stdout || s.outputAllowed)) this.#send(s, app, type, tail);
      }
    if (wildcard !== undefined)
      for (const s of wildcard) {
        if (!s.active || !s.events.has(type)) continue;
        const decision = this.#decide(s, app);
        if (decision.view && (!stdout || decision.output)) this.#send(s, app, type, tail);
      }
  }

  #decide(subscription: Subscription, app: string): { view: boolean; output: boolean } {
    let decision = subscription.decisions.get(app);
    if (decision === undefined) {
      const access = this.#supervisor.access(app);
      const view = access !== undefined && (!access.system || isAdmin(subscription.principal));
      decision = {
        view,
        output:
          access !== undefined &&
          view &&
          subscription.events.has('STDOUT') &&
          may(subscription.principal, 'app-output-view', access),
      };
      subscription.decisions.set(app, decision);
    }
    return decision;
  }

  #send(subscription: Subscription, app: string, type: EventType, tail: Buffer): void {
    const sequence = subscription.sequence + 1;
    const message: Response = {
      uuid: randomUUID(),
      request_uri: EVENT_REQUEST_URI,
      http_status: 200,
      body_msg_type: 'application/json',
      headers: { 'X-Subscription-Id': subscription.id, 'X-Event-Type': type, 'X-App-Name': app },
      body: Buffer.concat([Buffer.from(subscription.bodyHead + sequence), tail]),
    };
    let delivered: boolean;
    try {
      delivered = subscription.connection.push(message);
    } catch (error) {
      this.#logger.error('event push failed', { error: error as Error });
      delivered = false;
    }
    this.#onPush?.(type, delivered);
    if (delivered) {
      subscription.sequence = sequence;
      return;
    }
    // Delivery failure: the connection is gone or cannot keep up. Never a gap: drop all of its
    // subscriptions (the session has closed it; its client sees the connection end).
    this.#logger.warn('event delivery failed; removing the subscriptions of the connection', {
      connection: subscription.connection.id,
      subscriptions: this.#registry.ofConnection(subscription.connection.id)?.size ?? 0,
    });
    this.removeConnection(subscription.connection.id);
  }
}
