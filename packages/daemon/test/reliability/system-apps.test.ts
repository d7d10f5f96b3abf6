// Issue 12 item 11: svc-identity killed with SIGTERM exited 0 and stayed down for good (health 0,
// enable refused, `wantRun: false` in the snapshot across svcd restarts), so no token could be
// issued or verified. Against a real svcd in builtin mode with the real svc-identity: a system app
// restarts whatever its exit, health says 1 while it is down, `enable` starts it at once from its
// restart backoff, and a snapshot that says "left down" does not keep it down across a restart.
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILTIN_MODE_ENV, type TestDaemon } from '@svc/testkit';
import { processAlive, trackDaemons, waitFor, type AppView } from '../robustness/helpers.ts';

const REPO = resolve(import.meta.dirname, '../../../..');
const SCOPE = 'openid audience:server:client_id:svc-api';
const { start } = trackDaemons();

const leftovers: number[] = [];
afterEach(() => {
  for (const pid of leftovers.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

async function startBuiltin(home?: string, issuerFrom?: TestDaemon): Promise<TestDaemon> {
  return start({
    env: { ...BUILTIN_MODE_ENV },
    ...(home === undefined
      ? { files: { 'apps/identity.yaml': await readFile(join(REPO, 'apps', 'identity.yaml'), 'utf8') } }
      : { home, issuer: issuerFrom!.issuer }),
  });
}

/** The built-in issuer's URL once svcd published its port. */
async function issuerUrl(daemon: TestDaemon): Promise<string> {
  return waitFor(
    async () => {
      const doc = (await daemon.rest().call('GET', '/svc/auth/config')).json<{ issuer: string }>();
      return /:0\/auth$/.test(doc.issuer) ? undefined : doc.issuer;
    },
    { what: 'the issuer port in /svc/auth/config', timeoutMs: 30_000, intervalMs: 50 },
  );
}

/** An admin access token from svc-identity (password grant), retried until it is up again. */
async function adminToken(daemon: TestDaemon): Promise<string> {
  const text = await readFile(join(daemon.workDir, 'auth', 'secrets', 'initial-admin-credentials'), 'utf8');
  const password = text
    .split('\n')
    .find((l) => l.startsWith('password='))!
    .slice('password='.length);
  return waitFor(
    async () => {
      const response = await fetch(`${await issuerUrl(daemon)}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('svc-cli:').toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'password', username: 'admin', password, scope: SCOPE }),
      });
      if (!response.ok) return undefined;
      return ((await response.json()) as { access_token: string }).access_token;
    },
    { what: 'a token from svc-identity', timeoutMs: 60_000, intervalMs: 100 },
  );
}

type IdentityView = AppView & {
  health: number;
  next_start_time?: string | number;
  last_start_time?: string | number;
};

/** An instant of the view (epoch seconds, or ISO 8601) in epoch ms. */
function ms(value: string | number | undefined): number {
  if (typeof value === 'number') return value * 1000;
  return value === undefined ? Number.NaN : Date.parse(value);
}

async function identity(daemon: TestDaemon, token: string): Promise<IdentityView> {
  const r = await daemon.rest().call('GET', '/svc/app/identity', { token });
  expect(r.status, r.text()).toBe(200);
  return r.json<IdentityView>();
}

/** SIGTERM the running identity process and wait until svcd recorded its exit. */
async function terminate(daemon: TestDaemon, token: string): Promise<IdentityView> {
  const before = await identity(daemon, token);
  expect(before.pid).toBeGreaterThan(0);
  leftovers.push(before.pid!);
  process.kill(before.pid!, 'SIGTERM');
  return waitFor(
    async () => {
      const app = await identity(daemon, token);
      return app.starts > before.starts || app.pid !== before.pid ? app : undefined;
    },
    { what: 'svcd to record the exit of identity', timeoutMs: 30_000, intervalMs: 20 },
  );
}

describe('system applications always restart (issue 12 item 11)', () => {
  it('svc-identity exiting 0 on SIGTERM restarts; tokens are issued and verified again', async () => {
    const daemon = await startBuiltin();
    const token = await adminToken(daemon);
    const first = await identity(daemon, token);
    expect(first).toMatchObject({ system: true, health: 0, state: 'running' });

    const after = await terminate(daemon, token);
    expect(after.return_code, 'svc-identity exits 0 on SIGTERM (the case that stayed down)').toBe(0);
    const running = await waitFor(
      async () => {
        const app = await identity(daemon, token);
        return app.state === 'running' && app.pid !== first.pid && processAlive(app.pid!) ? app : undefined;
      },
      { what: 'identity running again', timeoutMs: 30_000, intervalMs: 50 },
    );
    leftovers.push(running.pid!);
    // A token issued by the new process is verified by svcd.
    const fresh = await adminToken(daemon);
    const self = await daemon.rest().call('GET', '/svc/self', { token: fresh });
    expect(self.status, self.text()).toBe(200);
    expect(await waitFor(async () => ((await identity(daemon, fresh)).health === 0 ? true : undefined))).toBe(
      true,
    );
  });

  it('is unhealthy while in its restart backoff, and enable (svc-admin) starts it at once', async () => {
    const daemon = await startBuiltin();
    let token = await adminToken(daemon);
    // Quick exits in a row back off 0, 1 s, 2 s, 4 s…: exit until more than 2.5 s of it remain.
    let down: IdentityView | undefined;
    for (let i = 0; i < 6 && down === undefined; i++) {
      const app = await terminate(daemon, token);
      if (app.state === 'backoff' && ms(app.next_start_time) - Date.now() > 2500) down = app;
      else {
        await waitFor(async () => ((await identity(daemon, token)).state === 'running' ? true : undefined), {
          what: 'identity running again',
          timeoutMs: 30_000,
        });
        token = await adminToken(daemon);
      }
    }
    expect(down, 'identity reached a restart backoff of 4 s or more').toBeDefined();
    expect(down!.health, 'health of a system app that is down').toBe(1);
    const enabled = await daemon.rest().call('POST', '/svc/app/identity/enable', { token });
    expect(enabled.status, enabled.text()).toBe(200);
    const restarted = await identity(daemon, token);
    expect(restarted.starts).toBe(down!.starts + 1);
    expect(ms(restarted.last_start_time)).toBeLessThan(ms(down!.next_start_time));
    leftovers.push(restarted.pid!);
    // Disable stays refused (the roles of enable: the last describe).
    const disable = await daemon.rest().call('POST', '/svc/app/identity/disable', { token });
    expect(disable.status).toBe(403);
  }, 120_000);

  it('a snapshot that says "left down" does not keep it down across an svcd restart', async () => {
    const daemon = await startBuiltin();
    const token = await adminToken(daemon);
    const pid = (await identity(daemon, token)).pid!;
    leftovers.push(pid);
    await daemon.stop();
    // What an older svcd wrote after identity exited 0: no process, wantRun false, not crashed.
    process.kill(-pid, 'SIGKILL');
    await waitFor(() => !processAlive(pid), { what: 'identity gone' });
    const file = join(daemon.workDir, '.snapshot');
    const snapshot = JSON.parse(await readFile(file, 'utf8')) as {
      processes: { app: string }[];
      apps: Record<string, { wantRun: boolean; crashed: boolean }>;
    };
    snapshot.processes = snapshot.processes.filter((p) => p.app !== 'identity');
    snapshot.apps['identity'] = { ...snapshot.apps['identity']!, wantRun: false, crashed: false };
    await writeFile(file, JSON.stringify(snapshot), { mode: 0o600 });

    const again = await startBuiltin(daemon.home, daemon);
    const next = await adminToken(again); // issued by a running svc-identity
    const app = await identity(again, next);
    expect(app.state).toBe('running');
    expect(app.pid).not.toBe(pid);
    leftovers.push(app.pid!);
  });
});

describe('POST /svc/app/{system app}/enable by role', () => {
  it('svc-admin 200 (running: unchanged); maintenance 404 (system apps are invisible to it); viewer 403 (no app-control, whatever the name); no token 401', async () => {
    const daemon = await start({
      files: { 'apps/sysapp.yaml': 'name: sysapp\ncommand: sleep 600\nsystem: true\n' },
    });
    const rest = daemon.rest();
    const admin = await daemon.token('admin');
    const running = await waitFor(
      async () => {
        const app = (await rest.call('GET', '/svc/app/sysapp', { token: admin })).json<AppView>();
        return app.pid !== undefined && processAlive(app.pid) ? app : undefined;
      },
      { what: 'sysapp running', timeoutMs: 15_000 },
    );
    leftovers.push(running.pid!);
    const expected: [string | undefined, number][] = [
      [admin, 200],
      [await daemon.token('maintenance'), 404],
      // A viewer lacks app-control: 403 for every name, existing, system or missing alike, so it
      // learns nothing either (spec/contract.md §6, auth/access-rules.ts).
      [await daemon.token('viewer'), 403],
      [await daemon.token('nobody'), 403],
      [undefined, 401],
    ];
    for (const [token, status] of expected) {
      const r = await rest.call('POST', '/svc/app/sysapp/enable', token === undefined ? {} : { token });
      expect(r.status, r.text()).toBe(status);
    }
    const after = (await rest.call('GET', '/svc/app/sysapp', { token: admin })).json<AppView>();
    expect(after.pid).toBe(running.pid);
    expect(after.starts).toBe(running.starts);
  });
});
