// svcd with svc-spawner (real daemons, real processes): exact exit codes, also of a process that
// exited while svcd was down (with and without the snapshot), and what happens when the spawner is
// SIGKILLed, and when both are.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnerPid, type TestDaemon } from '@svc/testkit';
import {
  getApp,
  killGroup,
  ok,
  processAlive,
  serverLog,
  trackDaemons,
  waitFor,
  waitRunning,
  type AppView,
} from '../robustness/helpers.ts';

const { start, orphans } = trackDaemons();
let goFiles: string[] = [];
afterEach(() => {
  for (const file of goFiles) rmSync(file, { force: true });
  goFiles = [];
});

interface Resources {
  process_spawner: { kind: string; pid?: number; reason?: string };
}

async function spawnerOf(daemon: TestDaemon): Promise<Resources['process_spawner']> {
  const token = await daemon.token('admin');
  return ok<Resources>(await daemon.rest().call('GET', '/svc/resources', { token }), 'resources')
    .process_spawner;
}

async function register(daemon: TestDaemon, name: string, body: Record<string, unknown>): Promise<AppView> {
  const token = await daemon.token('admin');
  return ok<AppView>(
    await daemon.rest().call('PUT', `/svc/app/${name}`, { token, body }),
    `register ${name}`,
  );
}

/** A command that runs until `file` exists, then exits with `code` (the test decides when). */
function untilFile(daemon: TestDaemon, code: number): { command: string; go: () => void } {
  const file = join(daemon.home, `go-${Math.random().toString(36).slice(2)}`);
  goFiles.push(file);
  return {
    command: `echo started; while [ ! -e ${file} ]; do sleep 0.02; done; echo ending; exit ${code}`,
    go: () => writeFileSync(file, ''),
  };
}

async function waitStopped(daemon: TestDaemon, name: string): Promise<AppView> {
  return waitFor(
    async () => {
      const app = await getApp(daemon, name);
      return app.state === 'stopped' && app.pid === undefined ? app : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 20, what: `${name} to be stopped` },
  );
}

async function exitHeader(daemon: TestDaemon, name: string): Promise<string | undefined> {
  const token = await daemon.token('admin');
  const r = await daemon.rest().call('GET', `/svc/app/${name}/output`, { token });
  expect(r.status, r.text()).toBe(200);
  const code: unknown = r.headers['x-exit-code'];
  return typeof code === 'string' ? code : undefined;
}

/** The home's svc-spawner pid (work/run/spawner.pid); the test fails if the daemon has none. */
function mustSpawnerPid(daemon: TestDaemon): number {
  const pid = spawnerPid(daemon.workDir);
  if (pid === undefined) throw new Error(`no svc-spawner pid file in ${daemon.workDir}/run`);
  return pid;
}

describe('svcd with svc-spawner', () => {
  it('reports exact exit codes, signals, spawn errors and feeds metadata to stdin', async () => {
    const daemon = await start();
    const spawner = await spawnerOf(daemon);
    expect(spawner.kind).toBe('native');
    expect(spawner.pid).toBe(spawnerPid(daemon.workDir));
    expect(await serverLog(daemon)).toMatch(/processes are spawned by svc-spawner/);
    await register(daemon, 'three', { command: 'exit 3', shell: true, behavior: { exit: 'standby' } });
    expect((await waitStopped(daemon, 'three')).return_code).toBe(3);
    expect(await exitHeader(daemon, 'three')).toBe('3');
    await register(daemon, 'meta', {
      command: 'cat',
      metadata: 'hello from metadata',
      behavior: { exit: 'standby' },
    });
    expect((await waitStopped(daemon, 'meta')).return_code).toBe(0);
    const token = await daemon.token('admin');
    expect((await daemon.rest().call('GET', '/svc/app/meta/output', { token })).text()).toBe(
      'hello from metadata',
    );
    await register(daemon, 'missing', { command: 'no-such-command-x', behavior: { exit: 'standby' } });
    const missing = await waitStopped(daemon, 'missing');
    expect(missing.return_code).toBe(127);
    expect(missing['last_error']).toMatch(/spawn failed: spawn no-such-command-x ENOENT/);
    const sleeper = await register(daemon, 'sleeper', { command: 'sleep 600' });
    expect(sleeper.pid).toBeGreaterThan(0);
    ok(await daemon.rest().call('POST', '/svc/app/sleeper/disable', { token }), 'disable');
    expect(processAlive(sleeper.pid!)).toBe(false);
    expect((await getApp(daemon, 'sleeper')).return_code).toBe(-15);
  });

  it('svcd SIGKILLed, the app exits with 7 while svcd is down: the restarted svcd reports 7', async () => {
    const first = await start();
    const gate = untilFile(first, 7);
    const app = await register(first, 'seven', {
      command: gate.command,
      shell: true,
      behavior: { exit: 'standby' },
    });
    await waitRunning(first, 'seven');
    const spawnerProcess = mustSpawnerPid(first);
    await first.kill();
    gate.go();
    await waitFor(() => !processAlive(app.pid!), {
      timeoutMs: 15_000,
      what: 'the app to exit while svcd is down',
    });
    // Reaped (no zombie left), so the spawner's exit time is before this instant.
    await waitFor(() => !existsSync(`/proc/${app.pid}`), { timeoutMs: 15_000, what: 'the app reaped' });
    const gone = Date.now();
    const second = await start({ home: first.home, issuer: first.issuer });
    expect((await spawnerOf(second)).pid).toBe(spawnerProcess); // the same spawner, which held the exit
    const after = await waitStopped(second, 'seven');
    expect(after.return_code).toBe(7);
    // Dated when the spawner reaped it (while svcd was down), not when svcd learned of it.
    expect(after['last_exit_time'] as number).toBeLessThanOrEqual(Math.floor(gone / 1000));
    expect(after['last_error']).toBeUndefined();
    expect(after.starts).toBe(1); // recorded, not started again (standby)
    expect(await exitHeader(second, 'seven')).toBe('7');
    // Acknowledged once recorded: a third daemon does not report it again (nothing duplicated).
    await second.stop();
    const third = await start({ home: first.home, issuer: first.issuer });
    const again = await getApp(third, 'seven');
    expect(again.return_code).toBe(7);
    expect(again.starts).toBe(1);
  });

  it('the snapshot lost as well: the spawner tag still attributes the exit (code 7, one start)', async () => {
    const first = await start();
    const gate = untilFile(first, 7);
    const app = await register(first, 'lost', {
      command: gate.command,
      shell: true,
      behavior: { exit: 'standby' },
    });
    await waitRunning(first, 'lost');
    await first.kill();
    rmSync(join(first.workDir, '.snapshot'), { force: true });
    gate.go();
    await waitFor(() => !processAlive(app.pid!), {
      timeoutMs: 15_000,
      what: 'the app to exit while svcd is down',
    });
    const second = await start({ home: first.home, issuer: first.issuer });
    const after = await waitStopped(second, 'lost');
    expect(after.return_code).toBe(7);
    expect(after.starts).toBe(1);
    expect(after.process_uuid).toBe(app.process_uuid);
  });

  it('svc-spawner SIGKILLed: svcd keeps supervising (exit polled, code unknown) and starts a new spawner', async () => {
    const daemon = await start();
    const gate = untilFile(daemon, 7);
    const app = await register(daemon, 'survivor', {
      command: gate.command,
      shell: true,
      behavior: { exit: 'standby' },
    });
    orphans.push(app.pid!); // reparented away from the dead spawner: killed after the test if left
    const old = mustSpawnerPid(daemon);
    process.kill(old, 'SIGKILL');
    const fresh = await waitFor(
      async () => {
        const s = await spawnerOf(daemon);
        return s.kind === 'native' && s.pid !== undefined && s.pid !== old ? s : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 20, what: 'a new svc-spawner' },
    );
    expect(processAlive(fresh.pid!)).toBe(true);
    expect(processAlive(app.pid!)).toBe(true); // the app was not touched
    expect((await getApp(daemon, 'survivor')).pid).toBe(app.pid);
    gate.go();
    const after = await waitStopped(daemon, 'survivor');
    expect(after.return_code).toBeNull();
    expect(after['last_error']).toMatch(/svc-spawner, which held the process, died/);
    expect(after.starts).toBe(1);
    // The new spawner spawns with exact codes again.
    await register(daemon, 'next', { command: 'exit 5', shell: true, behavior: { exit: 'standby' } });
    expect((await waitStopped(daemon, 'next')).return_code).toBe(5);
    expect(await serverLog(daemon)).toMatch(/svc-spawner is gone/);
  });

  it('svcd and svc-spawner both SIGKILLed: the app is re-attached (polled), not started twice', async () => {
    const first = await start();
    const app = await register(first, 'both', { command: 'sleep 600' });
    orphans.push(app.pid!);
    const spawnerProcess = mustSpawnerPid(first);
    await first.kill();
    process.kill(spawnerProcess, 'SIGKILL');
    await waitFor(() => !existsSync(`/proc/${spawnerProcess}`) || !processAlive(spawnerProcess), {
      timeoutMs: 10_000,
      what: 'the spawner gone',
    });
    const second = await start({ home: first.home, issuer: first.issuer });
    const fresh = await spawnerOf(second);
    expect(fresh.kind).toBe('native');
    expect(fresh.pid).not.toBe(spawnerProcess);
    const after = await waitRunning(second, 'both');
    expect(after.pid).toBe(app.pid);
    expect(after.starts).toBe(1);
    killGroup(app.pid);
    const stopped = await waitFor(
      async () => {
        const v = await getApp(second, 'both');
        return v.pid !== app.pid ? v : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 20, what: 'the adopted exit' },
    );
    expect(stopped.return_code ?? null).toBeNull(); // polled: unknown
  });
});
