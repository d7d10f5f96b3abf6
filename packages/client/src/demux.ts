// Client demultiplexer (spec "Client demultiplexer contract"), shared by the TCP and WSS transports.
//
//   socket reader ──▶ deliver(Response)
//                       ├─ request_uri == /svc/event ─▶ subscription id (body, else X-Subscription-Id)
//                       │     ├─ registered ─▶ dispatch (serial per subscription, see below)
//                       │     └─ not yet     ─▶ buffer (≤ 64 ids, ≤ 1000 events per id, oldest dropped)
//                       └─ uuid of a waiter ─▶ resolve that request
//   stop(cause) ─▶ every waiter rejects with TransportDisconnectedError; every callback gets a
//                  client-local {subscription_id, event_type: '__disconnected__'}; buffers discarded.
//
// Dispatch: the JavaScript exception of the contract (rule 4) — a callback runs inline on the read
// loop, because JavaScript has one thread: a queue would only defer the same work to a later turn.
// A callback that returns a promise is awaited *per subscription*: later events of that
// subscription queue behind it (serial, arrival order) while the reader and other subscriptions go
// on. So a slow asynchronous callback never blocks the reader; a synchronous callback that spins
// blocks the whole event loop, which no design could avoid in JavaScript.
import { DISCONNECTED_EVENT, EVENT_REQUEST_URI, type EventMessage, type Response } from '@svc/protocol';
import { TransportDisconnectedError } from './errors.ts';
import type { DisconnectedEvent, EventCallback, SubscriptionEvent } from './types.ts';

/** Distinct unregistered subscription ids that may hold buffered events. */
export const MAX_PENDING_SUBSCRIPTIONS = 64;
/** Buffered events per unregistered subscription id (the oldest is dropped beyond it). */
export const MAX_PENDING_EVENTS_PER_SUBSCRIPTION = 1000;
/** Recently unsubscribed ids whose late events are dropped instead of buffered. */
const FORGOTTEN_IDS = 1024;

interface Waiter {
  resolve: (response: Response) => void;
  reject: (error: Error) => void;
}

class SubscriptionSlot {
  readonly callback: EventCallback;
  /** Events waiting behind an unsettled asynchronous callback. */
  readonly queue: SubscriptionEvent[] = [];
  busy = false;
  constructor(callback: EventCallback) {
    this.callback = callback;
  }
}

export interface DemultiplexerOptions {
  /** Called with an error a callback threw or rejected with. Default: ignored. */
  onCallbackError?: (error: unknown, event: SubscriptionEvent) => void;
  maxPendingSubscriptions?: number;
  maxPendingEventsPerSubscription?: number;
}

export class Demultiplexer {
  readonly #waiters = new Map<string, Waiter>();
  readonly #slots = new Map<string, SubscriptionSlot>();
  readonly #pending = new Map<string, EventMessage[]>();
  readonly #forgotten = new Set<string>();
  readonly #onCallbackError: (error: unknown, event: SubscriptionEvent) => void;
  readonly #maxPendingIds: number;
  readonly #maxPendingEvents: number;
  #stopped: TransportDisconnectedError | undefined;
  /** Events dropped by the buffer caps (observability, tests). */
  droppedEvents = 0;

  constructor(options: DemultiplexerOptions = {}) {
    this.#onCallbackError = options.onCallbackError ?? (() => {});
    this.#maxPendingIds = options.maxPendingSubscriptions ?? MAX_PENDING_SUBSCRIPTIONS;
    this.#maxPendingEvents = options.maxPendingEventsPerSubscription ?? MAX_PENDING_EVENTS_PER_SUBSCRIPTION;
  }

  get stopped(): boolean {
    return this.#stopped !== undefined;
  }

  /** Requests waiting for their response. */
  get pendingRequests(): number {
    return this.#waiters.size;
  }

  /** Subscriptions with a registered callback. */
  get registeredSubscriptions(): number {
    return this.#slots.size;
  }

  /** Unregistered subscription ids holding buffered events. */
  get bufferedSubscriptions(): number {
    return this.#pending.size;
  }

  /** Buffered events of one unregistered subscription id. */
  bufferedEvents(subscriptionId: string): number {
    return this.#pending.get(subscriptionId)?.length ?? 0;
  }

  /**
   * Registers a request uuid and returns the promise of its response. Call it BEFORE writing the
   * request's bytes (rule 2), so that a response that arrives at once is not dropped (S7).
   * No timer: the wait ends with the response, `cancel`, or `stop` (rule 3).
   */
  expect(uuid: string): Promise<Response> {
    if (this.#stopped !== undefined) return Promise.reject(this.#stopped);
    if (this.#waiters.has(uuid)) return Promise.reject(new Error(`request uuid ${uuid} is already pending`));
    return new Promise<Response>((resolve, reject) => this.#waiters.set(uuid, { resolve, reject }));
  }

  /** Forgets a waiter (write failed, caller aborted); its promise rejects with `reason`. */
  cancel(uuid: string, reason: Error): void {
    const waiter = this.#waiters.get(uuid);
    if (waiter === undefined) return;
    this.#waiters.delete(uuid);
    waiter.reject(reason);
  }

  /** Routes one incoming Response. Called by the transport's single reader. */
  deliver(response: Response): void {
    if (this.#stopped !== undefined) return;
    if (response.request_uri === EVENT_REQUEST_URI) {
      this.#deliverEvent(response);
      return;
    }
    const waiter = this.#waiters.get(response.uuid);
    if (waiter === undefined) return; // a late answer to a cancelled request
    this.#waiters.delete(response.uuid);
    waiter.resolve(response);
  }

  /**
   * Attaches the callback of a subscription and flushes, in order, the events buffered for it
   * before registration (rule 6). After `stop`, the callback gets `__disconnected__` at once.
   */
  register(subscriptionId: string, callback: EventCallback): void {
    if (this.#slots.has(subscriptionId))
      throw new Error(`subscription ${subscriptionId} is already registered`);
    const slot = new SubscriptionSlot(callback);
    this.#slots.set(subscriptionId, slot);
    this.#forgotten.delete(subscriptionId);
    if (this.#stopped !== undefined) {
      this.#dispatch(slot, disconnected(subscriptionId));
      return;
    }
    const buffered = this.#pending.get(subscriptionId);
    this.#pending.delete(subscriptionId);
    for (const event of buffered ?? []) this.#dispatch(slot, event);
  }

  /** Detaches a subscription and discards its buffer; later events for it are dropped. */
  unregister(subscriptionId: string): void {
    this.#slots.delete(subscriptionId);
    this.#pending.delete(subscriptionId);
    this.#forgotten.add(subscriptionId);
    if (this.#forgotten.size > FORGOTTEN_IDS) {
      const oldest = this.#forgotten.values().next().value;
      if (oldest !== undefined) this.#forgotten.delete(oldest);
    }
  }

  /**
   * The transport is gone (rule 5): wakes every waiter with TransportDisconnectedError, sends a
   * client-local `__disconnected__` to every callback, discards the buffers. Idempotent.
   */
  stop(cause?: unknown): void {
    if (this.#stopped !== undefined) return;
    const error = new TransportDisconnectedError(
      `transport disconnected${cause instanceof Error ? `: ${cause.message}` : ''}`,
      cause === undefined ? undefined : { cause },
    );
    this.#stopped = error;
    this.#pending.clear();
    const waiters = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const waiter of waiters) waiter.reject(error);
    for (const [id, slot] of this.#slots) this.#dispatch(slot, disconnected(id));
  }

  #deliverEvent(response: Response): void {
    let event: EventMessage;
    try {
      event = JSON.parse(new TextDecoder().decode(response.body)) as EventMessage;
    } catch {
      return; // not an event body: nothing to route
    }
    if (typeof event !== 'object' || event === null) return;
    const headerId = Object.entries(response.headers).find(
      ([k]) => k.toLowerCase() === 'x-subscription-id',
    )?.[1];
    const id = typeof event.subscription_id === 'string' ? event.subscription_id : headerId;
    if (id === undefined) return;
    if (event.subscription_id !== id) event = { ...event, subscription_id: id };
    const slot = this.#slots.get(id);
    if (slot !== undefined) {
      this.#dispatch(slot, event);
      return;
    }
    if (this.#forgotten.has(id)) return;
    let buffer = this.#pending.get(id);
    if (buffer === undefined) {
      if (this.#pending.size >= this.#maxPendingIds) {
        this.droppedEvents += 1;
        return;
      }
      buffer = [];
      this.#pending.set(id, buffer);
    }
    buffer.push(event);
    if (buffer.length > this.#maxPendingEvents) {
      buffer.shift();
      this.droppedEvents += 1;
    }
  }

  #dispatch(slot: SubscriptionSlot, event: SubscriptionEvent): void {
    if (slot.busy) {
      slot.queue.push(event);
      return;
    }
    this.#invoke(slot, event);
  }

  #invoke(slot: SubscriptionSlot, event: SubscriptionEvent): void {
    let result: void | Promise<void>;
    try {
      result = slot.callback(event);
    } catch (error) {
      this.#onCallbackError(error, event);
      return;
    }
    if (result === undefined || typeof (result as { then?: unknown }).then !== 'function') return;
    slot.busy = true;
    result.then(
      () => this.#drain(slot),
      (error: unknown) => {
        this.#onCallbackError(error, event);
        this.#drain(slot);
      },
    );
  }

  #drain(slot: SubscriptionSlot): void {
    slot.busy = false;
    while (!slot.busy) {
      const next = slot.queue.shift();
      if (next === undefined) return;
      this.#invoke(slot, next);
    }
  }
}

function disconnected(subscriptionId: string): DisconnectedEvent {
  return { subscription_id: subscriptionId, event_type: DISCONNECTED_EVENT };
}
