// Subscriptions over raw TCP and WSS against a real daemon: the push message, the lifecycle
// (unsubscribe by owner only, removal on disconnect and on app deletion), 405 over plain HTTP,
// the events syntax, STATUS/START/EXIT emission, and 10,000 events gapless on one subscription.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_REQUEST_URI } from '@svc/protocol';
import { startTestDaemon, type PersistentClient, type TestDaemon } from '@svc/testkit';
import { eventsOf, expectGapless, ok, stdoutText, subscribe, waitEvents } from './helpers.ts';

let daemon: TestDaemon;
let admin: string;
const FUTURE = new Date(Date.now() + 365 * 24 * 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z'); // enabled, but not started before this instant

beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
  // A long-running app, and one that is enabled but never started (STATUS events without spawns).
  ok(await daemon.rest().call('PUT', '/svc/app/sleeper', { token: admin, body: { command: 'sleep 600' } }));
  ok(
    await daemon
      .rest()
      .call('PUT', '/svc/app/idle', { token: admin, body: { command: 'sleep 600', start_time: FUTURE } }),
  );
});
afterAll(async () => {
  await daemon?.close();
});

const transports: ['tcp' | 'wss'][] = [['tcp'], ['wss']];

async function connect(kind: 'tcp' | 'wss'): Promise<PersistentClient> {
  return kind === 'tcp' ? daemon.tcp() : daemon.wss(admin);
}

describe.each(transports)('over %s', (kind) => {
  it('subscribes and pushes STATUS events as Response messages with the spec headers', async () => {
    const client = await connect(kind);
    const sub = await subscribe(client, admin, 'idle', 'STATUS');
    expect(sub.subscription_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(sub).toMatchObject({ app_name: 'idle', events: ['STATUS'] });
    ok(await client.call('POST', '/svc/app/idle/disable', { token: admin }));
    ok(await client.call('POST', '/svc/app/idle/enable', { token: admin }));
    const events = await waitEvents(client, sub.subscription_id, (e) => e.length >= 2, 'two STATUS events');
    expect(events.map((e) => e.data)).toEqual([
      { enabled: false, previous_enabled: true },
      { enabled: true, previous_enabled: false },
    ]);
    expectGapless(events);
    for (const e of events) {
      expect(e).toMatchObject({
        event_type: 'STATUS',
        app_name: 'idle',
        subscription_id: sub.subscription_id,
      });
      expect(Math.abs(e.timestamp - Date.now())).toBeLessThan(60_000); // epoch milliseconds
    }
    const pushes = client.pushes.filter((p) => p.request_uri === EVENT_REQUEST_URI);
    const uuids = new Set(pushes.map((p) => p.uuid));
    expect(uuids.size).toBe(pushes.length); // a fresh uuid per push
    for (const push of pushes) {
      expect(push.http_status).toBe(200);
      expect(push.body_msg_type).toBe('application/json');
      expect(push.headers).toEqual({
        'X-Subscription-Id': sub.subscription_id,
        'X-Event-Type': 'STATUS',
        'X-App-Name': 'idle',
      });
    }
    await client.close();
  });

  it('needs app-view-all for all applications; answers app_name "*" and the events in spec order', async () => {
    const client = await connect(kind);
    const sub = await subscribe(client, admin, undefined, 'exit, status,START');
    expect(sub).toMatchObject({ app_name: '*', events: ['START', 'EXIT', 'STATUS'] });
    const all = await subscribe(client, admin, 'sleeper', '');
    expect(all.events).toEqual(['START', 'EXIT', 'STDOUT', 'HEALTH', 'STATUS', 'REMOVED']);
    expect((await subscribe(client, admin, 'sleeper', 'ALL')).events).toEqual(all.events);
    await client.close();
  });

  it('refuses an unknown event name (400 invalid_query), an unknown app (404), a missing id (400)', async () => {
    const client = await connect(kind);
    const bad = await client.call('POST', '/svc/app/sleeper/subscribe', {
      token: admin,
      query: { events: 'START,BOOT' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid_query' });
    expect(bad.json<{ message: string }>().message).toContain('BOOT');
    const badAll = await client.call('POST', '/svc/subscribe', { token: admin, query: { events: 'NOPE' } });
    expect(badAll.status).toBe(400);
    const missing = await client.call('POST', '/svc/app/no-such-app/subscribe', { token: admin });
    expect(missing.status).toBe(404);
    const noId = await client.call('DELETE', '/svc/app/sleeper/subscribe', { token: admin });
    expect(noId.status).toBe(400);
    const unknown = await client.call('DELETE', '/svc/app/sleeper/subscribe', {
      token: admin,
      query: { subscription_id: 'f00' },
    });
    expect(unknown.status).toBe(404);
    await client.close();
  });

  it('unsubscribe: the owner only; afterwards no more events', async () => {
    const client = await connect(kind);
    const sub = await subscribe(client, admin, 'idle', 'STATUS');
    // Another principal (with app-subscribe) on its own connection finds no such subscription.
    const developer = await daemon.token('developer');
    const other = await daemon.tcp();
    const refused = await other.call('DELETE', '/svc/app/idle/subscribe', {
      token: developer,
      query: { subscription_id: sub.subscription_id },
    });
    expect(refused.status).toBe(404);
    const wrongApp = await client.call('DELETE', '/svc/app/sleeper/subscribe', {
      token: admin,
      query: { subscription_id: sub.subscription_id },
    });
    expect(wrongApp.status).toBe(404);
    const removed = ok(
      await client.call('DELETE', '/svc/app/idle/subscribe', {
        token: admin,
        query: { subscription_id: sub.subscription_id },
      }),
    );
    expect(removed.json()).toEqual({ subscription_id: sub.subscription_id, app_name: 'idle', removed: true });
    // A marker subscription created after the toggle proves the toggle's event was dispatched.
    ok(await client.call('POST', '/svc/app/idle/disable', { token: admin }));
    const marker = await subscribe(client, admin, 'idle', 'STATUS');
    ok(await client.call('POST', '/svc/app/idle/enable', { token: admin }));
    await waitEvents(client, marker.subscription_id, (e) => e.length === 1, 'the marker event');
    expect(eventsOf(client, sub.subscription_id)).toEqual([]);
    const again = await client.call('DELETE', '/svc/app/idle/subscribe', {
      token: admin,
      query: { subscription_id: sub.subscription_id },
    });
    expect(again.status).toBe(404);
    await other.close();
    await client.close();
  });

  it('subscriptions vanish when their connection closes', async () => {
    const client = await connect(kind);
    const sub = await subscribe(client, admin, 'idle', 'STATUS');
    const wildcard = await subscribe(client, admin, undefined, 'STATUS');
    await client.close();
    const other = await connect(kind);
    for (const id of [sub.subscription_id, wildcard.subscription_id]) {
      const gone = await other.call('DELETE', '/svc/subscribe', {
        token: admin,
        query: { subscription_id: id },
      });
      expect(gone.status, gone.text()).toBe(404);
    }
    await other.close();
  });
});

describe('plain HTTP', () => {
  it('answers 405 persistent_connection_required to every subscribe form', async () => {
    const rest = daemon.rest();
    for (const [method, path, query] of [
      ['POST', '/svc/app/sleeper/subscribe', {}],
      ['POST', '/svc/subscribe', { events: 'STDOUT' }],
      ['DELETE', '/svc/app/sleeper/subscribe', { subscription_id: 'x' }],
      ['DELETE', '/svc/subscribe', { subscription_id: 'x' }],
    ] as const) {
      const r = await rest.call(method, path, { token: admin, query });
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.json()).toMatchObject({ error: 'persistent_connection_required' });
    }
    const register = await rest.call('PUT', '/svc/app/rest-sub', {
      token: admin,
      query: { subscribe_events: 'ALL' },
      body: { command: 'true' },
    });
    expect(register.status).toBe(405);
    // Nothing was registered.
    expect((await rest.call('GET', '/svc/app/rest-sub', { token: admin })).status).toBe(404);
  });
});

describe('emission', () => {
  it('START then EXIT with their fields; HEALTH not repeated; REMOVED first, then the purge', async () => {
    const client = await daemon.tcp();
    const reg = ok(
      await client.call('PUT', '/svc/app/lifecycle', {
        token: admin,
        query: { subscribe_events: 'START,EXIT,STATUS,REMOVED,HEALTH' },
        body: { command: 'sleep 600' },
      }),
    );
    const app = reg.json<{ subscription_id: string; process_uuid: string; pid: number }>();
    expect(app.subscription_id).toEqual(expect.any(String));
    const wildcard = await subscribe(client, admin, undefined, 'REMOVED,EXIT');
    await waitEvents(client, app.subscription_id, (e) => e.length >= 1, 'START');
    ok(await client.call('POST', '/svc/app/lifecycle/disable', { token: admin }));
    const removal = ok(await client.call('DELETE', '/svc/app/lifecycle', { token: admin }));
    expect(removal.json()).toMatchObject({ removed: true });
    const events = await waitEvents(
      client,
      app.subscription_id,
      (e) => e.some((x) => x.event_type === 'REMOVED'),
      'REMOVED',
    );
    expect(events.map((e) => e.event_type)).toEqual(['START', 'STATUS', 'EXIT', 'REMOVED']);
    expectGapless(events);
    expect(events[0]!.data).toEqual({ pid: app.pid, process_uuid: app.process_uuid });
    expect(events[1]!.data).toEqual({ enabled: false, previous_enabled: true });
    expect(events[2]!.data).toMatchObject({ pid: app.pid });
    expect(typeof events[2]!.data['exit_code']).toBe('number');
    expect(events[2]!.data).toHaveProperty('last_error');
    expect(events[3]!.data).toEqual({});
    // The per-app subscription was purged with the app; the wildcard one stays.
    const gone = await client.call('DELETE', '/svc/subscribe', {
      token: admin,
      query: { subscription_id: app.subscription_id },
    });
    expect(gone.status).toBe(404);
    const wild = await waitEvents(
      client,
      wildcard.subscription_id,
      (e) => e.length >= 2,
      'wildcard EXIT, REMOVED',
    );
    expect(wild.map((e) => `${e.event_type}:${e.app_name}`)).toEqual(['EXIT:lifecycle', 'REMOVED:lifecycle']);
    // A new app of the same name does not reach the purged subscription.
    ok(await client.call('PUT', '/svc/app/lifecycle', { token: admin, body: { command: 'sleep 600' } }));
    const marker = await subscribe(client, admin, 'lifecycle', 'STATUS');
    ok(await client.call('POST', '/svc/app/lifecycle/disable', { token: admin }));
    await waitEvents(client, marker.subscription_id, (e) => e.length === 1, 'marker STATUS');
    expect(eventsOf(client, app.subscription_id)).toHaveLength(4);
    ok(await client.call('DELETE', '/svc/app/lifecycle', { token: admin }));
    await client.close();
  });

  it('10,000 events on one subscription arrive gapless and in order', async () => {
    const client = await daemon.tcp();
    // One subscription to every application gets the STDOUT of a process printing 14,000 lines
    // (one write every 0.2 ms, so most lines are events of their own), then STATUS events of 20
    // apps toggled in parallel until at least 10,000 events arrived.
    const sub = await subscribe(client, admin, undefined, 'STATUS,STDOUT,EXIT');
    const apps = Array.from({ length: 20 }, (_, i) => `toggle-${i}`);
    for (const name of apps)
      ok(
        await client.call('PUT', `/svc/app/${name}`, {
          token: admin,
          body: { command: 'true', start_time: FUTURE },
        }),
      );
    const lines = 14_000;
    const script = `const s=new Int32Array(new SharedArrayBuffer(4));for(let i=0;i<${lines};i++){require('fs').writeSync(1,'line '+i+'\\n');Atomics.wait(s,0,0,0.2)}`;
    ok(
      await client.call('PUT', '/svc/app/printer', {
        token: admin,
        body: { command: `'${process.execPath}' -e "${script}"`, shell: true },
      }),
    );
    await waitEvents(
      client,
      sub.subscription_id,
      (e) => e.some((x) => x.event_type === 'EXIT'),
      "the printer's EXIT",
    );
    const target = 10_000;
    const toggled = new Map(apps.map((name) => [name, 0]));
    let count = eventsOf(client, sub.subscription_id).length;
    while (count < target) {
      const batch = Math.min(apps.length, target - count);
      await Promise.all(
        apps.slice(0, batch).map(async (name) => {
          const i = toggled.get(name)!;
          toggled.set(name, i + 1);
          ok(
            await client.call('POST', `/svc/app/${name}/${i % 2 === 0 ? 'disable' : 'enable'}`, {
              token: admin,
            }),
          );
        }),
      );
      count += batch;
    }
    const statusCount = [...toggled.values()].reduce((a, b) => a + b, 0);
    const events = await waitEvents(
      client,
      sub.subscription_id,
      (e) => e.filter((x) => x.event_type === 'STATUS').length >= statusCount,
      `${statusCount} STATUS events`,
      30_000,
    );
    expect(events.length).toBeGreaterThanOrEqual(target);
    expectGapless(events);
    // Per app, the toggles arrive in the order they were made.
    for (const name of apps) {
      const of = events.filter((e) => e.app_name === name);
      expect(of).toHaveLength(toggled.get(name)!);
      of.forEach((e, i) => expect(e.data['enabled']).toBe(i % 2 === 1));
    }
    const printed = events.filter((e) => e.app_name === 'printer');
    const expectedText = Array.from({ length: lines }, (_, i) => `line ${i}\n`).join('');
    expect(stdoutText(printed)).toBe(expectedText);
    expect(printed.at(-1)!.event_type).toBe('EXIT');
    expect(printed.at(-2)!.data).toMatchObject({
      finished: true,
      output: '',
      position: Buffer.byteLength(expectedText),
    });
    console.log(`10,000-event test: ${printed.length - 2} STDOUT chunks, ${statusCount} STATUS events`);
    await client.close();
  });
});
