import { describe, expect, it } from 'vitest';
import { EventFeeds, EventsRefused, type EventConnection } from './event-feed.ts';

/** An in-memory event connection: what the feed asked of it, and a way to fire events or drop it. */
class FakeConnection implements EventConnection {
  readonly token: string[] = [];
  readonly watched = new Map<string, { app: string; onEvent: () => void }>();
  readonly unwatched: string[] = [];
  refuse = new Set<string>();
  closedCalls = 0;
  readonly closed: Promise<void>;
  #drop!: () => void;
  #next = 0;

  constructor(token: string) {
    this.token.push(token);
    this.closed = new Promise((resolve) => (this.#drop = resolve));
  }

  watch(app: string, onEvent: () => void): Promise<string> {
    if (this.refuse.has(app))
      return Promise.reject(new EventsRefused(403, 'permission app-subscribe required'));
    const id = `sub-${(this.#next += 1)}`;
    this.watched.set(id, { app, onEvent });
    return Promise.resolve(id);
  }

  unwatch(id: string): Promise<void> {
    this.unwatched.push(id);
    this.watched.delete(id);
    return Promise.resolve();
  }

  setToken(token: string): void {
    this.token.push(token);
  }

  close(): Promise<void> {
    this.closedCalls += 1;
    this.#drop();
    return Promise.resolve();
  }

  fire(app: string): void {
    for (const w of this.watched.values()) if (w.app === app) w.onEvent();
  }

  drop(): void {
    this.#drop();
  }
}

function harness(): { feeds: EventFeeds; connections: FakeConnection[] } {
  const connections: FakeConnection[] = [];
  const feeds = new EventFeeds((token) => {
    const connection = new FakeConnection(token);
    connections.push(connection);
    return Promise.resolve(connection);
  });
  return { feeds, connections };
}

const never = new AbortController().signal;
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('EventFeeds', () => {
  it('shares one connection per principal and one svcd subscription per application', async () => {
    const { feeds, connections } = harness();
    const a1 = await feeds.watch('alice', 't1', 'web');
    const a2 = await feeds.watch('alice', 't2', 'web');
    const a3 = await feeds.watch('alice', 't2', 'db');
    const b1 = await feeds.watch('bob', 'tb', 'web');
    expect(connections).toHaveLength(2);
    expect(connections[0]!.watched.size).toBe(2);
    expect(connections[0]!.token).toEqual(['t1', 't2', 't2']); // the newest bearer goes on
    connections[0]!.fire('web');
    expect([a1.seen, a2.seen, a3.seen, b1.seen]).toEqual([1, 1, 0, 0]);
    expect(feeds.size).toBe(2);
  });

  it('wakes a waiter at the event, or at once when the event came after its mark', async () => {
    const { feeds, connections } = harness();
    const watch = await feeds.watch('alice', 't', 'web');
    const mark = watch.seen;
    connections[0]!.fire('web');
    await watch.until(mark, 60_000, never); // already past the mark: resolves at once
    let woke = false;
    const waiting = watch.until(watch.seen, 60_000, never).then(() => (woke = true));
    await tick();
    expect(woke).toBe(false);
    connections[0]!.fire('web');
    await waiting;
    expect(woke).toBe(true);
  });

  it('ends every watch of a lost connection (woken, no longer live) and forgets the principal', async () => {
    const { feeds, connections } = harness();
    const watch = await feeds.watch('alice', 't', 'web');
    const waiting = watch.until(watch.seen, 60_000, never);
    connections[0]!.drop();
    await waiting;
    expect(watch.live).toBe(false);
    expect(feeds.size).toBe(0);
    await feeds.watch('alice', 't', 'web');
    expect(connections).toHaveLength(2);
  });

  it('unsubscribes an application nobody waits on, and closes the connection with the last', async () => {
    const { feeds, connections } = harness();
    const web = await feeds.watch('alice', 't', 'web');
    const db = await feeds.watch('alice', 't', 'db');
    web.close();
    await tick();
    expect(connections[0]!.unwatched).toEqual(['sub-1']);
    expect(connections[0]!.closedCalls).toBe(0);
    db.close();
    expect(connections[0]!.closedCalls).toBe(1);
    expect(feeds.size).toBe(0);
  });

  it("passes svcd's refusal on, and keeps no connection for it", async () => {
    const connections: FakeConnection[] = [];
    const feeds = new EventFeeds((token) => {
      const connection = new FakeConnection(token);
      connection.refuse.add('web');
      connections.push(connection);
      return Promise.resolve(connection);
    });
    await expect(feeds.watch('viewer', 't', 'web')).rejects.toBeInstanceOf(EventsRefused);
    expect(connections[0]!.closedCalls).toBe(1);
    expect(feeds.size).toBe(0);
  });

  it('refuses at once without a connector, and forgets a principal whose connection failed', async () => {
    await expect(new EventFeeds(undefined).watch('a', 't', 'web')).rejects.toBeInstanceOf(EventsRefused);
    const feeds = new EventFeeds(() => Promise.reject(new Error('ECONNREFUSED')));
    await expect(feeds.watch('a', 't', 'web')).rejects.toThrow('ECONNREFUSED');
    await tick();
    expect(feeds.size).toBe(0);
  });

  it('a wait ends at its timeout or its abort', async () => {
    const { feeds } = harness();
    const watch = await feeds.watch('alice', 't', 'web');
    await watch.until(watch.seen, 1, never);
    const controller = new AbortController();
    const waiting = watch.until(watch.seen, 60_000, controller.signal);
    controller.abort();
    await waiting;
    expect(watch.seen).toBe(0);
  });
});
