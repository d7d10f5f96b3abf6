// Crash safety: SIGKILL the daemon (or its svc-spawner, or both: rounds rotate) at seeded random points during (a) a stream of registrations,
// replacements and deletes, (b) output capture of a chatty app, (c) one-off runs; restart it on the
// same SVC_HOME and prove that every acknowledged definition is intact, nothing unacknowledged is
// half-written, no managed process is duplicated or orphaned, and output positions continue.
// Seeds are printed; replay one with SVC_CRASH_SEED=<seed> (docs/reliability.md).
import { randomUUID } from 'node:crypto';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  seededRandom,
  soakScaled,
  spawnerPid,
  testSeed,
  type CallResult,
  type TestDaemon,
} from '@svc/testkit';
import {
  COUNTER,
  killGroup,
  ok,
  processAlive,
  serverLog,
  trackDaemons,
  waitFor,
  waitRunning,
  type AppView,
} from '../robustness/helpers.ts';
import { MARK_VARIABLE, definitionPart, markedProcesses, type ManagedProcess } from './helpers.ts';

const { start } = trackDaemons();
/** Kills per scenario (each followed by a restart and the checks). */
const KILLS = soakScaled(3, 8);

let mark = randomUUID();
afterEach(() => {
  // Whatever a failed test left behind.
  for (const p of markedProcesses(mark)) killGroup(p.pid);
  mark = randomUUID();
});

/**
 * What a round SIGKILLs: svcd, its svc-spawner, or both. Rounds rotate through the three when the
 * daemon spawns through svc-spawner (work/run/spawner.pid); in-process, svcd alone.
 */
type Victim = 'svcd' | 'spawner' | 'both';

function victimOf(daemon: TestDaemon, round: number): Victim {
  if (spawnerPid(daemon.workDir) === undefined) return 'svcd';
  return (['svcd', 'spawner', 'both'] as const)[round % 3]!;
}

/** SIGKILL the victim after a seeded random delay in [minMs, maxMs). */
function killLater(
  daemon: TestDaemon,
  victim: Victim,
  random: () => number,
  minMs: number,
  maxMs: number,
): Promise<void> {
  const delay = minMs + Math.floor(random() * (maxMs - minMs));
  return new Promise((resolve) => setTimeout(resolve, delay)).then(async () => {
    const spawner = spawnerPid(daemon.workDir);
    if (victim !== 'svcd' && spawner !== undefined) {
      try {
        process.kill(spawner, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (victim !== 'spawner') await daemon.kill();
  });
}

/** After the kill: the same daemon when only the spawner died (svcd starts a new one), else a restart. */
function recover(first: TestDaemon, daemon: TestDaemon, victim: Victim): Promise<TestDaemon> {
  return victim === 'spawner' ? Promise.resolve(daemon) : start({ home: first.home, issuer: first.issuer });
}

/** Names of work/apps/<name>.yaml files (temp files excluded). */
async function appFiles(daemon: TestDaemon): Promise<string[]> {
  return (await readdir(join(daemon.workDir, 'apps')))
    .filter((f) => f.endsWith('.yaml') && !f.startsWith('.'))
    .map((f) => f.slice(0, -'.yaml'.length));
}

async function listApps(daemon: TestDaemon): Promise<AppView[]> {
  return ok<AppView[]>(
    await daemon.rest().call('GET', '/svc/applications', { token: await daemon.token('admin') }),
    'list',
  );
}

/**
 * Every app file loads (none is half-written), and once the daemon has settled each marked
 * process is the one process of a listed app, started from that app's current definition (its env
 * matches): no duplicates, no orphans, and every app for which `expectRunning` holds has its
 * process. A process of an app whose registration was in flight at the kill and never became
 * durable (no definition file) must be stopped by the restarted daemon: it counts as an orphan
 * until it is gone.
 */
async function expectProcessesSettled(
  daemon: TestDaemon,
  expectRunning: (app: AppView) => boolean,
): Promise<void> {
  const listed = new Set((await listApps(daemon)).map((a) => a.name));
  const files = await appFiles(daemon);
  for (const file of files) expect(listed, `work/apps/${file}.yaml loads`).toContain(file);
  expect(await serverLog(daemon)).not.toMatch(/application file rejected/);
  let problem = '';
  await waitFor(
    async () => {
      const apps = new Map((await listApps(daemon)).map((a) => [a.name, a]));
      const byApp = new Map<string, ManagedProcess[]>();
      for (const p of markedProcesses(mark)) byApp.set(p.app, [...(byApp.get(p.app) ?? []), p]);
      const problems: string[] = [];
      for (const [name, processes] of byApp) {
        const app = apps.get(name);
        const pids = processes.map((p) => p.pid).join(',');
        if (processes.length > 1) problems.push(`${name}: ${processes.length} processes ${pids}`);
        else if (app === undefined)
          problems.push(`${name}: process ${pids} of an app that is not registered`);
        else if (app.pid !== processes[0]!.pid)
          problems.push(`${name}: process ${pids} is not the app's pid ${app.pid}`);
        else {
          const want = (app['env'] as Record<string, string> | undefined)?.['VERSION'];
          const has = processes[0]!.env.get('VERSION');
          if (want !== has)
            problems.push(`${name}: process ${pids} runs VERSION ${has}, the definition says ${want}`);
        }
      }
      for (const app of apps.values())
        if (expectRunning(app) && !byApp.has(app.name)) problems.push(`${app.name}: not running`);
      problem = problems.join('; ');
      return problems.length === 0;
    },
    { timeoutMs: 20_000, intervalMs: 50, what: 'managed processes to settle' },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}: ${problem}`);
  });
}

type State = { present: false } | { present: true; definition: Record<string, unknown> };

describe('crash safety: kill -9 at random points, restart on the same home', () => {
  it('(a) registrations, replacements and deletes: acknowledged = intact, unacknowledged = all or nothing', async () => {
    const seed = testSeed('crash-safety (a) registrations', 'SVC_CRASH_SEED');
    const random = seededRandom(seed);
    const names = Array.from({ length: 4 }, (_, w) => Array.from({ length: 4 }, (_, k) => `reg-${w}-${k}`));
    /** What the last acknowledged request left, per name; and the request in flight at the kill. */
    const acked = new Map<string, State>(names.flat().map((n) => [n, { present: false }]));
    const inflight = new Map<string, { body?: Record<string, unknown> }>();
    let version = 0;
    let acknowledged = 0;
    const first = await start();
    let daemon = first;
    for (let round = 0; round < KILLS; round++) {
      const token = await daemon.token('admin');
      const rest = daemon.rest();
      let killed = false;
      const victim = victimOf(daemon, round);
      console.log(`[reliability] crash-safety (a) round ${round}: SIGKILL ${victim}`);
      const kill = killLater(daemon, victim, random, 100, 700).then(() => void (killed = true));
      // One sequential writer per name group, so each name has at most one request in flight.
      const workers = names.map(async (group) => {
        while (!killed) {
          const name = group[Math.floor(random() * group.length)]!;
          const put = random() < 0.7;
          const running = random() < 0.3;
          const body = put
            ? {
                command: running ? 'sleep 600' : 'true',
                status: running ? 1 : 0,
                description: `v${++version}`,
                env: { [MARK_VARIABLE]: mark, VERSION: String(version) },
              }
            : undefined;
          inflight.set(name, body === undefined ? {} : { body });
          let r: CallResult;
          try {
            r = await rest.call(put ? 'PUT' : 'DELETE', `/svc/app/${name}`, {
              token,
              ...(body ? { body } : {}),
            });
          } catch {
            return; // the daemon died under this request: it stays "in flight"
          }
          if (put) {
            expect(r.status, r.text()).toBe(200);
            acked.set(name, { present: true, definition: definitionPart(r.json<AppView>()) });
          } else {
            expect([200, 404], r.text()).toContain(r.status);
            acked.set(name, { present: false });
          }
          inflight.delete(name);
          acknowledged++;
        }
      });
      await Promise.all([kill, ...workers]);

      daemon = await recover(first, daemon, victim);
      const admin = await daemon.token('admin');
      for (const name of names.flat()) {
        const r = await daemon.rest().call('GET', `/svc/app/${name}`, { token: admin });
        expect([200, 404], r.text()).toContain(r.status);
        const actual: State =
          r.status === 200
            ? { present: true, definition: definitionPart(r.json<AppView>()) }
            : { present: false };
        const before = acked.get(name)!;
        const pending = inflight.get(name);
        const isAcked = isDeepStrictEqual(actual, before);
        const isPending =
          pending !== undefined &&
          (pending.body === undefined
            ? !actual.present
            : actual.present &&
              actual.definition['description'] === pending.body['description'] &&
              actual.definition['command'] === pending.body['command'] &&
              isDeepStrictEqual(actual.definition['env'], pending.body['env']));
        expect(
          isAcked || isPending,
          `seed ${seed} round ${round}: ${name} is ${JSON.stringify(actual)}; acknowledged ${JSON.stringify(before)}, in flight ${JSON.stringify(pending)}`,
        ).toBe(true);
        acked.set(name, actual);
      }
      inflight.clear();
      await expectProcessesSettled(daemon, (app) => app.name.startsWith('reg-') && app.status === 1);
    }
    expect(acknowledged, 'requests were acknowledged between the kills').toBeGreaterThan(KILLS);
  });

  it('(b) output capture of a chatty app: bytes read before the kill are a prefix of what is readable after', async () => {
    const seed = testSeed('crash-safety (b) output', 'SVC_CRASH_SEED');
    const random = seededRandom(seed);
    const first = await start();
    let daemon = first;
    ok(
      await daemon.rest().call('PUT', '/svc/app/chatty', {
        token: await daemon.token('admin'),
        body: { command: COUNTER, shell: true, env: { [MARK_VARIABLE]: mark } },
      }),
      'register chatty',
    );
    const pid = (await waitRunning(daemon, 'chatty')).pid!;
    let seen = Buffer.alloc(0);
    for (let round = 0; round < KILLS; round++) {
      const token = await daemon.token('admin');
      const rest = daemon.rest();
      let killed = false;
      const victim = victimOf(daemon, round);
      console.log(`[reliability] crash-safety (b) round ${round}: SIGKILL ${victim}`);
      const kill = killLater(daemon, victim, random, 200, 900).then(() => void (killed = true));
      // Read by position as a client would, until the daemon dies under the reader.
      while (!killed) {
        let r: CallResult;
        try {
          r = await rest.call('GET', '/svc/app/chatty/output', {
            token,
            query: { stdout_position: String(seen.length), timeout: '1' },
          });
        } catch {
          break;
        }
        expect(r.status, r.text()).toBe(200);
        expect(Number(r.headers['x-output-position']), 'positions never go back').toBe(
          seen.length + r.body.length,
        );
        seen = Buffer.concat([seen, r.body]);
      }
      await kill;
      daemon = await recover(first, daemon, victim);
      // Everything from position 0 again: what was read before is a prefix, byte for byte.
      const again: Buffer[] = [];
      let position = 0;
      const admin = await daemon.token('admin');
      while (position < seen.length) {
        const r = await daemon.rest().call('GET', '/svc/app/chatty/output', {
          token: admin,
          query: { stdout_position: String(position), timeout: '2' },
        });
        expect(r.status, r.text()).toBe(200);
        expect(Number(r.headers['x-output-position'])).toBe(position + r.body.length);
        again.push(r.body);
        position += r.body.length;
      }
      const after = Buffer.concat(again);
      expect(
        after.subarray(0, seen.length).equals(seen),
        `seed ${seed} round ${round}: output before the kill is a prefix`,
      ).toBe(true);
      seen = after;
      // The same process was re-attached (not restarted, not duplicated).
      expect((await waitRunning(daemon, 'chatty')).pid).toBe(pid);
      await expectProcessesSettled(daemon, (app) => app.name === 'chatty');
    }
    expect(seen.length, 'the counter kept writing across the kills').toBeGreaterThan(0);
    expect(processAlive(pid)).toBe(true);
  });

  it('(c) runs and syncruns: acknowledged runs survive, no run process is duplicated or orphaned', async () => {
    const seed = testSeed('crash-safety (c) runs', 'SVC_CRASH_SEED');
    const random = seededRandom(seed);
    const first = await start();
    let daemon = first;
    const ackedRuns = new Set<string>();
    for (let round = 0; round < KILLS; round++) {
      const token = await daemon.token('admin');
      const rest = daemon.rest();
      let killed = false;
      const victim = victimOf(daemon, round);
      console.log(`[reliability] crash-safety (c) round ${round}: SIGKILL ${victim}`);
      const kill = killLater(daemon, victim, random, 100, 700).then(() => void (killed = true));
      const workers = Array.from({ length: 3 }, async () => {
        while (!killed) {
          const sync = random() < 0.4;
          let r: CallResult;
          try {
            r = await rest.call('POST', sync ? '/svc/app/syncrun' : '/svc/app/run', {
              token,
              body: sync
                ? { command: 'echo synced', env: { [MARK_VARIABLE]: mark } }
                : { command: 'sleep 600', env: { [MARK_VARIABLE]: mark } },
            });
          } catch {
            return;
          }
          expect(r.status, r.text()).toBe(200);
          if (sync) expect(r.text()).toBe('synced\n');
          else ackedRuns.add(r.json<{ name: string }>().name);
        }
      });
      await Promise.all([kill, ...workers]);
      daemon = await recover(first, daemon, victim);
      const listed = new Set((await listApps(daemon)).map((a) => a.name));
      for (const name of ackedRuns)
        expect(listed, `seed ${seed} round ${round}: acknowledged run ${name}`).toContain(name);
      await expectProcessesSettled(daemon, (app) => ackedRuns.has(app.name));
    }
    expect(ackedRuns.size, 'some runs were acknowledged').toBeGreaterThan(0);
  });

  it('(d) the write-ahead log: acknowledged definitions whose files never reached the disk are replayed', async () => {
    // An acknowledgement waits for the definition's record in work/apps/.journal only; its YAML
    // file is made durable just after. A power loss at that moment is simulated here: kill -9
    // right after the answers, then every file written since is truncated or removed (what the
    // disk could hold if its data and the renames had not reached it), and a deleted app's file
    // put back. The restarted daemon must show exactly the acknowledged state, processes adopted.
    const first = await start();
    const token = await first.token('admin');
    const rest = first.rest();
    const names = Array.from({ length: 6 }, (_, i) => `wal-${i}`);
    const acked = new Map<string, Record<string, unknown>>();
    await Promise.all(
      names.map(async (name, i) => {
        const body = {
          command: i % 2 === 0 ? 'sleep 600' : 'true',
          status: i % 2 === 0 ? 1 : 0,
          description: `wal ${i}`,
          env: { [MARK_VARIABLE]: mark, VERSION: String(i) },
        };
        const r = ok<AppView>(await rest.call('PUT', `/svc/app/${name}`, { token, body }), `PUT ${name}`);
        acked.set(name, definitionPart(r));
      }),
    );
    const deleted = 'wal-5';
    ok(await rest.call('DELETE', `/svc/app/${deleted}`, { token }), `DELETE ${deleted}`);
    acked.delete(deleted);
    await first.kill();
    const apps = join(first.workDir, 'apps');
    await writeFile(join(apps, 'wal-0.yaml'), '');
    await writeFile(join(apps, 'wal-1.yaml'), Buffer.alloc(64));
    await rm(join(apps, 'wal-2.yaml'));
    await writeFile(join(apps, `${deleted}.yaml`), `name: ${deleted}\ncommand: "true"\nenabled: false\n`);

    const daemon = await start({ home: first.home, issuer: first.issuer });
    const admin = await daemon.token('admin');
    for (const name of names) {
      const r = await daemon.rest().call('GET', `/svc/app/${name}`, { token: admin });
      if (name === deleted) expect(r.status, `${name} stays deleted`).toBe(404);
      else {
        expect(r.status, `${name}: ${r.text()}`).toBe(200);
        expect(definitionPart(r.json<AppView>()), name).toEqual(acked.get(name));
      }
    }
    await expectProcessesSettled(daemon, (app) => app.name.startsWith('wal-') && app.status === 1);
  });
});
