// `svc daemon stop [--all]` against a real svcd with real children: without --all only svcd stops
// (managed processes keep running, as with Ctrl-C); with --all svcd, every app's process group (its
// own children included) and the system applications are gone afterwards. Pid records it cannot
// trust are never signalled.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { svcEnv, type SvcEnv } from './helpers.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function stat(pid: number): { pgid: number; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, pgid: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

const alive = (pid: number): boolean => {
  const s = stat(pid);
  return s !== undefined && s.state !== 'Z';
};

/** Every live process in one of these process groups. */
function groupMembers(pgids: Set<number>): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      const s = stat(pid);
      return s !== undefined && s.state !== 'Z' && pgids.has(s.pgid);
    });
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // Bounded condition poll (process start, pid files).
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function daemonWithChildren(): Promise<{ daemon: TestDaemon; svc: SvcEnv; pgids: Set<number> }> {
  const daemon = await startTestDaemon({ agent: true });
  cleanups.push(() => daemon.close());
  const svc = await svcEnv({ SVC_HOME: daemon.home });
  cleanups.push(() => svc.cleanup());
  const token = await daemon.token('admin');
  const rest = daemon.rest();
  const apps = {
    sleeper: { command: 'sleep 600' },
    // A shell whose own child would outlive a signal to the shell alone.
    forker: { command: 'sleep 600 & sleep 600 & wait', shell: true },
  };
  const pgids = new Set<number>();
  for (const [name, body] of Object.entries(apps)) {
    expect((await rest.call('PUT', `/svc/app/${name}`, { token, body })).status).toBe(200);
    pgids.add(
      await until(`${name} pid`, async () => {
        const pid = (await rest.call('GET', `/svc/app/${name}`, { token })).json<{ pid?: number }>().pid;
        return pid !== undefined && pid > 0 ? pid : undefined;
      }),
    );
  }
  const { agentPort } = await daemon.agent();
  expect(agentPort).toBeGreaterThan(0);
  const agentPid = await until('agent pid', async () => {
    const list = (await rest.call('GET', '/svc/applications', { token })).json<
      { name: string; pid?: number }[]
    >();
    return list.find((app) => app.name === 'agent')?.pid;
  });
  pgids.add(agentPid);
  // The forker's two sleeps are in its group before the test goes on.
  await until('forker children', () => (groupMembers(pgids).length >= 5 ? true : undefined));
  return { daemon, svc, pgids };
}

describe('svc daemon stop', () => {
  it('--all stops svcd, every supervised process group and the system apps: nothing is left', async () => {
    const { daemon, svc, pgids } = await daemonWithChildren();
    const members = groupMembers(pgids);
    const result = await svc.run(['daemon', 'stop', '--all']);
    expect(result.stderr).toContain(`svcd (pid ${daemon.pid}) stopped.`);
    expect(result.stderr).toMatch(/Stopped 3 supervised application\(s\): agent, forker, sleeper\./);
    expect(result.code).toBe(0);
    await daemon.exited;
    expect(members.filter(alive)).toEqual([]);
    expect(groupMembers(pgids)).toEqual([]);
  });

  it('without --all stops svcd only: managed processes keep running', async () => {
    const { daemon, svc, pgids } = await daemonWithChildren();
    const result = await svc.run(['daemon', 'stop']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/keep running/);
    await daemon.exited;
    expect(groupMembers(pgids).length).toBeGreaterThanOrEqual(5);
    // Then --all finds svcd gone and stops what it left.
    const all = await svc.run(['daemon', 'stop', '--all']);
    expect(all.code).toBe(0);
    expect(all.stderr).toContain('svcd is not running');
    expect(groupMembers(pgids)).toEqual([]);
  });

  it.each([
    [
      'a pid record of another process (start time differs)',
      JSON.stringify({ pid: process.pid, start_ticks: 1 }),
      0,
    ],
    ['pid 1', JSON.stringify({ pid: 1, start_ticks: 1 }), 1],
    ['a negative pid (a process group)', JSON.stringify({ pid: -process.pid, start_ticks: 1 }), 1],
    ['garbage', '\u0000{not json', 1],
    [
      'an oversized record',
      JSON.stringify({ pid: process.pid, start_ticks: 1, x: 'y'.repeat(1_000_000) }),
      0,
    ],
  ])('never signals what %s names', async (_what, pidFile, code) => {
    const home = await mkdtemp(join(tmpdir(), 'svc-stop-hostile-'));
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    await mkdir(join(home, 'work'));
    await writeFile(join(home, 'work', 'svcd.pid'), pidFile);
    // A snapshot naming this test process and init: neither may be signalled.
    await writeFile(
      join(home, 'work', '.snapshot'),
      JSON.stringify({
        version: 1,
        processes: [
          { app: 'me', pid: process.pid, startTicks: 1 },
          { app: 'init', pid: 1, startTicks: 0 },
          { app: 'bad', pid: 'x', startTicks: 'y' },
        ],
        apps: {},
      }),
    );
    const svc = await svcEnv({ SVC_HOME: home });
    cleanups.push(() => svc.cleanup());
    const result = await svc.run(['daemon', 'stop', '--all']);
    expect(result.code).toBe(code);
    expect(result.stderr.length).toBeLessThan(2000);
    expect(alive(process.pid)).toBe(true);
  });

  it('refuses other subcommands', async () => {
    const svc = await svcEnv({ SVC_HOME: tmpdir() });
    cleanups.push(() => svc.cleanup());
    expect((await svc.run(['daemon'])).code).toBe(2);
    expect((await svc.run(['daemon', 'start'])).code).toBe(2);
    expect((await svc.run(['daemon', 'stop', 'extra'])).code).toBe(2);
  });
});
