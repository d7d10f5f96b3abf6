// Integration tests of the supervisor with real processes in temp dirs.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '@svc/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { readProcStat } from '../../src/supervisor/proc-stats.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { alive, eventsOf, fixture, query, readAll, waitExit } from './helpers.ts';
import type { Fixture } from './helpers.ts';

let f: Fixture;
afterEach(async () => {
  await f.cleanup();
});

describe('start, stop and exit codes', () => {
  it('registers, runs and reports exit codes 0 and 3', async () => {
    f = await fixture();
    const view = await f.sup.register(
      { name: 'zero', command: 'true', behavior: { exit: 'standby' } },
      'alice',
    );
    expect(view['owner_principal_id']).toBe('alice');
    expect((await waitExit(f, 'zero')).exitCode).toBe(0);
    await f.sup.register(
      { name: 'three', command: 'sh -c "exit 3"', behavior: { exit: 'standby' } },
      'alice',
    );
    const exit = await waitExit(f, 'three');
    expect(exit.exitCode).toBe(3);
    expect(f.sup.get('three')?.['return_code']).toBe(3);
    expect(f.sup.get('three')?.['starts']).toBe(1);
  });

  it('publishes START strictly before EXIT even for a process that exits at once', async () => {
    f = await fixture();
    await f.sup.register({ name: 't', command: 'true', behavior: { exit: 'standby' } }, 'a');
    await waitExit(f, 't');
    expect(
      eventsOf(f, 't')
        .map((e) => e.type)
        .filter((t) => t === 'START' || t === 'EXIT'),
    ).toEqual(['START', 'EXIT']);
  });

  it('reports -9 and -15 for signal deaths and stops the whole group', async () => {
    f = await fixture();
    await f.sup.register({ name: 'k', command: 'sleep 60', behavior: { exit: 'standby' } }, 'a');
    const pid = f.sup.get('k')?.['pid'] as number;
    process.kill(pid, 'SIGKILL');
    expect((await waitExit(f, 'k')).exitCode).toBe(-9);
    // A shell that starts grandchildren: disable kills the group.
    await f.sup.register(
      {
        name: 'g',
        shell: true,
        command: 'sleep 60 & sleep 60 & echo started; wait',
        behavior: { exit: 'standby' },
      },
      'a',
    );
    await waitFor(async () => (await readAll(f.sup, 'g')).includes('started'), {
      what: 'grandchildren started',
    });
    const leader = f.sup.get('g')?.['pid'] as number;
    const children = readFileSync(`/proc/${leader}/task/${leader}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    expect(children.length).toBe(2);
    await f.sup.disable('g');
    expect((await waitExit(f, 'g')).exitCode).toBe(-15);
    await waitFor(() => children.every((c) => !alive(c)), { what: 'grandchildren gone' });
    expect(f.sup.get('g')?.['state']).toBe('disabled');
  });

  it('sends SIGKILL after the grace period to a child that ignores SIGTERM', async () => {
    f = await fixture({ stopGraceMs: 300 });
    await f.sup.register(
      { name: 'stubborn', shell: true, command: "trap '' TERM; echo ready; while :; do sleep 0.05; done" },
      'a',
    );
    await waitFor(async () => (await readAll(f.sup, 'stubborn')).includes('ready'), {
      what: 'trap installed',
    });
    const started = Date.now();
    await f.sup.disable('stubborn');
    expect((await waitExit(f, 'stubborn')).exitCode).toBe(-9);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(eventsOf(f, 'stubborn', 'START')).toHaveLength(1);
  });

  it('records a spawn failure without crashing (ENOENT, bad working_dir)', async () => {
    f = await fixture();
    await f.sup.register({ name: 'missing', command: '/no/such/binary', behavior: { exit: 'standby' } }, 'a');
    await waitFor(() => f.sup.get('missing')?.['last_error'], { what: 'last_error' });
    expect(f.sup.get('missing')?.['return_code']).toBe(127);
    expect(String(f.sup.get('missing')?.['last_error'])).toMatch(/ENOENT/);
    await f.sup.register(
      { name: 'badcwd', command: 'true', working_dir: '/no/such/dir', behavior: { exit: 'standby' } },
      'a',
    );
    await waitFor(() => f.sup.get('badcwd')?.['last_error'], { what: 'last_error' });
  });
});

describe('exit behaviors', () => {
  it('restarts a crash at once, then backs off', async () => {
    f = await fixture();
    await f.sup.register({ name: 'crash', command: 'sh -c "exit 1"', behavior: { exit: 'restart' } }, 'a');
    await waitExit(f, 'crash', 2);
    await waitFor(() => f.sup.get('crash')?.['state'] === 'backoff', { what: 'backoff' });
    const view = f.sup.get('crash');
    expect(view?.['starts']).toBe(2);
    expect(view?.['health']).toBe(1);
    expect((Number(view?.['next_start_time']) + 1) * 1000).toBeGreaterThan(Date.now() + 500);
  });

  it('applies behavior.exit_code_actions per exit code: remove and standby', async () => {
    f = await fixture();
    await f.sup.register(
      {
        name: 'ctl',
        command: 'sh -c "exit 4"',
        behavior: { exit: 'restart', exit_code_actions: { '4': 'remove' } },
      },
      'a',
    );
    await waitFor(() => eventsOf(f, 'ctl', 'REMOVED').length === 1, { what: 'REMOVED' });
    expect(f.sup.get('ctl')).toBeUndefined();
    expect(eventsOf(f, 'ctl').map((e) => e.type)).toEqual(['START', 'EXIT', 'REMOVED']);
    await f.sup.register(
      {
        name: 'sb',
        command: 'sh -c "exit 5"',
        behavior: { exit: 'restart', exit_code_actions: { '5': 'standby' } },
      },
      'a',
    );
    await waitExit(f, 'sb');
    await waitFor(() => f.sup.get('sb')?.['state'] === 'stopped', { what: 'stopped' });
    expect(eventsOf(f, 'sb', 'START')).toHaveLength(1);
  });

  it('disable and enable persist status and publish STATUS; a deliberate stop does not restart', async () => {
    f = await fixture();
    await f.sup.register({ name: 'svc', command: 'sleep 60', behavior: { exit: 'keepalive' } }, 'a');
    await f.sup.disable('svc');
    await waitExit(f, 'svc');
    expect(f.sup.get('svc')?.['state']).toBe('disabled');
    expect(readFileSync(join(f.dir, 'work/apps/svc.yaml'), 'utf8')).toMatch(/enabled: false/);
    expect(eventsOf(f, 'svc', 'START')).toHaveLength(1);
    await f.sup.enable('svc');
    expect(f.sup.get('svc')?.['state']).toBe('running');
    expect(readFileSync(join(f.dir, 'work/apps/svc.yaml'), 'utf8')).toMatch(/enabled: true/);
    const status = eventsOf(f, 'svc', 'STATUS');
    expect(status).toEqual([
      { type: 'STATUS', app: 'svc', enabled: false, previousEnabled: true },
      { type: 'STATUS', app: 'svc', enabled: true, previousEnabled: false },
    ]);
  });

  it('remove stops the process without EXIT, publishes REMOVED and deletes the files', async () => {
    f = await fixture();
    const started = await f.sup.register({ name: 'gone', command: 'sleep 60' }, 'a');
    const pid = started['pid'] as number;
    // A long poll waiting on the output (an HTTP run-wait) gets the removal, never the kill's code.
    const polling = f.sup
      .readOutput('gone', query({ processUuid: started['process_uuid'] as string, timeoutMs: 30_000 }))
      .then(
        (chunk) => chunk,
        (error: unknown) => error,
      );
    await f.sup.remove('gone');
    expect(await polling).toMatchObject({ code: 'app_not_found' });
    // The process the delete stops gets no EXIT: a waiter sees "app removed" (REMOVED) alone.
    expect(eventsOf(f, 'gone').map((e) => e.type)).toEqual(['START', 'REMOVED']);
    expect(alive(pid)).toBe(false);
    expect(existsSync(join(f.dir, 'work/apps/gone.yaml'))).toBe(false);
    expect(f.sup.get('gone')).toBeUndefined();
    await expect(f.sup.remove('gone')).rejects.toMatchObject({ code: 'app_not_found' });
    await expect(f.sup.readOutput('gone', query())).rejects.toBeInstanceOf(SvcError);
  });
});

describe('replace with the view echoed back', () => {
  it('treats the echoed pid of its own spawned process as a runtime field: the new command runs', async () => {
    f = await fixture();
    await f.sup.register({ name: 'echo-back', command: 'sleep 600' }, 'a');
    const view = await waitFor(
      () => {
        const v = f.sup.get('echo-back');
        return typeof v?.['pid'] === 'number' ? v : undefined;
      },
      { what: 'echo-back running' },
    );
    const replaced = await f.sup.register({ ...view, command: 'sleep 601' }, 'a');
    expect(replaced['pid']).not.toBe(view['pid']);
    expect(replaced['command']).toBe('sleep 601');
    expect(alive(view['pid'] as number)).toBe(false);
    expect(readFileSync(join(f.dir, 'work/apps/echo-back.yaml'), 'utf8')).not.toMatch(/^pid:/m);
  });
});

describe('process environment and input', () => {
  it('injects env, secret_env and SVC_* variables; writes metadata to stdin; honours working_dir', async () => {
    f = await fixture();
    const cwd = join(f.dir, 'cwd');
    mkdirSync(cwd);
    await f.sup.register(
      {
        name: 'envy',
        shell: true,
        working_dir: cwd,
        command:
          'echo "A=$A S=$S N=$SVC_APPLICATION_NAME U=$SVC_DAEMON_URL K=$SVC_PROCESS_KEY L=$SVC_LAUNCH_TIME"\npwd\ncat',
        env: { A: 'plain' },
        secret_env: { S: 'hidden' },
        metadata: { job: 42 },
        behavior: { exit: 'standby' },
      },
      'a',
    );
    await waitExit(f, 'envy');
    const out = await readAll(f.sup, 'envy');
    const key = f.sup.processKey('envy') as string;
    expect(out).toContain(`A=plain S=hidden N=envy U=https://127.0.0.1:16058 K=${key} L=`);
    expect(out).toContain(`${cwd}\n{"job":42}`);
    expect(f.sup.verifyProcessKey('envy', key)).toBe('ok');
    expect(f.sup.verifyProcessKey('envy', 'ab'.repeat(32))).toBe('unknown');
    expect(readFileSync(join(f.dir, 'work/apps/envy.yaml'), 'utf8')).not.toContain('hidden');
    expect(JSON.stringify(f.sup.get('envy'))).not.toContain('hidden');
  });

  it('splits a command line with quotes without a shell', async () => {
    f = await fixture();
    await f.sup.register(
      { name: 'q', command: `printf '%s|' "a b" 'c d' e\\ f`, behavior: { exit: 'standby' } },
      'a',
    );
    await waitExit(f, 'q');
    expect(await readAll(f.sup, 'q')).toBe('a b|c d|e f|');
  });

  it('a replaced process key is superseded', async () => {
    f = await fixture();
    await f.sup.register({ name: 'w', command: 'sleep 60' }, 'a');
    const first = f.sup.processKey('w') as string;
    await f.sup.register({ name: 'w', command: 'sleep 61' }, 'a');
    expect(f.sup.verifyProcessKey('w', first)).toBe('superseded');
    expect(f.sup.verifyProcessKey('w', f.sup.processKey('w') as string)).toBe('ok');
    // Replace is a deliberate stop: the old process exited with -15 and was not restarted twice.
    expect(eventsOf(f, 'w', 'START')).toHaveLength(2);
  });
});

describe('output', () => {
  it('reads megabytes of a chatty process by position without loss or duplication', async () => {
    f = await fixture();
    const lines = 400_000; // ~8 MB of numbered lines
    await f.sup.register(
      { name: 'chatty', command: `seq -f %019.0f 1 ${lines}`, behavior: { exit: 'standby' } },
      'a',
    );
    const parts: Buffer[] = [];
    let position = 0;
    let exitCode: number | undefined;
    while (exitCode === undefined) {
      const chunk = await f.sup.readOutput('chatty', query({ position, timeoutMs: 2000, maxSize: 300_000 }));
      parts.push(chunk.output);
      position = chunk.position;
      exitCode = chunk.exitCode;
    }
    const got = Buffer.concat(parts);
    const file = readFileSync(join(f.dir, 'work/stdout/chatty.out'));
    expect(got.equals(file)).toBe(true);
    const expected = Array.from({ length: lines }, (_, i) => String(i + 1).padStart(19, '0') + '\n').join('');
    expect(got.toString()).toBe(expected);
    expect(exitCode).toBe(0);
  });

  it('rotates files with stdout_backup_count and pins reads by process_uuid', async () => {
    f = await fixture();
    await f.sup.register(
      {
        name: 'rot',
        shell: true,
        command: 'echo run-$SVC_LAUNCH_TIME; exit 1',
        stdout_backup_count: 2,
        behavior: { exit: 'restart' },
      },
      'a',
    );
    // Two immediate-ish starts happen (first restart immediate); then backoff 1 s.
    await waitExit(f, 'rot', 2);
    const starts = eventsOf(f, 'rot', 'START') as Extract<(typeof f.events)[number], { type: 'START' }>[];
    const first = starts[0]?.processUuid as string;
    const second = starts[1]?.processUuid as string;
    const pinned = await f.sup.readOutput('rot', query({ processUuid: first }));
    expect(pinned.processUuid).toBe(first);
    expect(pinned.exitCode).toBe(1);
    const older = await f.sup.readOutput('rot', query({ index: 1 }));
    expect(older.output.equals(pinned.output)).toBe(true);
    expect((await f.sup.readOutput('rot', query({ index: 0 }))).processUuid).toBe(second);
    expect(f.sup.get('rot')?.['stdout_file_count']).toBe(1);
    await expect(f.sup.readOutput('rot', query({ processUuid: 'nope' }))).rejects.toMatchObject({
      code: 'not_found',
    });
    // Past the end: empty, position = end.
    const end = await f.sup.readOutput('rot', query({ position: 10_000 }));
    expect(end.output.length).toBe(0);
    expect(end.position).toBe((await f.sup.readOutput('rot', query())).position);
  });

  it('drops the oldest file beyond stdout_backup_count', async () => {
    f = await fixture();
    await f.sup.register(
      { name: 'r1', command: 'sh -c "exit 1"', stdout_backup_count: 1, behavior: { exit: 'restart' } },
      'a',
    );
    await waitExit(f, 'r1', 2);
    await f.sup.disable('r1');
    await f.sup.enable('r1');
    await waitExit(f, 'r1', 3);
    const uuids = eventsOf(f, 'r1', 'START').map((e) => (e as { processUuid: string }).processUuid);
    await expect(f.sup.readOutput('r1', query({ processUuid: uuids[0] }))).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(f.sup.readOutput('r1', query({ index: 2 }))).rejects.toMatchObject({ code: 'not_found' });
  });

  it('long poll resolves on new output and on exit', async () => {
    f = await fixture();
    const flag = join(f.dir, 'exit-now');
    await f.sup.register(
      {
        name: 'lp',
        shell: true,
        command: `read x; echo "got $x"; while [ ! -e ${flag} ]; do sleep 0.01; done; read y`,
        metadata: 'hello\n',
        behavior: { exit: 'standby' },
      },
      'a',
    );
    const first = await f.sup.readOutput('lp', query({ timeoutMs: 5000 }));
    expect(first.output.toString()).toBe('got hello\n');
    expect(first.exitCode).toBeUndefined();
    // stdin was closed after the metadata: `read y` fails and the shell exits -> the poll wakes.
    const t0 = Date.now();
    const pending = f.sup.readOutput('lp', query({ position: first.position, timeoutMs: 5000 }));
    writeFileSync(flag, '');
    const last = await pending;
    expect(last.output.length).toBe(0);
    expect(last.exitCode).toBe(1);
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  it('long poll waits for bytes written later', async () => {
    f = await fixture();
    const flag = join(f.dir, 'flag');
    await f.sup.register(
      {
        name: 'later',
        shell: true,
        command: `echo a; while [ ! -e ${flag} ]; do sleep 0.01; done; echo b; sleep 60`,
      },
      'a',
    );
    const a = await f.sup.readOutput('later', query({ timeoutMs: 5000 }));
    expect(a.output.toString()).toBe('a\n');
    const pending = f.sup.readOutput('later', query({ position: a.position, timeoutMs: 10_000 }));
    writeFileSync(flag, '');
    const b = await pending;
    expect(b.output.toString()).toBe('b\n');
    expect(b.exitCode).toBeUndefined();
    // Nothing new: a short poll returns empty at the same position.
    const none = await f.sup.readOutput('later', query({ position: b.position, timeoutMs: 50 }));
    expect(none.output.length).toBe(0);
    expect(none.position).toBe(b.position);
  });
});

describe('daemon restart', () => {
  it('re-attaches to a running process, output continues, exit detected', async () => {
    f = await fixture({ adoptedPollMs: 50 });
    await f.sup.register(
      {
        name: 'survivor',
        shell: true,
        command: 'echo one; read x < /dev/null; sleep 0.6; echo two; exit 7',
        behavior: { exit: 'standby' },
      },
      'a',
    );
    await waitFor(async () => (await readAll(f.sup, 'survivor')).includes('one'), { what: 'first line' });
    const pid = f.sup.get('survivor')?.['pid'];
    const uuid = f.sup.get('survivor')?.['process_uuid'];
    await f.sup.detach();
    const b = await f.make();
    expect(b.get('survivor')?.['pid']).toBe(pid);
    expect(b.get('survivor')?.['process_uuid']).toBe(uuid);
    expect(b.verifyProcessKey('survivor', b.processKey('survivor') as string)).toBe('ok');
    await waitFor(() => b.get('survivor')?.['state'] === 'stopped', { what: 'adopted exit detected' });
    const view = b.get('survivor');
    if (b.spawner().kind === 'native') {
      // svc-spawner held the process: the new supervisor learns its real exit code.
      expect(view?.['return_code']).toBe(7);
      expect(view?.['last_error']).toBeUndefined();
    } else {
      expect(view?.['return_code']).toBeNull();
      expect(view?.['last_error']).toMatch(/exit code unavailable/);
    }
    expect(await readAll(b, 'survivor')).toBe('one\ntwo\n');
  });

  it('leaves alone a process whose snapshot entry has another start time, even with a valid key', async () => {
    f = await fixture();
    await f.sup.register({ name: 'imposter', command: 'sleep 60' }, 'a');
    const pid = f.sup.get('imposter')?.['pid'] as number;
    await f.sup.detach();
    const file = join(f.dir, 'work/.snapshot');
    const snap = JSON.parse(readFileSync(file, 'utf8')) as { processes: { startTicks: number }[] };
    for (const p of snap.processes) p.startTicks += 1;
    writeFileSync(file, JSON.stringify(snap));
    const b = await f.make();
    expect(alive(pid)).toBe(true);
    if (b.spawner().kind === 'native') {
      // svc-spawner holds that very process (its tag names the app and the uuid) and has not reaped
      // it, so its pid cannot have been reused: re-attached whatever the snapshot's start time says.
      expect(b.get('imposter')?.['pid']).toBe(pid);
      return;
    }
    // Not adopted (the orphan scan does not override the snapshot's rule for that very process):
    // the app is started afresh with a new pid (the old one is killed in cleanup).
    expect(b.get('imposter')?.['pid']).not.toBe(pid);
  });

  it('does not adopt a snapshot entry whose start time does not match (a reused pid)', async () => {
    f = await fixture();
    await f.sup.register({ name: 'imposter', command: 'sleep 60' }, 'a');
    const own = f.sup.get('imposter')?.['pid'] as number;
    await f.sup.detach();
    process.kill(-own, 'SIGKILL');
    await waitFor(() => !alive(own), { what: 'the app process gone' });
    // Its pid "reused" by a foreign process (own group, no svc environment): the snapshot entry
    // names that pid with the start time the app's process had, which does not match.
    const foreign = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    foreign.unref();
    const pid = foreign.pid as number;
    f.pids.add(pid); // killed in cleanup
    const file = join(f.dir, 'work/.snapshot');
    const snap = JSON.parse(readFileSync(file, 'utf8')) as {
      processes: { pid: number; startTicks: number }[];
    };
    for (const p of snap.processes) {
      p.pid = pid;
      p.startTicks = (readProcStat(pid)?.startTicks ?? 0) + 1;
    }
    writeFileSync(file, JSON.stringify(snap));
    const b = await f.make();
    // Not adopted (neither by the snapshot nor by the orphan scan): the app is started afresh.
    expect(b.get('imposter')?.['pid']).not.toBe(pid);
    expect(b.get('imposter')?.['state']).toBe('running');
    expect(alive(pid)).toBe(true);
  });
});

describe('runs', () => {
  it('syncRun returns the output and exit code and removes the transient app', async () => {
    f = await fixture();
    const result = await f.sup.syncRun(
      { name: 'job', command: 'sh -c "echo out; exit 2"' },
      { timeoutSeconds: 5, lifecycleSeconds: 60 },
      'a',
    );
    expect(result.output.toString()).toBe('out\n');
    expect(result.exitCode).toBe(2);
    expect(f.sup.list().filter((a) => a.name.startsWith('job-run-'))).toHaveLength(0);
  });

  it('syncRun stops a run at its timeout and reports no exit code', async () => {
    f = await fixture();
    const result = await f.sup.syncRun(
      { name: 'slow', shell: true, command: 'echo begin; sleep 60' },
      { timeoutSeconds: 1, lifecycleSeconds: 60 },
      'a',
    );
    expect(result.output.toString()).toBe('begin\n');
    expect(result.exitCode).toBeUndefined();
  });

  it('run copies an existing app with metadata and env and removes it after its lifecycle', async () => {
    f = await fixture();
    await f.sup.register(
      {
        name: 'tmpl',
        shell: true,
        command: 'echo "$GREETING"; cat',
        env: { GREETING: 'hi' },
        enabled: false,
      },
      'a',
    );
    const { name, process_uuid } = await f.sup.run(
      { name: 'tmpl', metadata: 'payload', env: { GREETING: 'yo' } },
      { timeoutSeconds: 0, lifecycleSeconds: 1 },
      'a',
    );
    expect(name).toMatch(/^tmpl-run-[0-9a-f]{8}$/);
    await waitExit(f, name);
    expect(await readAll(f.sup, name, { processUuid: process_uuid })).toBe('yo\npayload');
    await waitFor(() => eventsOf(f, name, 'REMOVED').length === 1, {
      what: 'transient removal',
      timeoutMs: 5000,
    });
    expect(f.sup.get(name)).toBeUndefined();
  });
});

describe('system apps and validation', () => {
  it('loads bundled system apps and refuses to change them', async () => {
    f = await fixture();
    const bundled = join(f.dir, 'apps');
    mkdirSync(bundled);
    writeFileSync(join(bundled, 'sys.yaml'), 'name: sys\ncommand: sleep 60\nsystem: true\n');
    const b = await f.make({ bundledAppsDir: bundled });
    expect(b.access('sys')).toMatchObject({ system: true });
    await expect(b.register({ name: 'sys', command: 'true' }, 'a')).rejects.toMatchObject({
      code: 'system_app',
    });
    await expect(b.remove('sys')).rejects.toMatchObject({ code: 'system_app' });
    await waitFor(() => b.get('sys')?.['pid'] as number | undefined, { what: 'sys running' });
    const pid = b.get('sys')?.['pid'];
    await expect(b.enable('sys')).resolves.toMatchObject({ pid }); // running: left alone
    await b.disable('sys');
    await expect(b.enable('sys')).rejects.toMatchObject({ code: 'system_app' }); // disabled: refused
    await expect(b.register({ name: 'bad name', command: 'true' }, 'a')).rejects.toMatchObject({
      code: 'invalid_app',
    });
  });

  it('reports resource limits as unsupported when the cgroup root lacks controllers', async () => {
    f = await fixture({ cgroupRoot: '/nonexistent-cgroup-root' });
    await f.sup.register(
      { name: 'lim', command: 'sleep 60', resource_limit: { memory_mb: 64, cpu_shares: 512 } },
      'a',
    );
    expect(String(f.sup.get('lim')?.['resource_limit_status'])).toMatch(/^unsupported: /);
  });
});
