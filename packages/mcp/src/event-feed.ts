// Wake-ups for output subscriptions that wait (their application's process exited, or none runs):
// one event connection to svcd (WSS) per principal, shared by every session of that principal,
// with one svcd subscription to START and REMOVED per application somebody waits on. An event
// only wakes the waiting subscriptions, which then look at the output with their own session's
// bearer: no event content reaches a client, and svcd decides who may subscribe (app-subscribe on
// that application; without it, the subscription falls back to timers, see output-resources.ts).

/** A persistent connection to svcd's events, authenticated as one principal. */
export interface EventConnection {
  /**
   * Subscribes to START and REMOVED of `app`; `onEvent` runs for each. Resolves with svcd's
   * subscription id; rejects with EventsRefused when svcd refuses (4xx), another error otherwise.
   */
  watch(app: string, onEvent: () => void): Promise<string>;
  unwatch(id: string): Promise<void>;
  /** Later requests carry this bearer (svcd then keeps the connection authorized until its exp). */
  setToken(token: string): void;
  /** Settles once the connection is gone (token expired, principal deleted, svcd stopped, network). */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/** Opens an event connection with `token`. */
export type EventConnector = (token: string) => Promise<EventConnection>;

/** svcd refused a subscription (its answer's status): this principal gets no events of that app. */
export class EventsRefused extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Resolves after `ms`, when `signal` aborts, or when the `wake` handed to `onWake` is called. */
export function pause(ms: number, signal: AbortSignal, onWake?: (wake: () => void) => void): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    onWake?.(done);
  });
}

/** A subscription's view of its application's events. */
export interface AppWatch {
  /** Events seen, and losses of the connection; a wait is for this to grow past a mark. */
  readonly seen: number;
  /** False once the connection is gone: a new watch is needed to hear events again. */
  readonly live: boolean;
  /** Resolves once `seen` > `mark`, after `ms`, or when `signal` aborts. */
  until(mark: number, ms: number, signal: AbortSignal): Promise<void>;
  close(): void;
}

class Watch implements AppWatch {
  seen = 0;
  live = true;
  #wake: (() => void) | undefined;
  readonly #release: (watch: Watch) => void;

  constructor(release: (watch: Watch) => void) {
    this.#release = release;
  }

  bump(): void {
    this.seen += 1;
    this.#wake?.();
  }

  end(): void {
    this.live = false;
    this.bump();
  }

  until(mark: number, ms: number, signal: AbortSignal): Promise<void> {
    if (this.seen > mark) return Promise.resolve();
    return pause(ms, signal, (wake) => (this.#wake = wake)).finally(() => (this.#wake = undefined));
  }

  close(): void {
    if (!this.live) return;
    this.live = false;
    this.#release(this);
  }
}

interface Watched {
  readonly id: Promise<string>;
  readonly watches: Set<Watch>;
}

/** One principal's connection and the applications watched on it. */
class PrincipalFeed {
  readonly #connect: EventConnector;
  readonly #gone: () => void;
  #connection: Promise<EventConnection> | undefined;
  readonly #apps = new Map<string, Watched>();

  constructor(connect: EventConnector, gone: () => void) {
    this.#connect = connect;
    this.#gone = gone;
  }

  get idle(): boolean {
    return this.#apps.size === 0 && this.#connection === undefined;
  }

  async watch(app: string, token: string): Promise<AppWatch> {
    const connection = await this.#connected(token);
    let watched = this.#apps.get(app);
    if (watched === undefined) {
      const watches = new Set<Watch>();
      watched = { watches, id: connection.watch(app, () => watches.forEach((w) => w.bump())) };
      watched.id.catch(() => undefined); // observed below, by each watch
      this.#apps.set(app, watched);
    }
    const entry = watched;
    const watch = new Watch((w) => this.#release(app, entry, w, connection));
    entry.watches.add(watch);
    try {
      await entry.id;
    } catch (error) {
      watch.close();
      throw error;
    }
    return watch;
  }

  async close(): Promise<void> {
    const connection = this.#connection;
    this.#connection = undefined;
    this.#apps.clear();
    await (await connection?.catch(() => undefined))?.close();
  }

  #connected(token: string): Promise<EventConnection> {
    if (this.#connection !== undefined)
      return this.#connection.then((connection) => {
        connection.setToken(token);
        return connection;
      });
    const opening = this.#connect(token);
    this.#connection = opening;
    opening.then(
      (connection) =>
        void connection.closed.then(() => {
          if (this.#connection !== opening) return;
          this.#connection = undefined;
          for (const watched of this.#apps.values()) for (const watch of watched.watches) watch.end();
          this.#apps.clear();
          this.#gone();
        }),
      () => {
        if (this.#connection !== opening) return;
        this.#connection = undefined;
        this.#gone();
      },
    );
    return opening;
  }

  #release(app: string, watched: Watched, watch: Watch, connection: EventConnection): void {
    watched.watches.delete(watch);
    if (watched.watches.size > 0 || this.#apps.get(app) !== watched) return;
    this.#apps.delete(app);
    if (this.#apps.size > 0) {
      void watched.id.then((id) => connection.unwatch(id)).catch(() => undefined);
      return;
    }
    // Nobody waits on this principal's events any more: the connection (and with it every svcd
    // subscription on it) goes.
    this.#connection = undefined;
    void connection.close().catch(() => undefined);
    this.#gone();
  }
}

/** Every principal's event connection (at most one each, open only while somebody waits). */
export class EventFeeds {
  readonly #connect: EventConnector | undefined;
  readonly #feeds = new Map<string, PrincipalFeed>();

  constructor(connect: EventConnector | undefined) {
    this.#connect = connect;
  }

  /** Event connections open or opening. */
  get size(): number {
    return this.#feeds.size;
  }

  /**
   * A watch on `app`'s events for `principal`, once svcd accepted the subscription (events after
   * this resolves are seen). Rejects when there are no events to be had (see EventsRefused).
   */
  watch(principal: string, token: string, app: string): Promise<AppWatch> {
    const connect = this.#connect;
    if (connect === undefined) return Promise.reject(new EventsRefused(501, 'no event connection'));
    let feed = this.#feeds.get(principal);
    if (feed === undefined) {
      const created = new PrincipalFeed(connect, () => {
        if (created.idle && this.#feeds.get(principal) === created) this.#feeds.delete(principal);
      });
      feed = created;
      this.#feeds.set(principal, feed);
    }
    return feed.watch(app, token);
  }

  async close(): Promise<void> {
    const feeds = [...this.#feeds.values()];
    this.#feeds.clear();
    await Promise.all(feeds.map((feed) => feed.close()));
  }
}
