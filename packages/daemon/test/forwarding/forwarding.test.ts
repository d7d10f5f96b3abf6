// Cross-node forwarding (X-Target-Host) between real daemons on one machine: gateway A forwards to
// targets B and C (distinct SVC_HOME and SVC_HOST_NAME, one test issuer, B's TLS material shared).
// Every refusal is shown to happen before a connection is opened (a listener that counts accepts),
// and what a target receives is recorded by a TLS stand-in that carries B's certificate.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCONNECTED_EVENT, EVENT_REQUEST_URI, type EventMessage } from '@svc/protocol';
import {
  freePort,
  openWebSocket,
  startTestDaemon,
  startTestIssuer,
  type ApiClient,
  type CallOptions,
  type PersistentClient,
  type TestDaemon,
  type TestIssuer,
} from '@svc/testkit';
import { eventsOf, expectGapless, message, ok, waitEvents } from '../events/helpers.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  acceptRecorder,
  recordingTarget,
  silentListener,
  type AcceptRecorder,
  type RecordingTarget,
} from './helpers.ts';

let issuer: TestIssuer;
let a: TestDaemon; // the gateway
let b: TestDaemon; // a target
let c: TestDaemon; // a target that is killed
let recorder: AcceptRecorder; // allowed, counts connections
let stranger: AcceptRecorder; // not allowed, counts connections
let recording: RecordingTarget; // allowed, records requests
let deadAddress: string; // allowed, nothing listens
let admin: string;
let B: string;
let C: string;
const FUTURE = new Date(Date.now() + 365 * 24 * 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

beforeAll(async () => {
  issuer = await startTestIssuer();
  b = await startTestDaemon({ issuer, env: { SVC_HOST_NAME: 'node-b' } });
  c = await startTestDaemon({ issuer, tlsFrom: b, env: { SVC_HOST_NAME: 'node-c' } });
  B = `127.0.0.1:${b.tcpPort}`;
  C = `127.0.0.1:${c.tcpPort}`;
  recorder = await acceptRecorder();
  stranger = await acceptRecorder();
  recording = await recordingTarget(b.workDir);
  deadAddress = `127.0.0.1:${await freePort()}`;
  a = await startTestDaemon({
    issuer,
    tlsFrom: b,
    env: {
      SVC_HOST_NAME: 'node-a',
      SVC_FORWARD_TARGETS: [B, C, recorder.address, recording.address, deadAddress].join(','),
    },
  });
  admin = await a.token('admin');
  // Apps that exist only on the target: enabled but not started before FUTURE (STATUS events only).
  for (const target of [b, c])
    ok(
      await target.rest().call('PUT', '/svc/app/only-there', {
        token: admin,
        body: { command: 'sleep 600', start_time: FUTURE },
      }),
    );
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), c?.close()]);
  await Promise.all([recorder?.close(), stranger?.close(), recording?.close()]);
  await issuer?.close();
});

function via(target: string, options: CallOptions = {}): CallOptions {
  return { ...options, headers: { ...options.headers, 'x-target-host': target } };
}

async function client(kind: 'rest' | 'tcp' | 'wss', token = admin): Promise<ApiClient> {
  return kind === 'rest' ? a.rest() : kind === 'tcp' ? a.tcp() : a.wss(token);
}

describe.each([['rest'], ['tcp'], ['wss']] as const)('over %s', (kind) => {
  it('forwards to the target and returns its answer (an app that exists only there)', async () => {
    const gateway = await client(kind);
    const there = await gateway.call('GET', '/svc/app/only-there', via(B, { token: admin }));
    expect(there.status, there.text()).toBe(200);
    expect(there.json()).toMatchObject({ name: 'only-there' });
    const here = await gateway.call('GET', '/svc/app/only-there', { token: admin });
    expect(here.status).toBe(404);
    const self = await gateway.call('GET', '/svc/self', via(C, { token: admin }));
    expect(self.status).toBe(200);
    expect(self.json()).toMatchObject({ principal_id: 'test-admin' });
  });

  it('refuses a missing or invalid bearer at the gateway, before connecting', async () => {
    const gateway = await client(kind === 'wss' ? 'tcp' : kind); // a WSS session has its bearer pinned
    const before = recorder.accepts();
    const missing = await gateway.call('GET', '/svc/applications', via(recorder.address));
    expect(missing.status).toBe(401);
    expect(missing.json()).toMatchObject({ error: 'unauthorized' });
    const invalid = await gateway.call(
      'GET',
      '/svc/applications',
      via(recorder.address, { token: 'not.a.token' }),
    );
    expect(invalid.status).toBe(401);
    expect(invalid.json()).toMatchObject({ error: 'invalid_token' });
    // An unknown route needs a bearer too (fail closed).
    const unknown = await gateway.call('GET', '/svc/no-such-route', via(recorder.address));
    expect(unknown.status).toBe(401);
    expect(recorder.accepts()).toBe(before);
  });

  it('forwards public routes without a bearer', async () => {
    const gateway = await client(kind === 'wss' ? 'tcp' : kind);
    const config = await gateway.call('GET', '/svc/auth/config', via(B));
    expect(config.status, config.text()).toBe(200);
    const resource = await gateway.call('GET', '/.well-known/oauth-protected-resource', via(B));
    expect(resource.status).toBe(200);
    // The metadata names the resource that answered: B's REST address, not A's.
    expect(resource.text()).toContain(`:${b.restPort}`);
    expect(resource.text()).not.toContain(`:${a.restPort}`);
    const openapi = await gateway.call('GET', '/openapi.json', via(B));
    expect(openapi.status).toBe(200);
  });

  it('refuses a target that is not allowed with 403 before any connection', async () => {
    const gateway = await client(kind);
    const refused = await gateway.call('GET', '/svc/applications', via(stranger.address, { token: admin }));
    expect(refused.status).toBe(403);
    expect(refused.json()).toMatchObject({ error: 'target_not_allowed' });
    const publicRoute = await gateway.call('GET', '/svc/auth/config', via(stranger.address));
    expect(publicRoute.status).toBe(403);
    expect(stranger.accepts()).toBe(0);
  });

  it('answers 502 target_unreachable when the target is down', async () => {
    const gateway = await client(kind);
    const r = await gateway.call('GET', '/svc/applications', via(deadAddress, { token: admin }));
    expect(r.status).toBe(502);
    expect(r.json()).toMatchObject({ error: 'target_unreachable' });
    expect(r.text()).toContain(deadAddress);
    expect(r.text()).not.toContain(admin);
  });

  it('never forwards a process-key request', async () => {
    const gateway = await client(kind);
    const before = recording.requests.length;
    const r = await gateway.call(
      'GET',
      '/svc/app/only-there/task',
      via(recording.address, { headers: { 'x-svc-process-key': 'some-key' } }),
    );
    expect(r.status).toBe(403);
    expect(r.json()).toMatchObject({ error: 'process_key_not_forwarded' });
    expect(recording.requests.length).toBe(before);
  });

  it("applies the target's authorization: a viewer cannot register through the gateway", async () => {
    const viewer = await a.token('viewer');
    const gateway = await client(kind, kind === 'wss' ? viewer : admin);
    const name = `via-gateway-${kind}`;
    const denied = await gateway.call(
      'PUT',
      `/svc/app/${name}`,
      via(B, { token: viewer, body: { command: 'sleep 600', start_time: FUTURE } }),
    );
    expect(denied.status).toBe(403);
    expect(denied.json()).toMatchObject({ error: 'forbidden' });
    const visible = await gateway.call('GET', '/svc/applications', via(B, { token: viewer }));
    expect(visible.status).toBe(200);
    // The admin may; the app then exists on B and not on A.
    const adminClient = await client(kind);
    ok(
      await adminClient.call(
        'PUT',
        `/svc/app/${name}`,
        via(B, { token: admin, body: { command: 'sleep 600', start_time: FUTURE } }),
      ),
    );
    expect((await b.rest().call('GET', `/svc/app/${name}`, { token: admin })).status).toBe(200);
    expect((await a.rest().call('GET', `/svc/app/${name}`, { token: admin })).status).toBe(404);
  });
});

describe('what the target receives', () => {
  it('has no X-Target-Host (no loops), keeps the bearer, adds X-Forwarded-For', async () => {
    const r = await a.rest().call('GET', '/svc/applications', via(recording.address, { token: admin }));
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ recorded: true });
    const seen = recording.requests.at(-1)!;
    expect(seen.request_uri).toBe('/svc/applications');
    expect(seen.http_method).toBe('GET');
    expect(seen.headers['x-target-host']).toBeUndefined();
    expect(seen.headers['authorization']).toBe(`Bearer ${admin}`);
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['host']).toBeUndefined();
  });

  // With allow-lists both ways a request must still end at the first target (the recording target
  // above shows the header is gone; this shows the pair does not bounce a request back).
  it('a target whose own allow-list includes the gateway still serves locally', async () => {
    ok(
      await b.rest().call('POST', '/svc/config', {
        token: admin,
        body: { REST: { ForwardTargets: [`127.0.0.1:${a.tcpPort}`] } },
      }),
    );
    const r = await a.rest().call('GET', '/svc/app/only-there', via(B, { token: admin }));
    expect(r.status, r.text()).toBe(200);
    expect(r.json()).toMatchObject({ name: 'only-there' });
  });

  it('a target naming the gateway itself is served locally', async () => {
    for (const self of ['node-a', `127.0.0.1:${a.tcpPort}`, `localhost:${a.tcpPort}`]) {
      const r = await a.rest().call('GET', '/svc/app/only-there', via(self, { token: admin }));
      expect(r.status, self).toBe(404); // A has no such app: answered by A
    }
  });

  it('rejects a malformed X-Target-Host with 400', async () => {
    const r = await a.rest().call('GET', '/svc/applications', via('bad host!', { token: admin }));
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ error: 'invalid_target_host' });
  });
});

describe('TLS trust and connect failures', () => {
  /** Replace A's allow-list (POST /svc/config): the standing targets plus `extra`. */
  async function allow(...extra: string[]): Promise<void> {
    ok(
      await a.rest().call('POST', '/svc/config', {
        token: admin,
        body: {
          REST: { ForwardTargets: [B, C, recorder.address, recording.address, deadAddress, ...extra] },
        },
      }),
    );
  }

  it('a target whose certificate is not from a trusted CA is unreachable; forward_ca_file adds trust', async () => {
    // D has its own generated CA, which A does not trust.
    await using d = await startTestDaemon({ issuer, env: { SVC_HOST_NAME: 'node-d' } });
    const D = `127.0.0.1:${d.tcpPort}`;
    await allow(D);
    const r = await a.rest().call('GET', '/svc/self', via(D, { token: admin }));
    expect(r.status).toBe(502);
    expect(r.json()).toMatchObject({ error: 'target_unreachable' });
    // E trusts D's CA through SVC_FORWARD_CA_FILE (besides its own).
    await using e = await startTestDaemon({
      issuer,
      env: {
        SVC_HOST_NAME: 'node-e',
        SVC_FORWARD_TARGETS: D,
        SVC_FORWARD_CA_FILE: join(d.workDir, 'ssl', 'ca.pem'),
      },
    });
    const trusted = await e.rest().call('GET', '/svc/self', via(D, { token: admin }));
    expect(trusted.status, trusted.text()).toBe(200);
    // The effective configuration names the extra trust (a path, not a secret).
    const config = await e.rest().call('GET', '/svc/config', { token: admin });
    expect(config.json()).toMatchObject({ REST: { ForwardCaFile: join(d.workDir, 'ssl', 'ca.pem') } });
  });

  it('a target that accepts but never completes TLS gives 504 target_timeout after the connect timeout', async () => {
    const silent = await silentListener();
    try {
      await allow(silent.address);
      const r = await a.rest().call('GET', '/svc/self', via(silent.address, { token: admin }));
      expect(r.status).toBe(504);
      expect(r.json()).toMatchObject({ error: 'target_timeout' });
    } finally {
      await silent.close();
      await allow();
    }
  }, 20_000);
});

describe('subscriptions', () => {
  it('a forwarded subscribe over plain HTTP is 405 without connecting', async () => {
    const before = recorder.accepts();
    for (const path of ['/svc/app/only-there/subscribe', '/svc/subscribe']) {
      const r = await a.rest().call('POST', path, via(recorder.address, { token: admin }));
      expect(r.status).toBe(405);
      expect(r.json()).toMatchObject({ error: 'persistent_connection_required' });
    }
    const atomic = await a.rest().call('PUT', '/svc/app/x', {
      ...via(recorder.address, { token: admin, body: { command: 'true' } }),
      query: { subscribe_events: 'ALL' },
    });
    expect(atomic.status).toBe(405);
    expect(recorder.accepts()).toBe(before);
  });

  async function persistent(kind: 'tcp' | 'wss', upgradeTarget?: string): Promise<PersistentClient> {
    if (kind === 'tcp') return a.tcp();
    return a.wss(admin, upgradeTarget === undefined ? {} : { 'x-target-host': upgradeTarget });
  }

  async function subscribeVia(
    gateway: PersistentClient,
    target: string,
    app: string,
  ): Promise<{ subscription_id: string; app_name: string }> {
    const r = await gateway.call('POST', `/svc/app/${app}/subscribe`, {
      ...via(target, { token: admin }),
      query: { events: 'STATUS' },
    });
    expect(r.status, r.text()).toBe(200);
    return r.json();
  }

  async function toggle(target: TestDaemon, app: string): Promise<void> {
    ok(await target.rest().call('POST', `/svc/app/${app}/disable`, { token: admin }));
    ok(await target.rest().call('POST', `/svc/app/${app}/enable`, { token: admin }));
  }

  /**
   * The target has no such subscription: its owner, on a direct connection, finds none (had it been
   * left, this DELETE would remove it and answer 200). Another principal learns nothing either way.
   */
  async function goneFromTarget(target: TestDaemon, id: string): Promise<boolean> {
    const direct = await target.tcp();
    const r = await direct.call('DELETE', '/svc/subscribe', { token: admin, query: { subscription_id: id } });
    await direct.close();
    if (r.status !== 200 && r.status !== 404) throw new Error(`unexpected ${r.status} ${r.text()}`);
    return r.status === 404;
  }

  /** STATUS pushes the target queued so far (svc_event_deliveries_total). */
  async function statusPushes(target: TestDaemon): Promise<number> {
    const r = await target.rest().call('GET', '/svc/metrics', { token: admin });
    const line = /^svc_event_deliveries_total\{type="STATUS"\} (\d+)$/m.exec(r.text());
    return Number(line?.[1] ?? 0);
  }

  /**
   * STATUS pushes the target queues for one disable + enable of `app` (two per live subscription to
   * it, wildcard ones included), counted once a direct witness subscription saw both events.
   */
  async function pushesPerToggle(
    target: TestDaemon,
    app: string,
    witness: { client: PersistentClient; id: string },
  ): Promise<number> {
    const seen = eventsOf(witness.client, witness.id).length;
    const before = await statusPushes(target);
    await toggle(target, app);
    await waitEvents(
      witness.client,
      witness.id,
      (e) => e.length >= seen + 2,
      'the witness to see the toggle',
    );
    return (await statusPushes(target)) - before;
  }

  it.each([['tcp'], ['wss']] as const)(
    'over %s: events of the target reach the client; unsubscribe ends the route',
    async (kind) => {
      const gateway = await persistent(kind);
      const sub = await subscribeVia(gateway, B, 'only-there');
      expect(sub.app_name).toBe('only-there');
      await toggle(b, 'only-there');
      const events = await waitEvents(gateway, sub.subscription_id, (e) => e.length >= 2, 'two STATUS');
      expect(events.map((e) => e.data)).toEqual([
        { enabled: false, previous_enabled: true },
        { enabled: true, previous_enabled: false },
      ]);
      expectGapless(events);
      const r = await gateway.call('DELETE', '/svc/app/only-there/subscribe', {
        ...via(B, { token: admin }),
        query: { subscription_id: sub.subscription_id },
      });
      expect(r.status, r.text()).toBe(200);
      expect(await goneFromTarget(b, sub.subscription_id)).toBe(true);
    },
  );

  it('atomic registration with subscribe_events and a wildcard subscription, forwarded over TCP', async () => {
    const gateway = await persistent('tcp');
    const all = await gateway.call('POST', '/svc/subscribe', {
      ...via(B, { token: admin }),
      query: { events: 'START,EXIT' },
    });
    expect(all.status, all.text()).toBe(200);
    const wildcard = all.json<{ subscription_id: string; app_name: string }>();
    expect(wildcard.app_name).toBe('*');
    const registered = await gateway.call('PUT', '/svc/app/fast-there', {
      ...via(B, { token: admin, body: { command: 'echo done' } }),
      query: { subscribe_events: 'START,EXIT' },
    });
    expect(registered.status, registered.text()).toBe(200);
    const own = registered.json<{ name: string; subscription_id: string }>();
    for (const id of [own.subscription_id, wildcard.subscription_id]) {
      const events = await waitEvents(
        gateway,
        id,
        (e) => e.some((m) => m.event_type === 'EXIT' && m.app_name === 'fast-there'),
        `START and EXIT of fast-there on ${id}`,
      );
      expect(events.filter((m) => m.app_name === 'fast-there').map((m) => m.event_type)).toEqual([
        'START',
        'EXIT',
      ]);
      expectGapless(events);
    }
    expect((await a.rest().call('GET', '/svc/app/fast-there', { token: admin })).status).toBe(404);
    await gateway.close();
  });

  it('a WSS upgrade with X-Target-Host makes it the default target of every frame', async () => {
    const gateway = await persistent('wss', B);
    const app = await gateway.call('GET', '/svc/app/only-there', { token: admin });
    expect(app.status, app.text()).toBe(200);
    const r = await gateway.call('POST', '/svc/app/only-there/subscribe', {
      token: admin,
      query: { events: 'STATUS' },
    });
    expect(r.status).toBe(200);
    const sub = r.json<{ subscription_id: string }>();
    await toggle(b, 'only-there');
    await waitEvents(gateway, sub.subscription_id, (e) => e.length >= 2, 'two STATUS via upgrade target');
  });

  it('a WSS upgrade naming a target that is not allowed (or is malformed) is refused at the upgrade', async () => {
    const headers = { authorization: `Bearer ${admin}` };
    const refusal = (await openWebSocket(a.restUrl, a.ca, ['svc-ws'], {
      ...headers,
      'x-target-host': stranger.address,
    }).catch((error: unknown) => error)) as { status?: number; body?: string };
    expect(refusal.status).toBe(403);
    expect(JSON.parse(refusal.body ?? '{}')).toMatchObject({ error: 'target_not_allowed' });
    const malformed = (await openWebSocket(a.restUrl, a.ca, ['svc-ws'], {
      ...headers,
      'x-target-host': 'no/such host',
    }).catch((error: unknown) => error)) as { status?: number; body?: string };
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body ?? '{}')).toMatchObject({ error: 'invalid_target_host' });
    expect(stranger.accepts()).toBe(0);
    // This node's own name is not a forward: the upgrade is accepted.
    const self = await openWebSocket(a.restUrl, a.ca, ['svc-ws'], { ...headers, 'x-target-host': 'node-a' });
    expect(self.selected).toBe('svc-ws');
    self.ws.terminate();
  });

  it.each([['tcp'], ['wss']] as const)(
    "over %s: a client disconnect removes the target's subscriptions",
    async (kind) => {
      // A witness on the target itself counts what one toggle pushes without the gateway's client.
      const direct = await b.tcp();
      const witness = {
        client: direct,
        id: (await subscribeVia(direct, 'node-b', 'only-there')).subscription_id,
      };
      const alone = await pushesPerToggle(b, 'only-there', witness);
      const gateway = await persistent(kind);
      const sub = await subscribeVia(gateway, B, 'only-there');
      expect(await pushesPerToggle(b, 'only-there', witness)).toBe(alone + 2);
      await gateway.close();
      await waitFor(async () => (await pushesPerToggle(b, 'only-there', witness)) === alone, {
        what: 'the target to drop the subscription',
      });
      expect(await goneFromTarget(b, sub.subscription_id)).toBe(true);
      await direct.close();
    },
  );

  it('a WSS frame whose bearer belongs to another principal is refused', async () => {
    const gateway = await a.wss(admin);
    const other = await a.token('developer');
    const before = recorder.accepts();
    const r = await gateway.call('GET', '/svc/applications', via(recorder.address, { token: other }));
    expect(r.status).toBe(401);
    expect(r.json()).toMatchObject({ error: 'invalid_token' });
    expect(recorder.accepts()).toBe(before);
  });

  it('a killed target: its route subscriptions get __disconnected__ with data.message', async () => {
    const tcp = await persistent('tcp');
    const wss = await persistent('wss');
    const onC = [await subscribeVia(tcp, C, 'only-there'), await subscribeVia(wss, C, 'only-there')];
    const dropped = await subscribeVia(tcp, C, 'only-there');
    const onB = await subscribeVia(tcp, B, 'only-there');
    ok(
      await tcp.call('DELETE', '/svc/subscribe', {
        ...via(C, { token: admin }),
        query: { subscription_id: dropped.subscription_id },
      }),
    );
    await toggle(c, 'only-there');
    await waitEvents(tcp, onC[0]!.subscription_id, (e) => e.length >= 2, 'events before the kill');
    await c.kill();
    const disconnected = (client: PersistentClient, id: string): Promise<EventMessage[]> =>
      waitEvents(
        client,
        id,
        (e) => e.some((m) => m.event_type === DISCONNECTED_EVENT),
        `__disconnected__ for ${id}`,
      );
    const tcpEvents = await disconnected(tcp, onC[0]!.subscription_id);
    await disconnected(wss, onC[1]!.subscription_id);
    const last = tcpEvents.at(-1)!;
    expect(last).toMatchObject({
      event_type: DISCONNECTED_EVENT,
      app_name: 'only-there',
      subscription_id: onC[0]!.subscription_id,
    });
    expect(typeof last.data['message']).toBe('string');
    expect(String(last.data['message'])).toContain(C);
    expectGapless(tcpEvents);
    const push = tcp.pushes.find(
      (p) => p.request_uri === EVENT_REQUEST_URI && message(p).event_type === DISCONNECTED_EVENT,
    )!;
    expect(push.headers).toMatchObject({
      'X-Subscription-Id': onC[0]!.subscription_id,
      'X-Event-Type': DISCONNECTED_EVENT,
      'X-App-Name': 'only-there',
    });
    // A round trip on the same connection: every push written before its answer has arrived.
    ok(await tcp.call('GET', '/svc/self', { token: admin }));
    expect(eventsOf(tcp, dropped.subscription_id)).toEqual([]); // unsubscribed: no longer routed
    expect(eventsOf(tcp, onB.subscription_id)).toEqual([]); // another route is unaffected
    // ...and still works: the client's own transport is up.
    await toggle(b, 'only-there');
    await waitEvents(tcp, onB.subscription_id, (e) => e.length >= 2, 'B events after C died');
    const down = await tcp.call('GET', '/svc/applications', via(C, { token: admin }));
    expect(down.status).toBe(502);
  });
});

it('the bearer used throughout never appears in the logs of the gateway or the targets', () => {
  expect(a.stderr()).toContain('forward target'); // the failures above were logged
  const [, payload, signature] = admin.split('.');
  for (const daemon of [a, b, c])
    for (const part of [admin, payload!, signature!]) expect(daemon.stderr()).not.toContain(part);
});
