// Registration by `pid` (CONTRACT §7): the app adopts a running process that svc did not start
// instead of spawning one. Who may adopt what is privilege/adoption.ts's; this file reads the
// facts, applies those rules, and installs the app through the registry's one install path.
import { pid as daemonPid } from 'node:process';
import { SvcError } from '@svc/protocol';
import type { AppDefinition } from '../model/app-definition.ts';
import { adoptionRefusal, readProcessFacts, type AdoptionRules } from '../privilege/adoption.ts';
import type { AdoptedHook } from './hooks/adopted.ts';
import type { ExecutionUsers } from './hooks/identity.ts';
import type { AppLifecycle, RunningProcess } from './lifecycle.ts';
import { isSameProcess, readProcStat } from './proc-stats.ts';
import type { AppRegistry } from './registry.ts';
import type { SnapshotWriter } from './snapshot.ts';

/**
 * privilege/adoption.ts's rules for processes of a caller running as `callerUid`: svcd, svc-spawner
 * (`spawnerPid`, 0 when none) and every running system app's process are protected, and so are
 * svcd's and the spawner's process groups.
 */
export function adoptionRules(
  callerUid: number,
  spawnerPid: number,
  apps: Iterable<AppLifecycle>,
): AdoptionRules {
  const protectedPids = new Set<number>([daemonPid]);
  if (spawnerPid > 0) protectedPids.add(spawnerPid);
  for (const other of apps)
    if (other.def.system && other.process !== undefined) protectedPids.add(other.process.pid);
  const protectedGroups = new Set<number>([readProcStat(daemonPid)?.pgid ?? daemonPid]);
  if (spawnerPid > 0) protectedGroups.add(spawnerPid);
  return { callerUid, protectedPids, protectedGroups };
}

export interface PidAdoptionContext {
  registry: AppRegistry;
  users: ExecutionUsers;
  rulesFor: (callerUid: number) => AdoptionRules;
  /** The start time of a running process of ours (read on first need: hooks/snapshot.ts). */
  startTicksOf: (process: RunningProcess) => number;
  adopted: Pick<AdoptedHook, 'watch'>;
  snapshot: Pick<SnapshotWriter, 'schedule' | 'flush'>;
}

/**
 * Register `def` by adopting the running process `def.pid` instead of spawning (CONTRACT §7).
 * Refused when /proc/<pid> does not exist (or is a zombie), when privilege/adoption.ts refuses it
 * (not the caller's execution user's, pid 1, a kernel thread, svc's own processes), or when the
 * process (or its process group) is already managed. The process's start time is recorded, and
 * the snapshot is written before acknowledging, so a daemon restart re-attaches to it. The
 * definition is durable before anything is adopted or stopped (never killed on a failed write).
 */
export async function adoptByPid(
  context: PidAdoptionContext,
  def: AppDefinition,
  existing: AppLifecycle | undefined,
): Promise<AppLifecycle> {
  const { registry } = context;
  const pid = def.pid as number;
  const stat = readProcStat(pid);
  const facts = readProcessFacts(pid);
  if (stat === undefined || stat.state === 'Z' || facts === undefined)
    throw new SvcError('invalid_app', 'pid: no such process');
  const callerUid = context.users.executionUid(def);
  if (callerUid === undefined)
    throw new SvcError('invalid_app', 'pid: the execution user of the owner does not exist on this host');
  const refusal = adoptionRefusal(pid, facts, context.rulesFor(callerUid));
  if (refusal !== undefined) throw new SvcError('invalid_app', refusal);
  const current = existing?.process;
  const keep =
    current !== undefined && current.pid === pid && context.startTicksOf(current) === stat.startTicks;
  if (!keep) {
    for (const other of registry.apps.values()) {
      const p = other.process;
      if (p === undefined) continue;
      if (p.pid === pid)
        throw new SvcError('invalid_app', `pid: process ${pid} is already managed by ${other.name}`);
      if (p.signalPidOnly !== true && stat.pgid === p.pid)
        throw new SvcError('invalid_app', `pid: process ${pid} is in the process group of ${other.name}`);
    }
  }
  if (existing !== undefined && keep) {
    // Echoed back (GET then PUT): the process is the one already adopted; keep it running.
    await registry.save(def, 'local');
    existing.replace(def);
    context.snapshot.schedule();
    return existing;
  }
  const app = await registry.install(
    {
      def,
      source: 'local',
      saveFirst: true,
      begin: (target) => {
        if (isSameProcess(pid, stat.startTicks)) {
          target.adoptExternal(pid, stat.startTicks);
          context.adopted.watch(target);
        } else {
          target.decide(); // it exited meanwhile: as if adopted and gone at once (the command runs)
        }
      },
    },
    existing,
  );
  await context.snapshot.flush();
  return app;
}
