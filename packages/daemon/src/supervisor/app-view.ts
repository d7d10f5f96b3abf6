// The application view the API returns (spec/contract.md §7 runtime fields): the public definition
// plus the lifecycle's runtime state, and, for reads (`usage`), the process group's memory, cpu,
// fds and tree from /proc.
import { toPublicView } from '../model/app-definition.ts';
import { daemonUser } from '../privilege/os-user.ts';
import type { DefinitionSource } from './definition-sources.ts';
import type { LifecycleHook } from './hooks/hook.ts';
import type { AppLifecycle } from './lifecycle.ts';
import type { OutputStore } from './output-store.ts';
import { CLOCK_TICKS, countOpenFds, readGroupUsage, readProcessUid, userName } from './proc-stats.ts';
import type { ResourceLimiter } from './resource-limit.ts';
import type { AppView } from './types.ts';

export interface AppViewContext {
  now: () => number;
  output: OutputStore;
  limiter: ResourceLimiter;
  /** resource_limit_status of each app as last applied. */
  limitStatus: ReadonlyMap<string, string>;
  /** The previous cpu sample per app (cpu is averaged since the previous view). */
  cpuSamples: CpuSamples;
  sourceOf: (name: string) => DefinitionSource | undefined;
  conflictOf: (name: string) => string | undefined;
}

export type CpuSamples = Map<string, { ticks: number; at: number; uuid: string }>;

/** The cpu samples of a process go with it (and with its app). */
export class CpuSamplesHook implements LifecycleHook {
  readonly samples: CpuSamples = new Map();

  exited(app: AppLifecycle): void {
    this.samples.delete(app.name);
  }

  removed(app: AppLifecycle): void {
    this.samples.delete(app.name);
  }
}

/** Times in the app view are epoch seconds (App Mesh 3.0). */
const epochSeconds = (ms: number | undefined): number | undefined =>
  ms === undefined ? undefined : Math.floor(ms / 1000);

/**
 * The app view. `usage` adds memory/cpu of the process group (read from /proc, bounded): only for
 * get/list, not for the answer of a mutation (register, enable...), which stays off /proc.
 */
export function appView(app: AppLifecycle, context: AppViewContext, usage = true): AppView {
  const { now, output, limiter, limitStatus, cpuSamples } = context;
  const v = toPublicView(app.def) as AppView;
  const r = app.runtime;
  const p = app.process;
  v['state'] = app.state;
  if (p !== undefined) {
    v['pid'] = p.pid;
    // The user svc started it as; for other processes /proc below (with usage) is exact.
    v['pid_user'] = p.user ?? daemonUser();
    v['process_uuid'] = p.processUuid;
    if (p.external === true) {
      v['adopted'] = true;
      v['output_captured'] = false;
    }
    const group = usage ? readGroupUsage(p.pid) : undefined;
    if (usage) {
      // A process svc started as an execution user is that user (the helper may not have switched
      // yet in the first instants, /proc would say root); others are read from /proc.
      const uid = p.user === undefined ? readProcessUid(p.pid) : undefined;
      if (uid !== undefined) v['pid_user'] = userName(uid);
      const fds = countOpenFds(p.pid);
      if (fds !== undefined) v['fd'] = fds;
    }
    if (group !== undefined) {
      v['memory'] = group.rssBytes;
      v['processes'] = group.processes;
      v['pstree'] = group.tree;
      // cpu: percent of one core since the previous view of this process (or since its start).
      const t = now();
      const previous = cpuSamples.get(app.name);
      const fresh = previous === undefined || previous.uuid !== p.processUuid;
      if (fresh && p.adopted) {
        v['cpu'] = 0; // ticks before the adoption are not this supervision's to average
      } else {
        const base = fresh ? { ticks: 0, at: p.startedAt } : previous;
        const elapsed = Math.max(1, t - base.at);
        const ticks = Math.max(0, group.cpuTicks - base.ticks);
        v['cpu'] = Math.round((ticks / CLOCK_TICKS / (elapsed / 1000)) * 10000) / 100;
      }
      cpuSamples.set(app.name, { ticks: group.cpuTicks, at: t, uuid: p.processUuid });
    }
  } else if (r.uuids[0] !== undefined) {
    v['process_uuid'] = r.uuids[0];
  }
  if (r.returnCode !== undefined) v['return_code'] = r.returnCode;
  else if (r.lastExitAt !== undefined) v['return_code'] = null;
  v['health'] = app.computeHealth();
  v['starts'] = r.starts;
  const set = (key: string, value: string | number | undefined): void => {
    if (value !== undefined) v[key] = value;
  };
  set('last_start_time', epochSeconds(r.lastStartAt));
  set('last_exit_time', epochSeconds(r.lastExitAt));
  set('next_start_time', epochSeconds(app.nextStartAt));
  set('last_error', r.lastError);
  v['stdout_file_count'] = output.cacheSize(app.name);
  if (app.state === 'waiting' && app.waitingFor !== undefined) v['waiting_for'] = [...app.waitingFor];
  if (app.def.owner_principal_id !== undefined) v['owner_display_name'] = app.def.owner_principal_id;
  if (app.def.resource_limit !== undefined) {
    v['resource_limit_status'] =
      limitStatus.get(app.name) ?? (limiter.status === 'supported' ? 'not applied yet' : limiter.status);
  }
  if (app.transient !== undefined) v['transient'] = true;
  if (context.sourceOf(app.name) === 'cluster') v['cluster'] = true;
  const conflict = context.conflictOf(app.name);
  if (conflict !== undefined) v['cluster_conflict'] = conflict;
  return v;
}
