// The scripted-server halves of S1–S8, run from spec/conformance/S<n>.json (`scripted.transcript`,
// format in spec/README.md): a real local TLS socket speaking the TCP framing plays the server's
// side exactly as the transcript says, while the TypeScript client does the client's side.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Request, Response } from '@svc/protocol';
import { SvcClient, TcpTransport, TransportDisconnectedError, type SubscriptionEvent } from '../src/index.ts';
import { loadScenarios } from './conformance-data.ts';
import {
  frame,
  push,
  response,
  startFakeServer,
  type FakeServer,
  type ScriptedConnection,
} from './fake-server.ts';

type Entry = Record<string, unknown>;
interface Scenario {
  id: string;
  title: string;
  scripted?: { transcript: Entry[] };
}

const SCENARIOS = loadScenarios<Scenario>().filter((s) => s.scripted !== undefined);

const TOKEN = 'test-token';

/** One transcript run: the scripted server's connection, the client, and named results. */
class Script {
  readonly received: Request[] = [];
  readonly waiting: ((request: Request) => void)[] = [];
  readonly vars = new Map<string, unknown>();
  readonly settled = new Map<string, { done: boolean; value?: unknown; error?: unknown }>();
  lastRequest: Request | undefined;
  answerEvery: ((request: Request) => Response) | undefined;

  readonly connection: ScriptedConnection;
  readonly transport: TcpTransport;
  readonly client: SvcClient;

  constructor(
    server: FakeServer,
    connection: ScriptedConnection,
    transport: TcpTransport,
    client: SvcClient,
  ) {
    this.connection = connection;
    this.transport = transport;
    this.client = client;
    server.onRequest = (request) => {
      if (this.answerEvery !== undefined) return connection.send(this.answerEvery(request));
      const waiter = this.waiting.shift();
      if (waiter !== undefined) waiter(request);
      else this.received.push(request);
    };
  }

  nextRequest(): Promise<Request> {
    const queued = this.received.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  track(name: string, promise: Promise<unknown>): void {
    const state: { done: boolean; value?: unknown; error?: unknown } = { done: false };
    this.settled.set(name, state);
    this.vars.set(
      name,
      promise.then(
        (value) => Object.assign(state, { done: true, value }),
        (error: unknown) => Object.assign(state, { done: true, error }),
      ),
    );
  }
}

function pushOf(spec: Entry): Response {
  return push(
    String(spec['subscription_id']),
    Number(spec['sequence']),
    (spec['event_type'] as string | undefined) ?? 'STDOUT',
    (spec['data'] as object | undefined) ?? {},
  );
}

function answerOf(request: Request, spec: Entry): Response {
  const body = spec['body'] as Record<string, unknown>;
  // `{"echo": "request_uri"}` answers `{name: <the request's request_uri>}` (S7: which answer is whose).
  if (body['echo'] === 'request_uri')
    return response(request, Number(spec['status']), { name: request.request_uri });
  return response(request, Number(spec['status']), body);
}

async function clientStep(script: Script, entry: Entry): Promise<void> {
  const { client } = script;
  switch (entry['client']) {
    case 'request': {
      const count = Number(entry['count'] ?? 1);
      const one = (i: number): Promise<unknown> =>
        client
          .request({
            method: String(entry['method']),
            path: String(entry['path']).replace('${i}', String(i)),
          })
          .then((r) => JSON.parse(Buffer.from(r.body).toString('utf8')) as unknown);
      script.track(
        String(entry['as']),
        count === 1 ? one(0) : Promise.all(Array.from({ length: count }, (_, i) => one(i))),
      );
      return;
    }
    case 'subscribe': {
      const events: SubscriptionEvent[] = [];
      script.vars.set(String(entry['events_as']), events);
      script.track(
        'subscribe',
        client.subscribe(String(entry['app']), entry['events'] as ['EXIT'], (event) => {
          events.push(event);
        }),
      );
      return;
    }
    case 'await':
      await script.vars.get(String(entry['of']));
      return;
    default:
      throw new Error(`unknown client step ${String(entry['client'])}`);
  }
}

async function serverStep(script: Script, entry: Entry): Promise<void> {
  const { connection } = script;
  switch (entry['server']) {
    case 'expect': {
      const request = await script.nextRequest();
      expect(request.http_method).toBe(entry['method']);
      expect(request.request_uri).toBe(entry['path']);
      for (const [name, value] of Object.entries(
        (entry['headers'] as Record<string, string> | undefined) ?? {},
      ))
        expect(request.headers[name]).toBe(value);
      script.lastRequest = request;
      return;
    }
    case 'answer':
      connection.send(answerOf(script.lastRequest!, entry));
      return;
    case 'answer_every_request':
      script.answerEvery = (request) => answerOf(request, entry);
      return;
    case 'push':
      connection.send(pushOf(entry));
      return;
    case 'burst': {
      const frames = (entry['frames'] as Entry[]).map((f) =>
        frame(
          f['push'] !== undefined
            ? pushOf(f['push'] as Entry)
            : answerOf(script.lastRequest!, f['answer'] as Entry),
        ),
      );
      connection.sendRaw(Buffer.concat(frames));
      return;
    }
    case 'flood': {
      const ids = entry['ids'] as { prefix: string; count: number };
      const sequences = entry['sequences'] as { from: number; to: number };
      const chunks: Buffer[] = [];
      for (let sequence = sequences.from; sequence <= sequences.to; sequence++)
        for (let i = 0; i < ids.count; i++) chunks.push(frame(push(`${ids.prefix}${i}`, sequence)));
      connection.sendRaw(Buffer.concat(chunks));
      return;
    }
    case 'reset':
      connection.destroy();
      return;
    default:
      throw new Error(`unknown server step ${String(entry['server'])}`);
  }
}

const DEMUX: Record<string, (t: TcpTransport) => number> = {
  dropped_events: (t) => t.demux.droppedEvents,
  buffered_subscriptions: (t) => t.demux.bufferedSubscriptions,
  pending_requests: (t) => t.demux.pendingRequests,
};

async function expectation(script: Script, spec: Entry): Promise<void> {
  if (spec['demux'] !== undefined) {
    expect(DEMUX[spec['demux'] as string]!(script.transport)).toBe(spec['equals']);
    return;
  }
  const name = String(spec['of']);
  const state = script.settled.get(name);
  if (spec['pending'] === true) {
    expect(state?.done).toBe(false);
    return;
  }
  if (state !== undefined) await script.vars.get(name);
  if (spec['error'] !== undefined) {
    expect(spec['error']).toBe('transport_disconnected');
    expect(state?.error).toBeInstanceOf(TransportDisconnectedError);
    expect((state!.error as Error).message).not.toMatch(/timeout/i);
    return;
  }
  const value = state === undefined ? script.vars.get(name) : state.value;
  const assertion = (): void => {
    if (spec['sequences'] !== undefined)
      expect((value as SubscriptionEvent[]).map((e) => ('sequence' in e ? e.sequence : -1))).toEqual(
        spec['sequences'],
      );
    if (spec['count'] !== undefined) expect(value as unknown[]).toHaveLength(Number(spec['count']));
    if ('equals' in spec) {
      if (Array.isArray(spec['equals'])) expect(value).toEqual(spec['equals']);
      else expect(value).toMatchObject(spec['equals'] as object);
    }
  };
  if (spec['eventually'] === true) await vi.waitFor(assertion);
  else assertion();
}

afterEach(() => {
  vi.useRealTimers();
});

describe('scripted-server transcripts of spec/conformance', () => {
  it('exist for the transport-level scenarios S1, S2, S4, S5, S7', () => {
    expect(SCENARIOS.map((s) => s.id)).toEqual(['S1', 'S2', 'S4', 'S5', 'S7']);
  });

  for (const scenario of SCENARIOS) {
    it(`${scenario.id}: ${scenario.title}`, async () => {
      await using server = await startFakeServer();
      const accepted = server.nextConnection();
      const transport = await TcpTransport.connect({ host: '127.0.0.1', port: server.port, ca: server.ca });
      const client = new SvcClient({ transport, token: TOKEN });
      const script = new Script(server, await accepted, transport, client);
      const transcript = scenario.scripted!.transcript;
      // A transcript that moves the client's clock runs on a fake clock from its start.
      if (transcript.some((e) => e['client_clock'] !== undefined))
        vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'Date'] });
      try {
        for (const entry of transcript) {
          if (entry['client'] !== undefined) await clientStep(script, entry);
          else if (entry['server'] !== undefined) await serverStep(script, entry);
          else if (entry['client_clock'] !== undefined)
            await vi.advanceTimersByTimeAsync(Number((entry['client_clock'] as Entry)['advance_ms']));
          else await expectation(script, entry['expect'] as Entry);
        }
      } finally {
        vi.useRealTimers();
        await client.close();
      }
    });
  }
});
