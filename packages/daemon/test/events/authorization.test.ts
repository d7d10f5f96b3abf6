// Who may subscribe to what, and which events a subscriber receives (CONTRACT §6, authorizer.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { expectGapless, ok, stdoutText, subscribe, waitEvents } from './helpers.ts';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
  const rest = daemon.rest();
  // watcher: may subscribe and see every app, but read no output (no app-output-view).
  ok(await rest.call('POST', '/svc/role/watcher', { token: admin, body: ['app-subscribe', 'app-view-all'] }));
  ok(await rest.call('POST', '/svc/principal/test-watcher', { token: admin, body: { roles: ['watcher'] } }));
  // reader: sees every app, reads the output of its own apps only (no app-manage-all).
  ok(
    await rest.call('POST', '/svc/role/reader', {
      token: admin,
      body: ['app-subscribe', 'app-view-all', 'app-output-view', 'app-reg', 'app-control'],
    }),
  );
  ok(await rest.call('POST', '/svc/principal/test-reader', { token: admin, body: { roles: ['reader'] } }));
});
afterAll(async () => {
  await daemon?.close();
});

const mint = (sub: string): Promise<string> => daemon.issuer.mint({ sub });

describe('subscribe permissions', () => {
  it('a principal without app-subscribe gets 403; per-app needs the app to be its own without app-view-all (404 otherwise)', async () => {
    ok(await daemon.rest().call('PUT', '/svc/app/admins', { token: admin, body: { command: 'sleep 600' } }));
    const viewer = await daemon.token('viewer'); // svc-viewer has no app-subscribe
    const c1 = await daemon.tcp();
    expect((await c1.call('POST', '/svc/app/admins/subscribe', { token: viewer })).status).toBe(403);
    expect((await c1.call('POST', '/svc/subscribe', { token: viewer })).status).toBe(403);
    const reg = await c1.call('PUT', '/svc/app/v-app', {
      token: viewer,
      query: { subscribe_events: '' },
      body: { command: 'true' },
    });
    expect(reg.status).toBe(403);
    const developer = await daemon.token('developer'); // app-subscribe, app-view: own apps only
    const c2 = await daemon.tcp();
    // the admin's private app is not one the developer sees: as if it did not exist
    expect((await c2.call('POST', '/svc/app/admins/subscribe', { token: developer })).status).toBe(404);
    expect((await c2.call('POST', '/svc/subscribe', { token: developer })).status).toBe(403); // no app-view-all
    ok(await c2.call('PUT', '/svc/app/devs', { token: developer, body: { command: 'sleep 600' } }));
    expect((await subscribe(c2, developer, 'devs', 'STATUS,STDOUT')).events).toEqual(['STDOUT', 'STATUS']);
    await c1.close();
    await c2.close();
  });

  it('a watcher subscribes to STATUS of any app; STDOUT by name is 403 and is left out of ALL', async () => {
    const watcher = await mint('test-watcher');
    const client = await daemon.wss(watcher);
    const status = await subscribe(client, watcher, 'admins', 'STATUS');
    const refused = await client.call('POST', '/svc/app/admins/subscribe', {
      token: watcher,
      query: { events: 'STDOUT' },
    });
    expect(refused.status).toBe(403);
    const all = await subscribe(client, watcher, 'admins', 'ALL');
    expect(all.events).toEqual(['START', 'EXIT', 'HEALTH', 'STATUS', 'REMOVED']);
    ok(await daemon.rest().call('POST', '/svc/app/admins/disable', { token: admin }));
    const events = await waitEvents(client, status.subscription_id, (e) => e.length === 1, 'STATUS');
    expect(events[0]!.data).toEqual({ enabled: false, previous_enabled: true });
    ok(await daemon.rest().call('POST', '/svc/app/admins/enable', { token: admin }));
    const allEvents = await waitEvents(
      client,
      all.subscription_id,
      (e) => e.some((x) => x.event_type === 'START'),
      'START',
    );
    expect(allEvents.some((e) => e.event_type === 'STDOUT')).toBe(false);
    await client.close();
  });

  it('a wildcard STDOUT subscriber gets the output only of the apps it may read', async () => {
    const reader = await mint('test-reader');
    const client = await daemon.tcp();
    const sub = await subscribe(client, reader, undefined, 'STDOUT,EXIT');
    ok(
      await client.call('PUT', '/svc/app/readers', {
        token: reader,
        body: { command: 'echo mine', shell: true },
      }),
    );
    ok(
      await daemon
        .rest()
        .call('PUT', '/svc/app/secret', { token: admin, body: { command: 'echo theirs', shell: true } }),
    );
    const events = await waitEvents(
      client,
      sub.subscription_id,
      (e) => ['readers', 'secret'].every((n) => e.some((x) => x.app_name === n && x.event_type === 'EXIT')),
      'both EXITs',
    );
    expectGapless(events);
    expect(stdoutText(events.filter((e) => e.app_name === 'readers'))).toBe('mine\n');
    expect(events.filter((e) => e.app_name === 'secret').map((e) => e.event_type)).toEqual(['EXIT']);
    await client.close();
  });
});
