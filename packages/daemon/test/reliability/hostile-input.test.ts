// Random hostile input against a REAL daemon over REST, TCP and WSS (fast-check generated, seeded;
// fast-check prints the seed of a failure, SVC_FUZZ_SEED replays it). Afterwards the daemon is the
// same process, every well-formed request still works on every transport, and the definitions
// registered before are intact. docs/reliability.md.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DAEMON_MAX_BODY_BYTES,
  FrameDecoder,
  MAGIC,
  PERMISSIONS,
  encodeFrame,
  encodeRequest,
} from '@svc/protocol';
import {
  fuzzParameters,
  hostileAppBody,
  hostileValue,
  startTestDaemon,
  validAppBody,
  validName,
  type ApiClient,
  type PersistentClient,
  type TestDaemon,
} from '@svc/testkit';
import { ok, processAlive, within, type AppView } from '../robustness/helpers.ts';
import { MARK_VARIABLE, definitionPart, rawHttps } from './helpers.ts';

let daemon: TestDaemon;
let admin: string;
const mark = randomUUID();
/** name -> definition part of the view the daemon answered when it was registered. */
const registered = new Map<string, Record<string, unknown>>();

/** Disabled (enabled: false) so that no random command ever runs; marked so its processes could be found. */
function safeBody(body: Record<string, unknown>): Record<string, unknown> {
  return { ...body, enabled: false, env: { ...(body['env'] as object), [MARK_VARIABLE]: mark } };
}

beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
  const rest = daemon.rest();
  for (const body of fc.sample(validAppBody, { numRuns: 8, seed: 7 })) {
    // A prefix random paths practically never produce: the fuzzing must not replace these by chance.
    const name = `kept-${body['name'] as string}`;
    const view = ok<AppView>(
      await rest.call('PUT', `/svc/app/${name}`, { token: admin, body: safeBody({ ...body, name }) }),
      `register ${name}`,
    );
    registered.set(name, definitionPart(view));
  }
});
afterAll(async () => {
  await daemon?.close();
});

/** Paths that reach real operations with hostile parameters, and paths that reach none. */
const path = fc.oneof(
  fc.constantFrom(
    '/svc/applications',
    '/svc/app/run',
    '/svc/app/syncrun',
    '/svc/config',
    '/svc/subscribe',
    '/svc/self',
    '/svc/roles',
    '/svc/principals',
  ),
  fc
    .tuple(
      fc.constantFrom('/svc/app/', '/svc/role/', '/svc/principal/', '/svc/label/'),
      fc.oneof(
        validName,
        fc.string({ maxLength: 30 }).map(encodeURIComponent),
        fc.constantFrom('%', '..', '%2e%2e', '%00'),
      ),
      fc.constantFrom('', '/output', '/health', '/subscribe', '/start', '/stop', '/task', '/x'),
    )
    .map(([a, b, c]) => a + b + c),
  fc.string({ maxLength: 40 }).map((s) => '/' + encodeURI(s)),
);
const method = fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
const query = fc.dictionary(
  fc.constantFrom('timeout', 'lifecycle', 'events', 'subscribe_events', 'stdout_position', 'value', 'x'),
  fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.constantFrom('-1', '1e9', 'PT', 'P9999999D', 'ALL,NOPE', '99999999999999999'),
  ),
  { maxKeys: 3 },
);
/**
 * Bodies shaped like those of POST /svc/config, /svc/role/{role} and /svc/principal/{id}, with
 * hostile values. Section members are random strings, so a valid REST.ForwardTargets list (which
 * would send events to random hosts) is practically never produced.
 */
const permissionish = fc.oneof(fc.constantFrom(...PERMISSIONS), fc.string({ maxLength: 20 }), hostileValue);
const settingsBody = fc.oneof(
  fc.dictionary(
    fc.constantFrom('BaseConfig', 'REST', 'Labels', 'Registry', 'log_level', 'labels', 'limits'),
    fc.oneof(hostileValue, fc.dictionary(fc.string({ maxLength: 10 }), hostileValue, { maxKeys: 3 })),
    { maxKeys: 4 },
  ),
  fc.array(permissionish, { maxLength: 40 }),
  fc.record({ permissions: fc.oneof(fc.array(permissionish, { maxLength: 40 }), hostileValue) }),
  fc.record({
    roles: fc.oneof(fc.array(fc.oneof(validName, hostileValue), { maxLength: 70 }), hostileValue),
  }),
);
const jsonBody = fc.oneof(hostileAppBody, hostileValue, settingsBody).map((v) => {
  // Bodies that could register an app are made safe (disabled); all others are sent as they are.
  if (typeof v === 'object' && v !== null && !Array.isArray(v) && 'command' in v) return safeBody(v);
  return v;
});
const body = fc.oneof(
  jsonBody.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
  fc.constant(Buffer.alloc(0)),
);
const token = fc.constantFrom<'admin' | 'viewer' | 'none' | 'garbage'>(
  'admin',
  'admin',
  'viewer',
  'none',
  'garbage',
);

async function bearer(kind: 'admin' | 'viewer' | 'none' | 'garbage'): Promise<string | undefined> {
  if (kind === 'none') return undefined;
  if (kind === 'garbage') return 'eyJhbGciOiJub25lIn0.e30.';
  return kind === 'admin' ? admin : daemon.token('viewer');
}

function expectNoServerError(status: number | undefined, what: string): void {
  // 5xx would mean the daemon failed on client input; 503/504 are its documented overload answers.
  if (status !== undefined && status >= 500) expect([503, 504], what).toContain(status);
}

/** Well-formed wire requests (msgpack) with hostile method, path, query and body. */
function wireRequest(headers: Record<string, string>): fc.Arbitrary<Buffer> {
  return fc.tuple(method, path, query, body).map(([m, p, q, b]) =>
    encodeRequest({
      uuid: randomUUID(),
      request_uri: p,
      http_method: m,
      client_addr: '',
      headers,
      query: q,
      body: b,
    }),
  );
}

/**
 * Sends hostile messages on a persistent connection, then one good request: it is answered 200,
 * or the connection was closed because of the garbage; no answer to anything is a 5xx.
 */
async function sendThenProbe(
  client: PersistentClient,
  messages: readonly Buffer[],
  token?: string,
): Promise<void> {
  for (const m of messages) client.sendRaw(m);
  const answer = await Promise.race([
    client.call('GET', '/svc/self', { token }).then(
      (r) => r.status,
      () => 'closed' as const,
    ),
    client.closed.then(() => 'closed' as const),
  ]);
  if (answer !== 'closed') expect(answer).toBe(200);
  for (const push of client.pushes)
    expectNoServerError(push.http_status, `${client.kind} answer ${push.http_status}`);
  await client.close();
}

describe('hostile input against a real daemon', () => {
  it('REST: random methods, paths, queries, headers and bodies get a 4xx (or a close), never a 5xx', async () => {
    const rest = daemon.rest();
    await fc.assert(
      fc.asyncProperty(method, path, query, body, token, async (m, p, q, b, t) => {
        const r = await rest.call(m, p, {
          token: await bearer(t),
          query: q,
          rawBody: b,
          headers: { 'content-type': 'application/json' },
        });
        expectNoServerError(r.status, `${m} ${p} -> ${r.status} ${r.text().slice(0, 200)}`);
      }),
      fuzzParameters(150),
    );
  });

  it('REST: raw HTTP that no client library would send is refused or closed, never a 5xx', async () => {
    const line = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.constantFrom(
        'GET /svc/self HTTP/1.1',
        'GET /svc/self HTTP/9.9',
        'POST /svc/config HTTP/1.1',
        'Transfer-Encoding: chunked',
        'Content-Length: 5',
        'Content-Length: -1',
        'Content-Length: 99999999999999999999',
        'Authorization: Bearer ',
        'Host: x',
        'Expect: 100-continue',
        'Connection: close',
        'zz\r\n0\r\n',
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 8 }),
        fc.uint8Array({ maxLength: 100 }),
        async (lines, tail) => {
          const status = await rawHttps(
            daemon,
            Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n'), tail]),
          );
          expectNoServerError(status, `raw request ${JSON.stringify(lines)}`);
        },
      ),
      fuzzParameters(60),
    );
  });

  it('TCP: random frames, random msgpack requests and garbage: answers without 5xx, or a closed connection', async () => {
    const frames = fc.oneof(
      wireRequest({ authorization: `Bearer ${admin}` }).map((request) => encodeFrame(request)),
      // well-framed garbage
      fc.uint8Array({ maxLength: 200 }).map((b) => encodeFrame(b)),
      // a header announcing more than was sent, or a bad magic
      fc.tuple(fc.constantFrom(MAGIC, 0xdeadbeef), fc.nat({ max: 2 ** 32 - 1 })).map(([magic, length]) => {
        const h = Buffer.alloc(8);
        h.writeUInt32BE(magic, 0);
        h.writeUInt32BE(length, 4);
        return h;
      }),
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(frames, { minLength: 1, maxLength: 5 }), async (list) => {
        // Where the stream stands once sent: mid-frame, the probe would only be more body bytes
        // (the daemon rightly waits up to limits.request_timeout_ms); after a framing error the
        // daemon must close the connection.
        const decoder = new FrameDecoder({ maxBodyBytes: DAEMON_MAX_BODY_BYTES });
        let framingError = false;
        try {
          decoder.push(Buffer.concat(list));
        } catch {
          framingError = true;
        }
        const client = await daemon.tcp();
        if (framingError) {
          for (const frame of list) client.sendRaw(frame);
          await within(client.closed, 10_000, 'the daemon to close a connection with a framing error');
        } else if (decoder.bufferedBytes > 0) {
          for (const frame of list) client.sendRaw(frame);
          await client.close();
        } else await sendThenProbe(client, list, admin);
      }),
      fuzzParameters(60),
    );
  });

  it('WSS: random binary and msgpack messages: answers without 5xx, or a closed connection', async () => {
    const messages = fc.oneof(
      wireRequest({}),
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(messages, { minLength: 1, maxLength: 5 }), async (list) => {
        await sendThenProbe(await daemon.wss(admin), list);
      }),
      fuzzParameters(60),
    );
  });

  it('afterwards: same process, every well-formed request works on every transport, definitions intact', async () => {
    expect(processAlive(daemon.pid)).toBe(true);
    expect(daemon.stderr()).not.toMatch(/uncaught|unhandled/i);
    const clients: ApiClient[] = [daemon.rest(), await daemon.tcp(), await daemon.wss(admin)];
    for (const client of clients) {
      const what = (s: string): string => `${client.kind}: ${s}`;
      ok(await client.call('GET', '/svc/self', { token: admin }), what('self'));
      ok(await client.call('GET', '/svc/config', { token: admin }), what('config'));
      ok(await client.call('GET', '/svc/roles', { token: admin }), what('roles'));
      const list = ok<AppView[]>(
        await client.call('GET', '/svc/applications', { token: admin }),
        what('list'),
      );
      for (const [name, definition] of registered) {
        expect(
          list.map((a) => a.name),
          what(`${name} listed`),
        ).toContain(name);
        const view = ok<AppView>(
          await client.call('GET', `/svc/app/${name}`, { token: admin }),
          what(`get ${name}`),
        );
        expect(definitionPart(view), what(`${name} unchanged`)).toEqual(definition);
      }
      const name = `after-${client.kind}`;
      ok(
        await client.call('PUT', `/svc/app/${name}`, { token: admin, body: safeBody({ command: 'true' }) }),
        what('register'),
      );
      expect(
        (await client.call('GET', `/svc/app/${name}/output`, { token: admin })).status,
        what('output'),
      ).toBe(200);
      ok(await client.call('DELETE', `/svc/app/${name}`, { token: admin }), what('delete'));
      const run = await client.call('POST', '/svc/app/syncrun', {
        token: admin,
        body: { command: 'echo alive', env: { [MARK_VARIABLE]: mark } },
      });
      expect(run.status, what('syncrun')).toBe(200);
      expect(run.text()).toBe('alive\n');
      expect(run.headers['x-exit-code']).toBe('0');
    }
  });
});
