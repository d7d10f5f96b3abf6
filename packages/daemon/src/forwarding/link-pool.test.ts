// LinkPool with in-memory links: keys, bounds and reuse. Real links: packages/daemon/test/forwarding.
import { describe, expect, it } from 'vitest';
import type { Request, Response } from '@svc/protocol';
import { LinkPool } from './link-pool.ts';
import type { ResolvedTarget } from './targets.ts';
import type { UpstreamLink } from './upstream-link.ts';

const b: ResolvedTarget = { host: 'node-b', port: 6059, key: 'node-b:6059' };
const c: ResolvedTarget = { host: 'node-c', port: 6059, key: 'node-c:6059' };

/** A link whose answers are released by the test, so requests stay in flight. */
class HeldLink {
  readonly target: ResolvedTarget;
  readonly held: (() => void)[] = [];
  closed = false;
  lastUsed = 0;
  onClose: () => void = () => undefined;
  constructor(target: ResolvedTarget) {
    this.target = target;
  }
  get inFlight(): number {
    return this.held.length;
  }
  send(request: Request): Promise<Response> {
    return new Promise((resolve) =>
      this.held.push(() =>
        resolve({
          uuid: request.uuid,
          request_uri: request.request_uri,
          http_status: 200,
          body_msg_type: 'application/json',
          headers: {},
          body: new Uint8Array(),
        }),
      ),
    );
  }
  release(): void {
    for (const r of this.held.splice(0)) r();
  }
  close(): void {
    this.closed = true;
    this.onClose();
  }
}

/** Runs every queued microtask (the pool's connect-then-send chain) before going on. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function request(): Request {
  return {
    uuid: `u-${Math.random()}`,
    request_uri: '/svc/self',
    http_method: 'GET',
    client_addr: '',
    headers: {},
    query: {},
    body: new Uint8Array(),
  };
}

function pool(options: { maxLinksPerKey?: number; maxLinks?: number; busyThreshold?: number } = {}) {
  const links: HeldLink[] = [];
  const p = new LinkPool({
    ...options,
    connect: (target, onClose) => {
      const link = new HeldLink(target);
      link.onClose = onClose;
      links.push(link);
      return Promise.resolve(link as unknown as UpstreamLink);
    },
  });
  return { p, links };
}

describe('LinkPool', () => {
  it('reuses a link below the busy threshold, opens more up to the per-key bound', async () => {
    const { p, links } = pool({ busyThreshold: 2, maxLinksPerKey: 2 });
    const sent: Promise<Response>[] = [];
    const send = async (): Promise<void> => {
      sent.push(p.send(b, 'alice', request()));
      await flush();
    };
    await send();
    await send();
    expect(links).toHaveLength(1);
    await send(); // the first link has 2 in flight: a second one opens
    expect(links).toHaveLength(2);
    await send();
    await send();
    await send(); // both busy, bound reached: the least busy is shared
    expect(links).toHaveLength(2);
    expect(links.map((l) => l.inFlight).sort()).toEqual([3, 3]);
    for (const l of links) l.release();
    expect((await Promise.all(sent)).every((r) => r.http_status === 200)).toBe(true);
    p.close();
  });

  it('keys links by target and principal (a target pins one principal per connection)', async () => {
    const { p, links } = pool();
    const answers = [
      p.send(b, 'alice', request()),
      p.send(b, 'bob', request()),
      p.send(c, 'alice', request()),
    ];
    await flush();
    expect(links.map((l) => l.target.key)).toEqual(['node-b:6059', 'node-b:6059', 'node-c:6059']);
    for (const l of links) l.release();
    await Promise.all(answers);
    p.close();
    expect(links.every((l) => l.closed)).toBe(true);
  });

  it('at the global bound an idle link is closed to make room; with none idle it is 503 unavailable', async () => {
    const { p, links } = pool({ maxLinks: 1 });
    const first = p.send(b, 'alice', request());
    await flush();
    await expect(p.send(c, 'alice', request())).rejects.toMatchObject({ code: 'unavailable' });
    links[0]!.release();
    await first;
    const second = p.send(c, 'alice', request());
    await flush();
    expect(links[0]!.closed).toBe(true);
    expect(links).toHaveLength(2);
    links[1]!.release();
    await second;
    expect(p.size).toBe(1);
    p.close();
  });

  it('a closed link is forgotten and replaced', async () => {
    const { p, links } = pool();
    const first = p.send(b, 'alice', request());
    await flush();
    links[0]!.release();
    await first;
    links[0]!.close();
    expect(p.size).toBe(0);
    const second = p.send(b, 'alice', request());
    await flush();
    expect(links).toHaveLength(2);
    links[1]!.release();
    await second;
    p.close();
  });
});
