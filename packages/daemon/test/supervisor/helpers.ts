// Shared fixture: a real supervisor in a temp work dir, an event log, and cleanup that kills every
// process group the test started.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/log/logger.ts';
import { createSecretCrypter } from '../../src/model/secret-crypter.ts';
import { readProcStat } from '../../src/supervisor/proc-stats.ts';
import { createSupervisor } from '../../src/supervisor/supervisor.ts';
import type { Supervisor, SupervisorOptions } from '../../src/supervisor/supervisor.ts';
import type { OutputQuery, SupervisorEvent } from '../../src/supervisor/types.ts';
import { waitFor } from '../helpers/wait-for.ts';

export interface Fixture {
  dir: string;
  /** This fixture's process-key secret (shared by every supervisor it makes). */
  secret: Buffer;
  sup: Supervisor;
  events: SupervisorEvent[];
  pids: Set<number>;
  make(extra?: Partial<SupervisorOptions>): Promise<Supervisor>;
  cleanup(): Promise<void>;
}

export const crypter = createSecretCrypter(Buffer.alloc(32, 7));

function spawnerModeOf(value: string | undefined): 'native' | 'inprocess' | 'auto' {
  return value === 'native' || value === 'inprocess' ? value : 'auto';
}

export async function fixture(extra: Partial<SupervisorOptions> = {}): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sup-'));
  const events: SupervisorEvent[] = [];
  const pids = new Set<number>();
  const supervisors: Supervisor[] = [];
  // Every fixture has its own secret, as every installation does: the orphan scan of one test
  // never recognizes another (concurrent) test's processes.
  const secret = extra.processKeySecret ?? randomBytes(32);
  const make = async (more: Partial<SupervisorOptions> = {}): Promise<Supervisor> => {
    const sup = await createSupervisor({
      workDir: join(dir, 'work'),
      crypter,
      daemonUrl: 'https://127.0.0.1:16058',
      logger: silentLogger,
      processKeySecret: secret,
      stopGraceMs: 1000,
      healthIntervalMs: 100,
      // SVC_SPAWNER=inprocess runs a suite on the fallback path (the *-inprocess.test.ts files).
      spawnerMode: spawnerModeOf(process.env['SVC_SPAWNER']),
      ...extra,
      ...more,
    });
    sup.onEvent((event) => {
      events.push(event);
      if (event.type === 'START') pids.add(event.pid);
    });
    supervisors.push(sup);
    return sup;
  };
  const sup = await make();
  return {
    dir,
    secret,
    sup,
    events,
    pids,
    make,
    async cleanup() {
      for (const s of supervisors) await s.detach();
      for (const s of supervisors)
        for (const app of s.list()) if (typeof app['pid'] === 'number') pids.add(app['pid']);
      for (const pid of pids) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function query(over: Partial<OutputQuery> = {}): OutputQuery {
  return { position: 0, index: 0, maxSize: undefined, processUuid: undefined, timeoutMs: 0, ...over };
}

export function eventsOf(f: Fixture, app: string, type?: SupervisorEvent['type']): SupervisorEvent[] {
  return f.events.filter((e) => e.app === app && (type === undefined || e.type === type));
}

export async function waitExit(
  f: Fixture,
  app: string,
  count = 1,
): Promise<Extract<SupervisorEvent, { type: 'EXIT' }>> {
  const exits = await waitFor(
    () => {
      const list = eventsOf(f, app, 'EXIT');
      return list.length >= count ? list : undefined;
    },
    { what: `${count} EXIT of ${app}` },
  );
  return exits[count - 1] as Extract<SupervisorEvent, { type: 'EXIT' }>;
}

export async function readAll(
  sup: Supervisor,
  app: string,
  over: Partial<OutputQuery> = {},
): Promise<string> {
  let position = 0;
  const parts: Buffer[] = [];
  for (;;) {
    const chunk = await sup.readOutput(app, query({ ...over, position }));
    if (chunk.output.length === 0) break;
    parts.push(chunk.output);
    position = chunk.position;
  }
  return Buffer.concat(parts).toString();
}

/** Alive and not a zombie (a reparented grandchild may linger as a zombie in a container). */
export function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}
