// Orphan recovery at start-up: a process whose snapshot entry was lost (daemon crash within 50 ms of
// its start) is found in /proc by its SVC_* environment and adopted, never started a second time.
// Real processes; every process group started here is killed in afterEach.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log/logger.ts';
import { readProcStat } from '../../src/supervisor/proc-stats.ts';
import { scanClaimingProcesses } from '../../src/supervisor/orphans.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { alive, eventsOf, fixture, readAll } from './helpers.ts';
import type { Fixture } from './helpers.ts';

/** Prints 1, 2, 3, … one per line, every ~20 ms, forever. */
const COUNTER = 'i=0; while :; do i=$((i+1)); echo "$i"; sleep 0.02; done';

let f: Fixture;
let extraGroups: number[] = [];
afterEach(async () => {
  await f.cleanup();
  for (const pgid of extraGroups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  extraGroups = [];
});

/** A unique app name: concurrent test files never share processes with it. */
const appName = (base: string): string => `${base}-${randomBytes(4).toString('hex')}`;

/** Live processes whose environment names `app` (readable ones: ours), with their process group. */
function processesOf(app: string): { pid: number; pgid: number }[] {
  const found: { pid: number; pgid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${entry}/environ`, 'utf8');
    } catch {
      continue;
    }
    if (!env.split('\0').includes(`SVC_APPLICATION_NAME=${app}`)) continue;
    const stat = readProcStat(Number(entry));
    if (stat !== undefined && stat.state !== 'Z') found.push({ pid: Number(entry), pgid: stat.pgid });
  }
  return found;
}

/** The crash lost the snapshot (deleted after the supervisor detached). */
function loseSnapshot(): void {
  rmSync(join(f.dir, 'work/.snapshot'), { force: true });
}

function completeLines(text: string): number[] {
  const lines = text.split('\n');
  lines.pop();
  return lines.map(Number);
}

async function readFrom(
  sup: Fixture['sup'],
  app: string,
  position: number,
  until: (text: string) => boolean,
): Promise<{ text: string; position: number }> {
  let text = '';
  return waitFor(
    async () => {
      for (;;) {
        const chunk = await sup.readOutput(app, {
          position,
          index: 0,
          maxSize: undefined,
          processUuid: undefined,
          timeoutMs: 0,
        });
        if (chunk.output.length === 0) break;
        text += chunk.output.toString();
        position = chunk.position;
      }
      return until(text) ? { text, position } : undefined;
    },
    { what: `output of ${app}` },
  );
}

/** Spawn a detached process (its own group) with `env` added, like svc does; killed in afterEach. */
function spawnClaiming(env: Record<string, string>, command = 'sleep 60'): number {
  const child = spawn('/bin/sh', ['-c', `exec ${command}`], {
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, ...env },
  });
  child.unref();
  const pid = child.pid as number;
  extraGroups.push(pid);
  return pid;
}

function keyOf(secret: Buffer, uuid: string): string {
  return createHmac('sha256', secret).update(uuid).digest('hex');
}

function capturingLogger(lines: string[]): Logger {
  const logger: Logger = {
    debug: (m) => lines.push(`debug ${m}`),
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => logger,
    close: () => Promise.resolve(),
  };
  return logger;
}

describe('orphan recovery at start-up', () => {
  it('injects SVC_PROCESS_UUID next to its key', async () => {
    f = await fixture();
    const name = appName('env');
    await f.sup.register({ name, command: 'sleep 60' }, 'a');
    const view = f.sup.get(name);
    const pid = view?.['pid'] as number;
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    expect(env).toContain(`SVC_PROCESS_UUID=${view?.['process_uuid'] as string}`);
    expect(env).toContain(`SVC_PROCESS_KEY=${keyOf(f.secret, view?.['process_uuid'] as string)}`);
  });

  it('adopts the same pid when the snapshot was lost; no second process; output continues', async () => {
    f = await fixture({ adoptedPollMs: 50 });
    const name = appName('lost');
    await f.sup.register({ name, command: COUNTER, shell: true }, 'a');
    const before = f.sup.get(name);
    const pid = before?.['pid'] as number;
    const part1 = await readFrom(f.sup, name, 0, (t) => completeLines(t).length >= 5);
    await f.sup.detach();
    loseSnapshot();

    const b = await f.make();
    const after = b.get(name);
    expect({
      pid: after?.['pid'],
      process_uuid: after?.['process_uuid'],
      starts: after?.['starts'],
      state: after?.['state'],
    }).toEqual({ pid, process_uuid: before?.['process_uuid'], starts: 1, state: 'running' });
    expect(b.verifyProcessKey(name, keyOf(f.secret, before?.['process_uuid'] as string))).toBe('ok');
    // Only the first daemon's START: the new one started nothing.
    expect(eventsOf(f, name, 'START')).toHaveLength(1);
    // Every process naming the app is in the adopted process's group (its own sleep children).
    expect(processesOf(name).every((p) => p.pgid === pid)).toBe(true);

    // Output continues by position: nothing lost, nothing duplicated.
    const wanted = completeLines(part1.text).length + 15;
    const part2 = await readFrom(
      b,
      name,
      part1.position,
      (t) => completeLines(part1.text + t).length >= wanted,
    );
    const numbers = completeLines(part1.text + part2.text);
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));

    // The adopted process is controlled by the new supervisor, and its exit is detected.
    await b.disable(name);
    await waitFor(() => !alive(pid), { what: 'the adopted process to be stopped' });
    expect(b.get(name)?.['state']).toBe('disabled');
  });

  it('adopts a process started after the last snapshot write (stale snapshot): files shift by one', async () => {
    f = await fixture();
    const name = appName('stale');
    await f.sup.register({ name, shell: true, command: 'echo first; exec sleep 60' }, 'a');
    const firstUuid = f.sup.get(name)?.['process_uuid'] as string;
    await waitFor(async () => (await readAll(f.sup, name)).includes('first'), { what: 'first output' });
    const file = join(f.dir, 'work/.snapshot');
    await waitFor(() => readFileSync(file, 'utf8').includes(firstUuid), { what: 'snapshot of 1st' });
    const stale = readFileSync(file, 'utf8');
    // Replace: the first process is stopped, a second one started (and its output file rotated in).
    await f.sup.register({ name, shell: true, command: 'echo second; exec sleep 60' }, 'a');
    const second = f.sup.get(name);
    const pid = second?.['pid'] as number;
    await waitFor(async () => (await readAll(f.sup, name)).includes('second'), { what: 'second output' });
    await f.sup.detach();
    writeFileSync(file, stale); // the crash lost every write after the first start

    const b = await f.make();
    const after = b.get(name);
    expect(after?.['pid']).toBe(pid);
    expect(after?.['process_uuid']).toBe(second?.['process_uuid']);
    expect(after?.['starts']).toBe(2); // the lost start is recorded
    expect(b.verifyProcessKey(name, keyOf(f.secret, firstUuid))).toBe('superseded');
    expect(await readAll(b, name)).toBe('second\n');
    const old = await b.readOutput(name, {
      position: 0,
      index: 1,
      maxSize: undefined,
      processUuid: firstUuid,
      timeoutMs: 0,
    });
    expect(old.output.toString()).toBe('first\n');
    expect(old.exited).toBe(true); // its process is gone: a reader is not kept waiting
    expect(eventsOf(f, name, 'START')).toHaveLength(2);
    expect(processesOf(name).map((p) => p.pgid)).toEqual([pid]);
  });

  it('does not adopt forged or copied keys; stops an unregistered app, spares one whose file did not load', async () => {
    f = await fixture();
    const name = appName('forged');
    await f.sup.register({ name, command: 'sleep 60' }, 'a');
    const real = f.sup.get(name);
    const realPid = real?.['pid'] as number;
    await f.sup.detach();
    process.kill(-realPid, 'SIGKILL'); // the real process is gone: nothing legitimate to adopt
    await waitFor(() => !alive(realPid), { what: 'the real process gone' });
    loseSnapshot();
    const forged = spawnClaiming({
      SVC_APPLICATION_NAME: name,
      SVC_PROCESS_UUID: randomUUID(),
      SVC_PROCESS_KEY: randomBytes(32).toString('hex'),
    });
    // A key copied from the real process but paired with another uuid does not verify either.
    const copied = spawnClaiming({
      SVC_APPLICATION_NAME: name,
      SVC_PROCESS_UUID: randomUUID(),
      SVC_PROCESS_KEY: keyOf(f.secret, real?.['process_uuid'] as string),
    });
    // Genuine key, but the app is not registered and has no definition file (a registration whose
    // write never completed): stopped. Genuine key and a definition file that does not load (an
    // operator can repair it): left alone.
    const ghostName = appName('ghost');
    const ghostUuid = randomUUID();
    const ghost = spawnClaiming({
      SVC_APPLICATION_NAME: ghostName,
      SVC_PROCESS_UUID: ghostUuid,
      SVC_PROCESS_KEY: keyOf(f.secret, ghostUuid),
    });
    const brokenName = appName('broken');
    const brokenUuid = randomUUID();
    writeFileSync(join(f.dir, 'work', 'apps', `${brokenName}.yaml`), 'name: [unclosed\n');
    const broken = spawnClaiming({
      SVC_APPLICATION_NAME: brokenName,
      SVC_PROCESS_UUID: brokenUuid,
      SVC_PROCESS_KEY: keyOf(f.secret, brokenUuid),
    });
    await waitFor(
      () =>
        [forged, copied, ghost, broken].every((pid) =>
          readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep'),
        ),
      { what: 'the claiming processes to exec sleep' },
    );

    const logs: string[] = [];
    const b = await f.make({ logger: capturingLogger(logs) });
    const pid = b.get(name)?.['pid'] as number;
    expect(pid).toBeGreaterThan(0);
    expect([forged, copied, realPid]).not.toContain(pid); // started afresh
    if (b.spawner().kind === 'native') {
      // svc-spawner held the killed process's exit: recorded (its start and SIGKILL), then the fresh start.
      expect(b.get(name)?.['starts']).toBe(2);
    } else {
      expect(b.get(name)?.['starts']).toBe(1); // the snapshot was lost: counted from 0 again
    }
    expect(alive(forged) && alive(copied) && alive(broken)).toBe(true);
    await waitFor(() => !alive(ghost), { what: 'the unregistered app process stopped' });
    expect(b.get(ghostName)).toBeUndefined();
    expect(b.get(brokenName)).toBeUndefined();
    expect(logs.some((l) => l.startsWith('warn') && l.includes('not registered (no definition file)'))).toBe(
      true,
    );
    expect(logs.some((l) => l.startsWith('warn') && l.includes('did not load: left alone'))).toBe(true);
  });

  it('two processes claim one app: adopts the newest, stops the other', async () => {
    f = await fixture();
    const name = appName('dup');
    // An older genuine process of the app (e.g. left by an earlier crash) …
    const oldUuid = randomUUID();
    const older = spawnClaiming({
      SVC_APPLICATION_NAME: name,
      SVC_PROCESS_UUID: oldUuid,
      SVC_PROCESS_KEY: keyOf(f.secret, oldUuid),
    });
    await waitFor(() => readFileSync(`/proc/${older}/cmdline`, 'utf8').startsWith('sleep'), {
      what: 'older to exec sleep',
    });
    // … and the newer one, started by the supervisor; both unknown to the snapshot.
    await f.sup.register({ name, command: 'sleep 60' }, 'a');
    const newer = f.sup.get(name)?.['pid'] as number;
    await f.sup.detach();
    loseSnapshot();

    const logs: string[] = [];
    const b = await f.make({ logger: capturingLogger(logs) });
    expect(b.get(name)?.['pid']).toBe(newer);
    await waitFor(() => !alive(older), { what: 'the older duplicate to be stopped' });
    expect(alive(newer)).toBe(true);
    expect(logs.some((l) => l.startsWith('warn') && l.includes('duplicate'))).toBe(true);
    expect(processesOf(name).every((p) => p.pgid === newer)).toBe(true); // nothing else started
  });

  it('a descendant that made itself a group leader is neither adopted nor stopped', async () => {
    f = await fixture();
    const name = appName('setsid');
    await f.sup.register({ name, shell: true, command: 'setsid sleep 60 & echo ready; exec sleep 60' }, 'a');
    const pid = f.sup.get(name)?.['pid'] as number;
    await waitFor(async () => (await readAll(f.sup, name)).includes('ready'), { what: 'ready' });
    const helper = await waitFor(
      () => processesOf(name).find((p) => p.pid !== pid && p.pgid === p.pid && p.pid !== pid)?.pid,
      { what: 'the self-detached helper' },
    );
    extraGroups.push(helper);
    await waitFor(() => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep'), {
      what: 'the app process to exec sleep',
    });
    await f.sup.detach();
    loseSnapshot();

    const b = await f.make();
    expect(b.get(name)?.['pid']).toBe(pid); // the oldest leader of the uuid: the spawned process
    expect(alive(helper)).toBe(true);
    expect(processesOf(name).every((p) => p.pgid === pid || p.pgid === helper)).toBe(true);
  });

  it('stops the orphan of an app whose definition is disabled', async () => {
    f = await fixture({ adoptedPollMs: 50 });
    const name = appName('off');
    await f.sup.register({ name, command: 'sleep 60' }, 'a');
    const pid = f.sup.get(name)?.['pid'] as number;
    await f.sup.detach();
    loseSnapshot();
    // The enable that started it never became durable: the stored definition says disabled.
    const yaml = join(f.dir, 'work/apps', `${name}.yaml`);
    writeFileSync(yaml, `${readFileSync(yaml, 'utf8')}\nenabled: false\n`.replace(/^enabled: true\n/m, ''));

    const b = await f.make();
    await waitFor(() => !alive(pid), { what: 'the orphan of a disabled app to be stopped' });
    await waitFor(() => b.get(name)?.['state'] === 'disabled', { what: 'disabled' });
    expect(processesOf(name)).toEqual([]);
  });

  it('scans /proc within its bound', () => {
    const scan = scanClaimingProcesses({ skip: () => false, maxEntries: 5 });
    expect(scan.entries).toBeLessThanOrEqual(5);
    expect(scan.truncated).toBe(readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length > 5);
    const full = scanClaimingProcesses({ skip: () => false });
    expect(full.truncated).toBe(false);
    expect(full.leaders).toBeGreaterThan(0);
  });
});
