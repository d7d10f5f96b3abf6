// Daemon restarts (crash and graceful) against real processes: managed apps outlive the daemon,
// the next daemon re-attaches to exactly those processes (never to a reused pid), output read by
// position continues byte-exactly across the boundary, and every acknowledged definition survives.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type TestDaemon } from '@svc/testkit';
import {
  getApp,
  ok,
  processAlive,
  readOutputUntil,
  serverLog,
  waitFor,
  waitGroupGone,
  waitRunning,
  within,
  type AppView,
  COUNTER,
  trackDaemons,
} from './helpers.ts';

const { start, orphans } = trackDaemons();

/** Complete lines of the counter's output, as numbers. */
function completeLines(text: string): number[] {
  const lines = text.split('\n');
  lines.pop(); // the part after the last newline is not a complete line yet
  return lines.map(Number);
}

async function snapshotNames(daemon: TestDaemon, pid: number): Promise<void> {
  await waitFor(
    async () => (await readFile(join(daemon.workDir, '.snapshot'), 'utf8')).includes(`"pid":${pid},`),
    { timeoutMs: 5000, what: `work/.snapshot to record pid ${pid}` },
  );
}

describe('daemon restart keeps apps running and re-attaches', () => {
  for (const how of ['kill', 'stop'] as const) {
    it(`after ${how === 'kill' ? 'SIGKILL' : 'SIGTERM'}: same process, no restart, output continues byte-exactly`, async () => {
      const first = await start();
      const rest = first.rest();
      ok(
        await rest.call('PUT', '/svc/app/counter', {
          token: await first.token('admin'),
          body: { command: COUNTER, shell: true },
        }),
        'register counter',
      );
      const before = await waitRunning(first, 'counter');
      const pid = before.pid!;
      orphans.push(pid); // safety net should the test fail half-way
      const part1 = await readOutputUntil(first, 'counter', 0, (t) => completeLines(t).length >= 5);
      await snapshotNames(first, pid);

      if (how === 'stop') {
        // Persistent clients stay connected: SIGTERM must not wait for them to hang up.
        const clients = [await first.tcp(), await first.wss(await first.token('admin'))];
        await within(first.stop(), 10_000, 'svcd to exit on SIGTERM with clients connected');
        await within(Promise.all(clients.map((c) => c.closed)), 5000, 'the clients to be disconnected');
      } else {
        await first.kill();
      }
      expect(processAlive(pid), 'the app outlives its daemon').toBe(true);

      const second = await start({ home: first.home, issuer: first.issuer });
      const after = await getApp(second, 'counter');
      expect({
        pid: after.pid,
        process_uuid: after.process_uuid,
        starts: after.starts,
        state: after.state,
      }).toEqual({ pid, process_uuid: before.process_uuid, starts: before.starts, state: 'running' });

      // Continue reading at the exact position where the first daemon stopped.
      const wanted = completeLines(part1.text).length + 20;
      const part2 = await readOutputUntil(
        second,
        'counter',
        part1.position,
        (t) => completeLines(part1.text + t).length >= wanted,
      );
      const numbers = completeLines(part1.text + part2.text);
      expect(numbers.length).toBeGreaterThanOrEqual(wanted);
      expect(numbers).toEqual(numbers.map((_, i) => i + 1));

      // Still exactly one start, and the adopted process is controlled by the new daemon.
      expect((await getApp(second, 'counter')).starts).toBe(before.starts);
      const removed = await second
        .rest()
        .call('DELETE', '/svc/app/counter', { token: await second.token('admin') });
      expect(removed.status, removed.text()).toBe(200);
      await waitGroupGone(pid, 'the adopted process group to be gone after DELETE');
      const gone = await second
        .rest()
        .call('GET', '/svc/app/counter', { token: await second.token('admin') });
      expect(gone.status).toBe(404);
    });
  }

  it('loses no acknowledged definition when killed right after the last acknowledgement', async () => {
    const first = await start();
    const rest = first.rest();
    const admin = await first.token('admin');
    const definitions: Record<string, Record<string, unknown>> = {
      'keep-disabled': { command: 'sleep 600', enabled: false, description: 'disabled at registration' },
      'keep-env': {
        command: 'echo "$GREETING"',
        shell: true,
        env: { GREETING: 'hello' },
        behavior: { exit: 'standby' },
      },
      'keep-secret': { command: 'true', secret_env: { KEY: 'v' }, behavior: { exit: 'standby' } },
      'keep-replaced': { command: 'echo first', shell: true, behavior: { exit: 'standby' } },
    };
    const registered = new Map<string, AppView>();
    for (const [name, body] of Object.entries(definitions)) {
      registered.set(
        name,
        ok<AppView>(await rest.call('PUT', `/svc/app/${name}`, { token: admin, body }), name),
      );
    }
    // A replacement is acknowledged too: the second definition is the one that must survive.
    const replacement = {
      command: 'echo second',
      shell: true,
      behavior: { exit: 'standby' },
      description: 'v2',
    };
    registered.set(
      'keep-replaced',
      ok<AppView>(
        await rest.call('PUT', '/svc/app/keep-replaced', { token: admin, body: replacement }),
        'replace',
      ),
    );
    for (const app of registered.values()) if (app.pid !== undefined) orphans.push(app.pid);
    await first.kill();

    const second = await start({ home: first.home, issuer: first.issuer });
    const token = await second.token('admin');
    const listed = ok<AppView[]>(await second.rest().call('GET', '/svc/applications', { token }), 'list');
    const byName = new Map(listed.map((app) => [app.name, app]));
    for (const [name, acknowledged] of registered) {
      const now = byName.get(name);
      expect(now, `${name} is listed after the restart`).toBeDefined();
      expect(definitionOf(now!)).toEqual(definitionOf(acknowledged));
    }
    expect(byName.get('keep-replaced')?.command).toBe('echo second');

    // The restarted daemon accepts new registrations, and lists old and new together.
    ok(
      await second.rest().call('PUT', '/svc/app/after-restart', { token, body: { command: 'sleep 600' } }),
      'new',
    );
    const names = ok<AppView[]>(await second.rest().call('GET', '/svc/applications', { token }), 'list').map(
      (a) => a.name,
    );
    expect(names).toEqual(expect.arrayContaining([...registered.keys(), 'after-restart']));
  });
});

/** The user-set part of an app view (runtime fields removed). */
function definitionOf(app: AppView): Record<string, unknown> {
  const runtime = new Set([
    'state',
    'pid',
    'process_uuid',
    'return_code',
    'health',
    'memory',
    'cpu',
    'starts',
    'last_start_time',
    'last_exit_time',
    'next_start_time',
    'last_error',
    'stdout_file_count',
    'fd',
    'pstree',
    'pid_user',
  ]);
  return Object.fromEntries(Object.entries(app).filter(([key]) => !runtime.has(key)));
}

describe('a reused pid is never adopted', () => {
  it('starts the app afresh when the recorded start time does not match, and leaves that process alone', async () => {
    // The snapshot's start-time rule is what re-attaches processes no svc-spawner holds (in-process
    // spawns, or after the spawner died): with the spawner holding the process, its pid cannot have
    // been reused and the spawner's record wins (test/supervisor/supervisor.test.ts).
    const inProcess = { SVC_SPAWNER: 'inprocess' };
    const first = await start({ env: inProcess });
    ok(
      await first.rest().call('PUT', '/svc/app/victim', {
        token: await first.token('admin'),
        body: { command: 'sleep 600' },
      }),
      'register',
    );
    const before = await waitRunning(first, 'victim');
    const oldPid = before.pid!;
    orphans.push(oldPid);
    await first.stop();

    // Same pid, different start time: what a reused pid looks like (snapshot.ts format).
    const file = join(first.workDir, '.snapshot');
    const snapshot = JSON.parse(await readFile(file, 'utf8')) as {
      processes: { app: string; pid: number; startTicks: number }[];
    };
    const entry = snapshot.processes.find((p) => p.app === 'victim');
    // On failure, say what the snapshot and the log held (a once-seen CI failure had no entry).
    expect(
      entry?.pid,
      `${JSON.stringify(snapshot.processes)}\n${(await serverLog(first)).slice(-3000)}`,
    ).toBe(oldPid);
    entry!.startTicks += 1;
    await writeFile(file, JSON.stringify(snapshot), { mode: 0o600 });

    const second = await start({ home: first.home, issuer: first.issuer, env: inProcess });
    const after = await waitRunning(second, 'victim');
    expect(after.pid).not.toBe(oldPid);
    expect(after.process_uuid).not.toBe(before.process_uuid);
    expect(after.starts).toBe(before.starts + 1);
    expect(await serverLog(second)).toMatch(
      new RegExp(`snapshot entry not adopted[^\\n]*"pid":${oldPid}\\b`),
    );
    // Not its process as far as the daemon can prove: it must not have been signalled either.
    expect(processAlive(oldPid)).toBe(true);
  });
});
