// Attack row L2 (issue 25): the role matrix answered an application the caller may not see with
// 403 "…owned by another principal" (confirming it exists), and a caller without the permission
// got 403 for an existing application but 404 for a missing one (an existence oracle); DELETE by
// maintenance or viewer was reported as 404 where 403 was due. The rule now, on a real svcd over
// REST and TCP: (1) without the operation's permission, 403 whatever the name; (2) an application
// the caller does not see (another principal's private app, a system app) is 404 app_not_found,
// word for word a missing one's; (3) on an application it sees, 403 when it may not act on it.
// Another principal's subscription is 404 like an unknown one; registering over a name the caller
// cannot see is 403 without a word about its owner. The whole matrix (every operation × role) is
// packages/daemon/test/api/authorization.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTestDaemon,
  type ApiClient,
  type CallResult,
  type PersistentClient,
  type TestDaemon,
  type TestRole,
} from '@svc/testkit';

const SYSTEM_APP = 'l2-sys';
const ADMIN_PRIVATE = 'l2-admin-private';
const DEV_APP = 'l2-dev';
const MISSING = 'l2-nobody-registered-this';

let daemon: TestDaemon;
const tokens = new Map<TestRole, string>();
const tcp = new Map<TestRole, PersistentClient>();

beforeAll(async () => {
  daemon = await startTestDaemon({
    files: { [`apps/${SYSTEM_APP}.yaml`]: `name: ${SYSTEM_APP}\ncommand: sleep 600\nsystem: true\n` },
  });
  for (const role of ['admin', 'viewer', 'maintenance', 'nobody', 'developer'] as const) {
    tokens.set(role, await daemon.token(role));
    tcp.set(role, await daemon.tcp());
  }
  for (const [name, role] of [
    [ADMIN_PRIVATE, 'admin'],
    [DEV_APP, 'developer'],
  ] as const) {
    const r = await daemon.rest().call('PUT', `/svc/app/${name}`, {
      token: tokens.get(role),
      body: { command: 'sleep 600', permission: 11 },
    });
    expect(r.status, r.text()).toBe(200);
  }
});
afterAll(async () => {
  for (const client of tcp.values()) await client.close();
  await daemon?.close();
});

const transports = (role: TestRole): [string, ApiClient][] => [
  ['rest', daemon.rest()],
  ['tcp', tcp.get(role)!],
];

/** What an answer tells about `name`, the echoed name aside. */
function seen(name: string, r: CallResult): { status: number; body: unknown } {
  return { status: r.status, body: JSON.parse(r.text().replaceAll(name, '<name>')) as unknown };
}

/**
 * Per-application operations a caller may be refused: method, path of an app, whether the body
 * names the app (a run of a copy), whether the developer holds the permission.
 */
const OPERATIONS: [string, (name: string) => string, 'copy' | undefined, boolean][] = [
  ['GET', (n) => `/svc/app/${n}`, undefined, true],
  ['DELETE', (n) => `/svc/app/${n}`, undefined, true],
  ['POST', (n) => `/svc/app/${n}/enable`, undefined, true],
  ['POST', (n) => `/svc/app/${n}/disable`, undefined, true],
  ['GET', (n) => `/svc/app/${n}/output`, undefined, true],
  ['DELETE', (n) => `/svc/app/${n}/task`, undefined, false], // app-run-task
  ['POST', (n) => `/svc/app/${n}/subscribe`, undefined, true], // over TCP (REST: 405 for every name)
  ['POST', () => '/svc/app/run', 'copy', true],
];

async function ask(client: ApiClient, role: TestRole, op: (typeof OPERATIONS)[number], name: string) {
  const [method, path, body] = op;
  return client.call(method, path(name), {
    token: tokens.get(role),
    ...(body === 'copy' ? { body: { name } } : {}),
  });
}

describe('L2: one rule for 403 and 404', () => {
  it('DELETE of an app maintenance and viewer see is 403, never 404', async () => {
    for (const role of ['maintenance', 'viewer'] as const)
      for (const [transport, client] of transports(role))
        for (const name of [ADMIN_PRIVATE, DEV_APP]) {
          const r = await client.call('DELETE', `/svc/app/${name}`, { token: tokens.get(role) });
          expect(r.status, `${role} ${transport} ${name}`).toBe(403);
          expect(r.json<{ error: string }>().error).toBe('forbidden');
        }
  });

  it('an app the caller does not see is answered exactly as a missing one, by every operation', async () => {
    // developer: app-view, app-control, app-delete, app-output-view, app-subscribe, app-run-async and
    // -sync, no app-view-all: it sees neither the admin's private app nor the system app.
    for (const [transport, client] of transports('developer'))
      for (const op of OPERATIONS) {
        const missing = seen(MISSING, await ask(client, 'developer', op, MISSING));
        const label = `${op[0]} ${op[1]('…')} over ${transport}`;
        if (op[3] && !(transport === 'rest' && op[1]('x').endsWith('/subscribe')))
          expect(missing, label).toEqual({
            status: 404,
            body: { error: 'app_not_found', message: 'no application named <name>' },
          });
        for (const name of [ADMIN_PRIVATE, SYSTEM_APP])
          expect(seen(name, await ask(client, 'developer', op, name)), `${label} ${name}`).toEqual(missing);
      }
  });

  it('without the permission, every name gets the same 403', async () => {
    // nobody holds no permission; viewer lacks app-control, app-run-task, app-subscribe, app-run-*
    const lacking: Record<'nobody' | 'viewer', (path: string) => boolean> = {
      nobody: (path) => path !== '/svc/app/x', // DELETE aside: an owner needs no app-delete
      viewer: (path) => /\/(enable|disable|task|subscribe|run)$/.test(path),
    };
    for (const role of ['nobody', 'viewer'] as const)
      for (const [transport, client] of transports(role))
        for (const op of OPERATIONS) {
          const path = op[1]('x');
          if (!lacking[role](path) || (op[0] === 'DELETE' && path === '/svc/app/x')) continue;
          if (transport === 'rest' && path.endsWith('/subscribe')) continue; // 405 for every name
          const label = `${role} ${op[0]} ${op[1]('…')} over ${transport}`;
          const missing = seen(MISSING, await ask(client, role, op, MISSING));
          expect(missing.status, label).toBe(403);
          for (const name of [ADMIN_PRIVATE, DEV_APP, SYSTEM_APP])
            expect(seen(name, await ask(client, role, op, name)), `${label} ${name}`).toEqual(missing);
        }
  });

  it('registering over a name the caller cannot see is 403 and says nothing of the owner', async () => {
    for (const name of [ADMIN_PRIVATE, SYSTEM_APP]) {
      const r = await daemon.rest().call('PUT', `/svc/app/${name}`, {
        token: tokens.get('developer'),
        body: { command: 'sleep 1' },
      });
      expect(r.status, name).toBe(403);
      expect(r.json()).toEqual({
        error: 'forbidden',
        message: `the application name ${name} is not available to this principal`,
      });
    }
  });

  it("another principal's subscription is as unknown as a made-up id", async () => {
    const created = await tcp.get('admin')!.call('POST', `/svc/app/${DEV_APP}/subscribe`, {
      token: tokens.get('admin'),
    });
    expect(created.status, created.text()).toBe(200);
    const id = created.json<{ subscription_id: string }>().subscription_id;
    const made = 'c0ffee00-0000-4000-8000-000000000000';
    for (const path of ['/svc/subscribe', `/svc/app/${DEV_APP}/subscribe`]) {
      const client = tcp.get('developer')!;
      const theirs = await client.call('DELETE', path, {
        token: tokens.get('developer'),
        query: { subscription_id: id },
      });
      const unknown = await client.call('DELETE', path, {
        token: tokens.get('developer'),
        query: { subscription_id: made },
      });
      expect(seen(id, theirs), path).toEqual(seen(made, unknown));
      expect(theirs.status).toBe(404);
    }
  });
});
