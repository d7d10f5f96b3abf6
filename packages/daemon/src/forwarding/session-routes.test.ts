// SessionRoutes with in-memory links and connections: route lifetime, push relay, and the
// `__disconnected__` pushes of a failed route. The real links are exercised by
// packages/daemon/test/forwarding.
import { describe, expect, it } from 'vitest';
import { SvcError, type Request, type Response } from '@svc/protocol';
import type { PersistentConnection } from '../api/types.ts';
import type { Logger } from '../log/logger.ts';
import { SessionRoutes } from './session-routes.ts';
import type { UpstreamLink } from './upstream-link.ts';

const target = { host: 'node-b', port: 6059, key: 'node-b:6059' };
const logger = { warn: () => undefined } as unknown as Logger;

class FakeLink {
  closed = false;
  answer: (request: Request) => Response = (request) => reply(request, 200, {});
  onPush: (push: Response) => void = () => undefined;
  onClose: (error: SvcError | undefined) => void = () => undefined;
  send(request: Request): Promise<Response> {
    return Promise.resolve(this.answer(request));
  }
  close(): void {
    this.closed = true;
  }
}

class FakeConnection implements PersistentConnection {
  readonly id: string;
  readonly transport = 'tcp' as const;
  principalId: string | undefined = 'p';
  readonly pushes: Response[] = [];
  readonly closers: (() => void)[] = [];
  constructor(id: string) {
    this.id = id;
  }
  push(message: Response): boolean {
    this.pushes.push(message);
    return true;
  }
  onClose(callback: () => void): void {
    this.closers.push(callback);
  }
  close(): void {
    for (const c of this.closers.splice(0)) c();
  }
}

function reply(request: Request, status: number, body: unknown): Response {
  return {
    uuid: request.uuid,
    request_uri: request.request_uri,
    http_status: status,
    body_msg_type: 'application/json',
    headers: {},
    body: Buffer.from(JSON.stringify(body)),
  };
}

function request(method: string, query: Record<string, string> = {}): Request {
  return {
    uuid: `u-${Math.random()}`,
    request_uri: '/svc/app/web/subscribe',
    http_method: method,
    client_addr: '',
    headers: {},
    query,
    body: new Uint8Array(),
  };
}

function push(id: string, type = 'STATUS', app = 'web'): Response {
  return {
    uuid: `e-${Math.random()}`,
    request_uri: '/svc/event',
    http_status: 200,
    body_msg_type: 'application/json',
    headers: { 'X-Subscription-Id': id, 'X-Event-Type': type, 'X-App-Name': app },
    body: Buffer.from('{}'),
  };
}

function setup(): { routes: SessionRoutes; links: FakeLink[] } {
  const links: FakeLink[] = [];
  let ids = 0;
  const routes = new SessionRoutes({
    logger,
    now: () => 42,
    connect: (_target, hooks) => {
      const link = new FakeLink();
      link.onPush = hooks.onPush;
      link.onClose = hooks.onClose;
      link.answer = (r) =>
        r.http_method === 'DELETE'
          ? reply(r, 200, { removed: true })
          : reply(r, 200, { subscription_id: `s${++ids}`, app_name: 'web', events: [] });
      links.push(link);
      return Promise.resolve(link as unknown as UpstreamLink);
    },
  });
  return { routes, links };
}

describe('SessionRoutes', () => {
  it('one link per client and target; pushes relayed; the last unsubscribe closes it', async () => {
    const { routes, links } = setup();
    const client = new FakeConnection('c1');
    await routes.send(client, target, request('POST'), 'subscribe');
    await routes.send(client, target, request('POST'), 'subscribe');
    expect(links).toHaveLength(1);
    expect(routes.size).toBe(1);
    links[0]!.onPush(push('s1'));
    expect(client.pushes).toHaveLength(1);
    await routes.send(client, target, request('DELETE', { subscription_id: 's1' }), 'unsubscribe');
    expect(links[0]!.closed).toBe(false); // s2 is still subscribed
    await routes.send(client, target, request('DELETE', { subscription_id: 's2' }), 'unsubscribe');
    expect(links[0]!.closed).toBe(true);
    expect(routes.size).toBe(0);
  });

  it('a failed subscribe leaves no route', async () => {
    const { routes, links } = setup();
    const client = new FakeConnection('c1');
    const r = request('POST');
    const pending = routes.send(client, target, r, 'subscribe');
    links[0]!.answer = (req) => reply(req, 403, { error: 'forbidden' });
    expect((await pending).http_status).toBe(403);
    expect(links[0]!.closed).toBe(true);
    expect(routes.size).toBe(0);
  });

  it('a client disconnect closes its links (the target drops the subscriptions); close is hooked once', async () => {
    const { routes, links } = setup();
    const client = new FakeConnection('c1');
    for (let i = 0; i < 3; i++) {
      await routes.send(client, target, request('POST'), 'subscribe');
      await routes.send(client, target, request('DELETE', { subscription_id: `s${i + 1}` }), 'unsubscribe');
    }
    await routes.send(client, target, request('POST'), 'subscribe');
    expect(client.closers).toHaveLength(1);
    client.close();
    expect(links.every((l) => l.closed)).toBe(true);
    expect(routes.size).toBe(0);
  });

  it("a failed link sends __disconnected__ with the next sequence to each of the route's subscriptions", async () => {
    const { routes, links } = setup();
    const client = new FakeConnection('c1');
    await routes.send(client, target, request('POST'), 'subscribe'); // s1
    // A push read before its subscribe answer was processed is counted too.
    links[0]!.onPush(push('s9', 'STATUS', 'api'));
    links[0]!.onPush(push('s1'));
    links[0]!.onPush(push('s1'));
    client.pushes.length = 0;
    links[0]!.onClose(new SvcError('target_unreachable', 'forward target node-b:6059 closed the connection'));
    const bodies = client.pushes.map((p) => JSON.parse(Buffer.from(p.body).toString('utf8')) as unknown);
    expect(bodies).toEqual([
      {
        subscription_id: 's1',
        event_type: '__disconnected__',
        app_name: 'web',
        timestamp: 42,
        sequence: 3,
        data: { message: 'forward target node-b:6059 closed the connection' },
      },
      {
        subscription_id: 's9',
        event_type: '__disconnected__',
        app_name: 'api',
        timestamp: 42,
        sequence: 2,
        data: { message: 'forward target node-b:6059 closed the connection' },
      },
    ]);
    expect(routes.size).toBe(0);
    // A later subscribe opens a new route.
    await routes.send(client, target, request('POST'), 'subscribe');
    expect(links).toHaveLength(2);
  });

  it('REMOVED ends an app subscription (the target purges it), not a wildcard one', async () => {
    const { routes, links } = setup();
    const client = new FakeConnection('c1');
    await routes.send(client, target, request('POST'), 'subscribe'); // s1 of web
    links[0]!.onPush(push('s1', 'REMOVED'));
    expect(client.pushes).toHaveLength(1);
    expect(links[0]!.closed).toBe(true);
  });

  it('bounds routes per connection', async () => {
    const links: FakeLink[] = [];
    const routes = new SessionRoutes({
      logger,
      maxRoutesPerConnection: 1,
      connect: () => {
        const link = new FakeLink();
        link.answer = (r) => reply(r, 200, { subscription_id: 's', app_name: 'web' });
        links.push(link);
        return Promise.resolve(link as unknown as UpstreamLink);
      },
    });
    const client = new FakeConnection('c1');
    await routes.send(client, target, request('POST'), 'subscribe');
    await expect(
      routes.send(client, { host: 'node-c', port: 6059, key: 'node-c:6059' }, request('POST'), 'subscribe'),
    ).rejects.toMatchObject({ code: 'unavailable' });
  });
});
