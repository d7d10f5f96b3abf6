// pm2 7 as a Manager, through its programmatic API, with a temp PM2_HOME; its God daemon is
// killed at the end.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killGroup, onCleanup, waitFor } from '../lib/util.ts';
import type { AppSpec, Manager, Timed } from './types.ts';
import type * as Pm2Module from 'pm2';

type Pm2 = typeof Pm2Module;

const require = createRequire(import.meta.url);

function promised<T>(fn: (cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));
}

interface Pm2Proc {
  pid?: number;
  process?: { pid?: number };
  pm2_env?: { pid?: number; status?: string; restart_time?: number };
}

export interface Pm2Manager extends Manager {
  /** The connected programmatic API (events benchmark: launchBus). */
  readonly api: Pm2;
}

export async function startPm2(): Promise<Pm2Manager> {
  const home = await mkdtemp(join(tmpdir(), 'svc-bench-pm2-'));
  // The module-level pm2 instance fixes its home when first required; a custom instance per run
  // takes its own (and the daemon it launches inherits PM2_HOME from the environment).
  process.env['PM2_HOME'] = home;
  const Api = (require('pm2') as { custom: new (options: { pm2_home: string; daemon_mode: boolean }) => Pm2 }).custom;
  const pm2 = new Api({ pm2_home: home, daemon_mode: true });
  const version = (require('pm2/package.json') as { version: string }).version;
  const seen = new Set<number>();
  let daemonPid = 0;
  const cleanup = onCleanup('pm2 daemon', async () => {
    try {
      await promised<unknown>((cb) => pm2.delete('all', cb)).catch(() => undefined);
      await promised<unknown>((cb) => pm2.killDaemon(cb)).catch(() => undefined);
      pm2.disconnect();
    } finally {
      for (const pid of seen) killGroup(pid);
      if (daemonPid > 0) killGroup(daemonPid);
      await rm(home, { recursive: true, force: true });
    }
  });
  await promised<void>((cb) => pm2.connect((err) => cb(err, undefined)));
  daemonPid = await waitFor(
    'pm2.pid',
    async () => Number((await readFile(join(home, 'pm2.pid'), 'utf8').catch(() => '')).trim()) || undefined,
    10_000,
    20,
  );
  const pids = new Map<string, number>();
  const pidOfProc = (proc: Pm2Proc | undefined): number => proc?.process?.pid ?? proc?.pm2_env?.pid ?? proc?.pid ?? 0;
  return {
    kind: 'pm2',
    api: pm2,
    version: `pm2 ${version}`,
    pid: daemonPid,
    async prepare() {},
    async start(spec: AppSpec): Promise<Timed<void>> {
      const procs = await promised<Pm2Proc[]>((cb) =>
        pm2.start(
          {
            name: spec.name,
            script: spec.argv[0] as string,
            args: spec.argv.slice(1),
            interpreter: 'none',
            autorestart: spec.restart,
            restart_delay: 0,
          },
          cb as (err: Error, procs: unknown) => void,
        ),
      );
      const pid = pidOfProc(procs[0]);
      pids.set(spec.name, pid);
      if (pid > 0) seen.add(pid);
      return { value: undefined };
    },
    async pidOf(name) {
      return pids.get(name) ?? 0;
    },
    async stop(name): Promise<Timed<void>> {
      await promised<unknown>((cb) => pm2.stop(name, cb));
      return { value: undefined };
    },
    async remove(name) {
      await promised<unknown>((cb) => pm2.delete(name, cb)).catch((error: unknown) => {
        // A crashed app pm2 already forgot is fine; anything else is not.
        if (!String(error).includes('not found')) throw error;
      });
      const pid = pids.get(name);
      if (pid !== undefined && pid > 0) killGroup(pid);
      pids.delete(name);
    },
    close: cleanup,
  };
}
