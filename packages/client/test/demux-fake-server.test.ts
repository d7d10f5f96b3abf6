// The demultiplexer over a real TLS socket to a scripted server: the timing-sensitive parts of the
// contract (S1, S2, S4, S5, S7 at the transport level), the 1 GiB bound and callback isolation.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FrameError, HEADER_SIZE, MAGIC, type Request, type Response } from '@svc/protocol';
import {
  AppRemovedError,
  SvcClient,
  TcpTransport,
  TransportDisconnectedError,
  type SubscriptionEvent,
} from '../src/index.ts';
import {
  frame as framed,
  push,
  response,
  startFakeServer,
  type FakeServer,
  type ScriptedConnection,
} from './fake-server.ts';

let server: FakeServer;
let transport: TcpTransport;
let client: SvcClient;
let connection: ScriptedConnection;

beforeEach(async () => {
  server = await startFakeServer();
  const accepted = server.nextConnection();
  transport = await TcpTransport.connect({ host: '127.0.0.1', port: server.port, ca: server.ca });
  client = new SvcClient({ transport, token: 'test-token' });
  connection = await accepted;
});

afterEach(async () => {
  vi.useRealTimers();
  await client.close();
  await server.close();
});

/** Resolves with the next request the server receives. */
function nextRequest(): Promise<Request> {
  return new Promise((resolve) => {
    server.onRequest = (request) => resolve(request);
  });
}

describe('client demultiplexer against a scripted TCP server', () => {
  it('S1: a demultiplexed request slower than any receive timeout completes (no client-side cap)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'Date'] });
    const received = nextRequest();
    let settled = false;
    const call = client.getSelf().finally(() => (settled = true));
    const request = await received;
    expect(request.headers['authorization']).toBe('Bearer test-token');
    // Two minutes of client time pass: any client-side timer (60 s receive timeout) would fire.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(settled).toBe(false);
    connection.send(
      response(request, 200, { principal_id: 'p', roles: [], permissions: [], status: 'active' }),
    );
    await expect(call).resolves.toMatchObject({ principal_id: 'p' });
  });

  it('S2: a disconnect wakes waiters with TransportDisconnectedError, sends __disconnected__, closes the transport', async () => {
    server.onRequest = (request, conn) => {
      if (request.request_uri.endsWith('/subscribe'))
        conn.send(response(request, 200, { subscription_id: 's1', app_name: 'a', events: ['EXIT'] }));
    };
    const events: SubscriptionEvent[] = [];
    await client.subscribe('a', ['EXIT'], (event) => {
      events.push(event);
    });
    server.onRequest = () => {}; // never answers
    const pending = client.getSelf();
    await vi.waitFor(() => expect(transport.demux.pendingRequests).toBe(1));
    connection.destroy();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportDisconnectedError);
    expect((error as Error).message).not.toMatch(/timeout/i);
    await transport.closed;
    expect(events).toEqual([{ subscription_id: 's1', event_type: '__disconnected__' }]);
    await expect(client.listApplications()).rejects.toBeInstanceOf(TransportDisconnectedError);
  });

  it('S4: events that arrive before the subscribe answer are buffered and flushed in order', async () => {
    server.onRequest = (request, conn) => {
      // Three pushes, then the answer, in one write: the events beat the subscription_id.
      const bytes = [
        push('s4', 1),
        push('s4', 2),
        push('s4', 3),
        response(request, 200, { subscription_id: 's4', app_name: 'a', events: ['STDOUT'] }),
      ];
      conn.sendRaw(Buffer.concat(bytes.map((m) => framed(m))));
    };
    const sequences: number[] = [];
    await client.subscribe('a', ['STDOUT'], (event) => {
      if ('sequence' in event) sequences.push(event.sequence);
    });
    expect(sequences).toEqual([1, 2, 3]);
    expect(transport.demux.bufferedSubscriptions).toBe(0);
    connection.send(push('s4', 4));
    await vi.waitFor(() => expect(sequences).toEqual([1, 2, 3, 4]));
  });

  it('S5: a flood for never-registered ids stays within 64 ids x 1000 events, oldest dropped; discarded on unsubscribe and stop', async () => {
    server.onRequest = (request, conn) =>
      conn.send(response(request, 200, { removed: true, principal_id: 'p' }));
    const ids = Array.from({ length: 70 }, (_, i) => `flood-${i}`);
    const chunks: Buffer[] = [];
    for (let sequence = 1; sequence <= 1100; sequence++)
      for (const id of ids) chunks.push(framed(push(id, sequence)));
    connection.sendRaw(Buffer.concat(chunks));
    // A response after the flood on the same socket arrives after every push of it.
    await client.getSelf();
    expect(transport.demux.bufferedSubscriptions).toBe(64);
    for (const id of ids.slice(0, 64)) expect(transport.demux.bufferedEvents(id)).toBe(1000);
    for (const id of ids.slice(64)) expect(transport.demux.bufferedEvents(id)).toBe(0);
    expect(transport.demux.droppedEvents).toBe(6 * 1100 + 64 * 100);
    const first: number[] = [];
    transport.demux.register('flood-0', (event) => {
      if ('sequence' in event) first.push(event.sequence);
    });
    expect(first).toHaveLength(1000);
    expect(first[0]).toBe(101);
    expect(first.at(-1)).toBe(1100);
    await client.unsubscribe('flood-1');
    expect(transport.demux.bufferedEvents('flood-1')).toBe(0);
    connection.destroy();
    await transport.closed;
    expect(transport.demux.bufferedSubscriptions).toBe(0);
  });

  it('S7: responses written the instant a request arrives are never dropped (500 concurrent calls)', async () => {
    server.onRequest = (request, conn) => conn.send(response(request, 200, { name: request.request_uri }));
    const names = Array.from({ length: 500 }, (_, i) => `app-${i}`);
    const apps = await Promise.all(names.map((name) => client.getApplication(name)));
    expect(apps.map((a) => a.name)).toEqual(names.map((n) => `/svc/app/${n}`));
    expect(transport.demux.pendingRequests).toBe(0);
  });

  it('a slow asynchronous callback delays only its own subscription; the reader and other subscriptions go on', async () => {
    server.onRequest = (request, conn) => {
      const id = request.query['events'] === 'EXIT' ? 'slow' : 'fast';
      conn.send(response(request, 200, { subscription_id: id, app_name: 'a', events: [] }));
    };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow: number[] = [];
    const fast: number[] = [];
    await client.subscribe('a', ['EXIT'], async (event) => {
      if ('sequence' in event) slow.push(event.sequence);
      if (slow.length === 1) await gate;
    });
    await client.subscribe('a', ['STDOUT'], (event) => {
      if ('sequence' in event) fast.push(event.sequence);
    });
    connection.sendRaw(
      Buffer.concat(
        [push('slow', 1), push('slow', 2), push('fast', 1), push('fast', 2)].map((m) => framed(m)),
      ),
    );
    await vi.waitFor(() => expect(fast).toEqual([1, 2]));
    await expect(client.getSelf().then(() => 'answered')).resolves.toBe('answered'); // reader not blocked
    expect(slow).toEqual([1]);
    release();
    await vi.waitFor(() => expect(slow).toEqual([1, 2]));
  });

  it('routes a push by X-Subscription-Id when the body has no subscription_id', async () => {
    server.onRequest = (request, conn) =>
      conn.send(response(request, 200, { subscription_id: 'h1', app_name: 'a', events: [] }));
    const got: SubscriptionEvent[] = [];
    await client.subscribe('a', [], (event) => {
      got.push(event);
    });
    const message = push('h1', 7);
    message.body = Buffer.from(
      JSON.stringify({ event_type: 'START', app_name: 'a', timestamp: 0, sequence: 7, data: {} }),
    );
    connection.send(message);
    await vi.waitFor(() => expect(got).toHaveLength(1));
    expect(got[0]).toMatchObject({ subscription_id: 'h1', sequence: 7 });
  });

  it('forwarding: every frame carries X-Target-Host and the current bearer', async () => {
    const forwarded = new SvcClient({ transport, token: 'tok-1', targetHost: 'node-b:6059' });
    server.onRequest = (request, conn) => conn.send(response(request, 200, []));
    await forwarded.listApplications();
    forwarded.setToken('tok-2');
    await forwarded.listApplications();
    expect(server.requests.map((r) => [r.headers['x-target-host'], r.headers['authorization']])).toEqual([
      ['node-b:6059', 'Bearer tok-1'],
      ['node-b:6059', 'Bearer tok-2'],
    ]);
  });

  it('a frame announcing more than 1 GiB ends the connection as a disconnect', async () => {
    server.onRequest = () => {};
    const pending = client.getSelf();
    await vi.waitFor(() => expect(transport.demux.pendingRequests).toBe(1));
    const header = Buffer.alloc(HEADER_SIZE);
    header.writeUInt32BE(MAGIC, 0);
    header.writeUInt32BE(1024 * 1024 * 1024 + 1, 4);
    connection.sendRaw(header);
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportDisconnectedError);
    expect((error as Error).cause).toBeInstanceOf(FrameError);
    expect(((error as Error).cause as FrameError).reason).toBe('too_large');
    await transport.closed;
  });
});

describe('run-wait against a scripted TCP server (REMOVED and no EXIT on delete)', () => {
  const run = { name: 'job-run-1', process_uuid: 'uuid-1' };

  /** Answers the run-wait's requests; `after` pushes an event once the backfill read was answered. */
  function script(after: Response): string[] {
    const seen: string[] = [];
    server.onRequest = (request, conn) => {
      seen.push(`${request.http_method} ${request.request_uri}`);
      if (request.request_uri.endsWith('/subscribe') && request.http_method === 'POST') {
        conn.send(response(request, 200, { subscription_id: 'r1', app_name: run.name, events: [] }));
      } else if (request.request_uri.endsWith('/output')) {
        conn.send({
          ...response(request, 200, ''),
          body: Buffer.alloc(0),
          headers: { 'X-Output-Position': '0' },
        });
        conn.send(after);
      } else {
        conn.send(response(request, 200, {}));
      }
    };
    return seen;
  }

  it('reports an EXIT as it arrives: no GET of the app confirms it, the app is deleted after', async () => {
    const seen = script(push('r1', 1, 'EXIT', { exit_code: 7, process_uuid: run.process_uuid }));
    await expect(client.waitForAsyncRun(run)).resolves.toBe(7);
    expect(seen).not.toContain(`GET /svc/app/${run.name}`);
    expect(seen).toContain(`DELETE /svc/app/${run.name}`);
  });

  it('REMOVED is the removal: AppRemovedError, no delete attempt', async () => {
    const seen = script(push('r1', 1, 'REMOVED'));
    await expect(client.waitForAsyncRun(run)).rejects.toBeInstanceOf(AppRemovedError);
    expect(seen.filter((line) => line.startsWith('DELETE /svc/app/'))).toEqual([]);
    expect(seen).not.toContain(`GET /svc/app/${run.name}`);
  });
});
