// Integration tests with real processes: health_check_cmd and liveness health, adoption of a
// running process by `pid`, and the process-group memory/cpu of the app view.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readProcStat } from '../../src/supervisor/proc-stats.ts';
import type { SupervisorEvent } from '../../src/supervisor/types.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { alive, eventsOf, fixture, query, waitExit } from './helpers.ts';
import type { Fixture } from './helpers.ts';

let f: Fixture;
/** Processes a test started itself (not through the supervisor): killed after each test. */
const own = new Set<number>();
afterEach(async () => {
  await f.cleanup();
  for (const pid of own) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  own.clear();
});

type Health = Extract<SupervisorEvent, { type: 'HEALTH' }>;
const healthEvents = (app: string): Health[] => eventsOf(f, app, 'HEALTH') as Health[];
const lines = (file: string): string[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];

/** A process started by the test in its own process group (like something started by hand). */
function startDetached(command: string, args: string[]): number {
  const child = spawn(command, args, { detached: true, stdio: 'ignore' });
  child.unref();
  const pid = child.pid as number;
  own.add(pid);
  return pid;
}

describe('health_check_cmd', () => {
  it('flips health 0 -> 1 -> 0 with the check and publishes HEALTH only on change', async () => {
    f = await fixture({ healthIntervalMs: 50 });
    const flag = join(f.dir, 'healthy');
    const runs = join(f.dir, 'runs');
    writeFileSync(flag, '');
    await f.sup.register(
      { name: 'web', command: 'sleep 60', health_check_cmd: `echo x >> ${runs}; test -e ${flag}` },
      'a',
    );
    // Several checks pass: health stays 0 and nothing is published.
    await waitFor(() => lines(runs).length >= 3, { what: '3 health checks' });
    expect(f.sup.health('web')).toBe(0);
    expect(healthEvents('web')).toEqual([]);

    rmSync(flag);
    await waitFor(() => f.sup.health('web') === 1, { what: 'unhealthy' });
    expect(f.sup.get('web')?.['health']).toBe(1);
    // More failing checks: still exactly one HEALTH event.
    const after = lines(runs).length;
    await waitFor(() => lines(runs).length >= after + 3, { what: '3 more health checks' });
    expect(healthEvents('web')).toEqual([{ type: 'HEALTH', app: 'web', health: 1, previousHealth: 0 }]);

    writeFileSync(flag, '');
    await waitFor(() => f.sup.health('web') === 0, { what: 'healthy again' });
    const again = lines(runs).length;
    await waitFor(() => lines(runs).length >= again + 3, { what: '3 more health checks' });
    expect(healthEvents('web').map((e) => [e.previousHealth, e.health])).toEqual([
      [0, 1],
      [1, 0],
    ]);
    // Checks stop with the process: health falls back to liveness (disabled = 0).
    await f.sup.disable('web');
    const stopped = lines(runs).length;
    rmSync(flag);
    await waitFor(() => f.sup.get('web')?.['state'] === 'disabled', { what: 'disabled' });
    expect(f.sup.health('web')).toBe(0);
    expect(lines(runs).length).toBeLessThanOrEqual(stopped + 1); // at most one check in flight
  });

  it('bounds a hanging check by its timeout (unhealthy) and never runs two checks of an app at once', async () => {
    f = await fixture({ healthIntervalMs: 100 });
    const pids = join(f.dir, 'check-pids');
    await f.sup.register(
      // The shell and the sleep it starts: both must go at the timeout.
      { name: 'hang', command: 'sleep 60', health_check_cmd: `sleep 30 & echo "$$ $!" >> ${pids}; wait` },
      'a',
    );
    try {
      await waitFor(() => f.sup.health('hang') === 1, { what: 'timed-out check reported unhealthy' });
      await waitFor(() => lines(pids).length >= 4, { what: '4 checks started' });
      // Every check but the newest was killed at its timeout: no pile-up of hanging commands. A
      // check may be timing out right now (SIGKILL sent, not yet reaped), so wait for the kill to
      // land rather than sampling one instant.
      const started = (): number[][] => lines(pids).map((line) => line.split(' ').map(Number));
      const running = (): number[][] => started().filter((pair) => pair.some((pid) => alive(pid)));
      await waitFor(() => running().length <= 1, { what: 'at most one check running' });
      const now = running();
      if (now.length === 1) expect(started()).toContainEqual(now[0]);
      const older = started().slice(0, -2);
      expect(older.filter((pair) => pair.some((pid) => alive(pid)))).toEqual([]);
      expect(healthEvents('hang')).toEqual([{ type: 'HEALTH', app: 'hang', health: 1, previousHealth: 0 }]);
    } finally {
      for (const line of lines(pids)) for (const pid of line.split(' ')) own.add(Number(pid));
    }
  });
});

describe('liveness health (no health_check_cmd)', () => {
  it('is 1 when left down by a failed exit, 0 after a clean one, and 0 once disabled', async () => {
    f = await fixture();
    await f.sup.register({ name: 'ok', command: 'true', behavior: { exit: 'standby' } }, 'a');
    await waitExit(f, 'ok');
    await waitFor(() => f.sup.get('ok')?.['state'] === 'stopped', { what: 'stopped' });
    expect(f.sup.health('ok')).toBe(0);
    expect(healthEvents('ok')).toEqual([]);

    await f.sup.register({ name: 'bad', command: 'sh -c "exit 3"', behavior: { exit: 'standby' } }, 'a');
    await waitExit(f, 'bad');
    await waitFor(() => f.sup.health('bad') === 1, { what: 'unhealthy after a failed exit' });
    expect(healthEvents('bad')).toEqual([{ type: 'HEALTH', app: 'bad', health: 1, previousHealth: 0 }]);
    await f.sup.disable('bad');
    expect(f.sup.health('bad')).toBe(0);
    expect(healthEvents('bad').map((e) => e.health)).toEqual([1, 0]);
    expect(f.sup.health('nope')).toBeUndefined();
  });

  it('is 1 while backing off after crashes and 0 when the restarted process runs', async () => {
    f = await fixture();
    const flag = join(f.dir, 'stay');
    // Crashes until the flag exists, then keeps running.
    await f.sup.register(
      {
        name: 'flaky',
        shell: true,
        command: `[ -e ${flag} ] || exit 1; exec sleep 60`,
        behavior: { exit: 'restart' },
      },
      'a',
    );
    await waitFor(() => f.sup.get('flaky')?.['state'] === 'backoff', { what: 'backoff' });
    expect(f.sup.health('flaky')).toBe(1);
    writeFileSync(flag, '');
    await waitFor(
      () => f.sup.get('flaky')?.['state'] === 'running' && alive(f.sup.get('flaky')?.['pid'] as number),
      {
        what: 'running after backoff',
        timeoutMs: 5000,
      },
    );
    expect(f.sup.health('flaky')).toBe(0);
    expect(healthEvents('flaky').map((e) => e.health)).toEqual([1, 0]);
  });
});

describe('adopting a running process (pid)', () => {
  it('adopts by pid, survives a daemon restart, detects the exit (code unknown)', async () => {
    f = await fixture({ adoptedPollMs: 20 });
    const pid = startDetached('sleep', ['60']);
    const view = await f.sup.register(
      { name: 'ext', command: 'sleep 60', pid, behavior: { exit: 'standby' } },
      'a',
    );
    expect(view['pid']).toBe(pid);
    expect(view['state']).toBe('running');
    expect(view['adopted']).toBe(true);
    expect(view['output_captured']).toBe(false);
    const start = eventsOf(f, 'ext', 'START');
    expect(start).toEqual([{ type: 'START', app: 'ext', pid, processUuid: view['process_uuid'] }]);
    // Nothing was spawned: no other process runs for the app.
    expect(f.sup.get('ext')?.['processes']).toBe(1);

    // Already managed: by this app (another name) or as a member of a managed group.
    await expect(f.sup.register({ name: 'ext2', command: 'true', pid }, 'a')).rejects.toMatchObject({
      code: 'invalid_app',
      message: `pid: process ${pid} is already managed by ext`,
    });
    // The same definition echoed back keeps the process (no restart).
    await f.sup.register({ name: 'ext', command: 'sleep 60', pid, behavior: { exit: 'standby' } }, 'a');
    expect(f.sup.get('ext')?.['pid']).toBe(pid);
    expect(eventsOf(f, 'ext', 'START')).toHaveLength(1);
    expect(alive(pid)).toBe(true);

    // Daemon restart: re-attached from the snapshot (start time recorded at adoption).
    await f.sup.detach();
    const b = await f.make({ adoptedPollMs: 20 });
    expect(b.get('ext')?.['pid']).toBe(pid);
    expect(b.get('ext')?.['output_captured']).toBe(false);
    expect(b.get('ext')?.['process_uuid']).toBe(view['process_uuid']);

    process.kill(pid, 'SIGKILL');
    const exit = await waitExit(f, 'ext');
    expect(exit.pid).toBe(pid);
    expect(exit.exitCode).toBeUndefined();
    await waitFor(() => b.get('ext')?.['state'] === 'stopped', { what: 'exit detected by the poll' });
    expect(b.get('ext')?.['return_code']).toBeNull();
    expect(String(b.get('ext')?.['last_error'])).toMatch(/exit code unavailable/);
    // The output API tells "exited, code unknown" apart from "still running".
    const chunk = await b.readOutput('ext', query({ processUuid: view['process_uuid'] as string }));
    expect(chunk).toMatchObject({ exited: true, exitCode: undefined, position: 0 });
  });

  it('refuses a pid that does not exist and a member of a managed process group', async () => {
    f = await fixture();
    // A pid above any pid_max in use here.
    await expect(
      f.sup.register({ name: 'ghost', command: 'true', pid: 2 ** 31 - 2 }, 'a'),
    ).rejects.toMatchObject({ code: 'invalid_app', message: 'pid: no such process' });
    expect(f.sup.get('ghost')).toBeUndefined();
    await f.sup.register({ name: 'group', shell: true, command: 'sleep 60 & echo $!; wait' }, 'a');
    const child = Number(
      await waitFor(
        async () => (await f.sup.readOutput('group', query())).output.toString().trim() || undefined,
        {
          what: 'child pid',
        },
      ),
    );
    await expect(f.sup.register({ name: 'steal', command: 'true', pid: child }, 'a')).rejects.toMatchObject({
      code: 'invalid_app',
      message: `pid: process ${child} is in the process group of group`,
    });
    await expect(
      f.sup.register({ name: 'self', command: 'true', pid: process.pid }, 'a'),
    ).rejects.toMatchObject({
      code: 'invalid_app',
    });
  });

  it('stop signals only the adopted pid, leader of its group or not: svc did not create that group', async () => {
    f = await fixture({ adoptedPollMs: 20 });
    // A leader with two children in its group.
    const leader = startDetached('sh', ['-c', 'sleep 60 & sleep 60 & wait']);
    await waitFor(
      () => readFileSync(`/proc/${leader}/task/${leader}/children`, 'utf8').trim().split(/\s+/).length === 2,
      {
        what: 'children started',
      },
    );
    const children = readFileSync(`/proc/${leader}/task/${leader}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    await f.sup.register({ name: 'lead', command: 'true', pid: leader, behavior: { exit: 'standby' } }, 'a');
    expect(f.sup.get('lead')?.['processes']).toBe(3);
    await f.sup.disable('lead');
    expect((await waitExit(f, 'lead')).exitCode).toBeUndefined();
    await waitFor(() => !alive(leader), { what: 'the adopted leader gone' });
    // Its group was not svc's to signal: the children (reparented) live on.
    expect(children.every((c) => alive(c))).toBe(true);
    for (const child of children) process.kill(child, 'SIGKILL');

    // A non-leader: the sleep inside a looping shell's group. Only it is signalled.
    const pidFile = join(f.dir, 'inner');
    const shell = startDetached('sh', [
      '-c',
      `sleep 60 & echo $! > ${pidFile}; while :; do sleep 0.05; done`,
    ]);
    const inner = Number(await waitFor(() => lines(pidFile)[0], { what: 'inner pid' }));
    expect(readProcStat(inner)?.pgid).toBe(shell);
    await f.sup.register({ name: 'solo', command: 'true', pid: inner, behavior: { exit: 'standby' } }, 'a');
    await f.sup.disable('solo');
    await waitExit(f, 'solo');
    await waitFor(() => !alive(inner), { what: 'inner gone' });
    expect(alive(shell)).toBe(true);
  });
});

describe('process group usage in the app view', () => {
  it('sums memory and cpu over the group, computed on view', async () => {
    f = await fixture();
    await f.sup.register(
      { name: 'fam', shell: true, command: 'sleep 60 & sleep 60 & echo ready; wait' },
      'a',
    );
    const leaderRss = (pid: number): number =>
      Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
    // Bounded wait: right after the forks, the children's RSS is still settling (pre-exec copies).
    const view = await waitFor(
      () => {
        const v = f.sup.get('fam');
        return v?.['processes'] === 3 && Number(v['memory']) > leaderRss(v['pid'] as number) ? v : undefined;
      },
      { what: 'group of 3 with more memory than its leader alone' },
    );
    expect(typeof view['cpu']).toBe('number');
    expect(view['cpu']).toBeGreaterThanOrEqual(0);
    // The answer of a mutation does not read /proc.
    const disabled = await f.sup.disable('fam');
    expect(disabled['memory']).toBeUndefined();
  });
});

describe('a definition write that fails undoes the start', () => {
  // <name>.yaml made a non-empty directory: the rename of the written temp file over it fails.
  const blockFile = (name: string): void => {
    const path = join(f.dir, 'work/apps', `${name}.yaml`);
    rmSync(path, { force: true });
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, 'x'), '');
  };

  it('new app: started, then stopped and removed; the caller gets the error', async () => {
    f = await fixture();
    await f.sup.register({ name: 'first', command: 'true', behavior: { exit: 'standby' } }, 'a');
    blockFile('lost');
    await expect(f.sup.register({ name: 'lost', command: 'sleep 60' }, 'a')).rejects.toMatchObject({
      code: 'EISDIR',
    });
    expect(f.sup.get('lost')).toBeUndefined();
    expect(existsSync(join(f.dir, 'work/apps/lost.yaml/x'))).toBe(true); // what was there stays
    const types = eventsOf(f, 'lost').map((e) => e.type);
    expect(types).toEqual(['START', 'REMOVED']); // a removal's stop publishes no EXIT
    const pid = (eventsOf(f, 'lost', 'START')[0] as { pid: number }).pid;
    await waitFor(() => !alive(pid), { what: 'process of the unsaved app gone' });
  });

  it('run: the transient app is started, then stopped and removed; the caller gets the error', async () => {
    f = await fixture();
    await f.sup.register({ name: 'tmpl', command: 'sleep 60', enabled: false }, 'a');
    // The apps directory replaced by a file: neither the pooled temp file nor a fresh one can be renamed.
    rmSync(join(f.dir, 'work/apps'), { recursive: true, force: true });
    writeFileSync(join(f.dir, 'work/apps'), '');
    await expect(
      f.sup.run({ name: 'tmpl' }, { timeoutSeconds: 0, lifecycleSeconds: 60 }, 'a'),
    ).rejects.toThrow();
    const started = f.events.filter((e) => e.type === 'START' && e.app.startsWith('tmpl-run-'));
    expect(started).toHaveLength(1);
    const name = started[0]!.app;
    expect(f.sup.get(name)).toBeUndefined();
    expect(eventsOf(f, name).map((e) => e.type)).toEqual(['START', 'REMOVED']);
    const pid = (started[0] as { pid: number }).pid;
    await waitFor(() => !alive(pid), { what: 'process of the unsaved run gone' });
    rmSync(join(f.dir, 'work/apps'));
    mkdirSync(join(f.dir, 'work/apps'));
  });

  it('replace and disable: the previous (stored) definition is the app again', async () => {
    f = await fixture();
    await f.sup.register({ name: 'keep', command: 'sleep 60' }, 'a');
    blockFile('keep');
    await expect(f.sup.register({ name: 'keep', command: 'sleep 61' }, 'a')).rejects.toThrow();
    expect(f.sup.get('keep')?.['command']).toBe('sleep 60');
    expect(f.sup.get('keep')?.['state']).toBe('running');
    await expect(f.sup.disable('keep')).rejects.toThrow();
    expect(f.sup.get('keep')?.['enabled']).toBe(true);
    expect(f.sup.get('keep')?.['state']).toBe('running');
    expect(eventsOf(f, 'keep', 'STATUS').map((e) => (e as { enabled: boolean }).enabled)).toEqual([
      false,
      true,
    ]);
  });

  it('replace: the new definition never runs before it is stored (a crash then would leave its process)', async () => {
    // Found by the crash-safety suite (test/reliability): a kill -9 between the spawn and the
    // durable write left the next daemon adopting a process of the unacknowledged definition.
    f = await fixture();
    await f.sup.register({ name: 'keep', command: 'sleep 60' }, 'a');
    const startsBefore = eventsOf(f, 'keep', 'START').length;
    blockFile('keep');
    await expect(f.sup.register({ name: 'keep', command: 'sleep 61' }, 'a')).rejects.toThrow();
    const pid = (await waitFor(() => f.sup.get('keep')?.['pid'], { what: 'keep running again' })) as number;
    // One start after the failed replace: the previous definition again, never `sleep 61`.
    expect(eventsOf(f, 'keep', 'START').length - startsBefore).toBe(1);
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()).toBe('sleep 60');
  });
});
