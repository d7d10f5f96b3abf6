// Cluster placement (spec "Cluster-mode behavior" 3; CONTRACT §9): a pure function from the cluster
// tasks, the live node reports, the current topology and a clock to the next topology. The leader
// calls it on every pass and writes only the host keys that changed (`diffTopology`).
//
// Decide in two passes, in the spirit of Nomad's reconciler:
//
//   current topology ──► keep ──► (kept placements) ──► place ──► next topology
//                        │                               │
//                        drops a placement whose task     adds replicas of tasks short of
//                        is gone or shrank, whose node    `replication` on eligible nodes that
//                        is gone / no worker / no longer  hold none yet, least loaded first
//                        matches, or that no longer fits
//
// Contracts:
// - Eligible node: its report's `label.WORKER` is "true" and every `condition` entry matches
//   (`HOST_NAME` matches the host name; any other key the label of that name; `*` = any run of
//   characters, `?` = one; a missing label never matches).
// - Memory: the sum of `memoryMB` placed on a node never exceeds its `mem_total_bytes`.
// - Replicas of one task are on distinct nodes; never more than `replication` (0 = none placed).
// - Stability: a placement on a live, eligible node that still fits is kept with its
//   `schedule_time`; only new placements get `now`. Scheduling the result again with the same
//   tasks and nodes returns it unchanged. When a node is over-committed (a task's `memoryMB` grew),
//   older placements win (by `schedule_time`, then app, then host).
// - Deterministic: the same input gives the same output (hosts and entries in name order).
// - `port` plays no part in placement (services are the workers' business).
import type { ClusterTask, NodeReport, Topology, TopologyEntry } from './records.ts';

export interface ScheduleInput {
  readonly tasks: Readonly<Record<string, ClusterTask>>;
  readonly nodes: Readonly<Record<string, NodeReport>>;
  readonly current: Readonly<Topology>;
  readonly now: Date;
}

const MIB = 1024 * 1024;

/** `YYYY-MM-DD HH:MM:SS+00` in UTC (the spec's topology timestamp with a numeric offset). */
export function formatScheduleTime(now: Date): string {
  const iso = now.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}+00`;
}

/**
 * Glob match with `*` (any run, also empty) and `?` (exactly one character); everything else is
 * literal. Linear backtracking over the last `*` (no regular expression, so no catastrophic cases).
 */
export function matchesWildcard(pattern: string, value: string): boolean {
  let p = 0;
  let v = 0;
  let starP = -1;
  let starV = 0;
  while (v < value.length) {
    const c = pattern[p];
    if (c === '*') {
      starP = p++;
      starV = v;
    } else if (c !== undefined && (c === '?' || c === value[v])) {
      p++;
      v++;
    } else if (starP >= 0) {
      p = starP + 1;
      v = ++starV;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

export function isWorker(node: NodeReport): boolean {
  return node.label['WORKER'] === 'true';
}

/** Does `node` (reported under `host`) satisfy every entry of `condition`? */
export function matchesCondition(
  condition: Readonly<Record<string, string>>,
  host: string,
  node: NodeReport,
): boolean {
  for (const [key, pattern] of Object.entries(condition)) {
    const value = key === 'HOST_NAME' ? host : node.label[key];
    if (value === undefined || !matchesWildcard(pattern, value)) return false;
  }
  return true;
}

interface NodeState {
  readonly host: string;
  readonly report: NodeReport;
  freeBytes: number;
  readonly entries: TopologyEntry[];
  readonly apps: Set<string>;
}

interface Placement {
  readonly host: string;
  readonly app: string;
  readonly scheduleTime: string;
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function taskBytes(task: ClusterTask): number {
  return task.memoryMB * MIB;
}

function liveWorkers(nodes: Readonly<Record<string, NodeReport>>): Map<string, NodeState> {
  const states = new Map<string, NodeState>();
  for (const host of Object.keys(nodes).sort(byName)) {
    const report = nodes[host];
    if (report === undefined || !isWorker(report)) continue;
    states.set(host, {
      host,
      report,
      freeBytes: report.resource.mem_total_bytes,
      entries: [],
      apps: new Set(),
    });
  }
  return states;
}

function assign(node: NodeState, app: string, task: ClusterTask, scheduleTime: string): void {
  node.freeBytes -= taskBytes(task);
  node.entries.push({ app, schedule_time: scheduleTime });
  node.apps.add(app);
}

/** Current placements that may stay, oldest first (their order decides who wins a conflict). */
function keepCandidates(input: ScheduleInput, workers: Map<string, NodeState>): Placement[] {
  const candidates: Placement[] = [];
  for (const [host, entries] of Object.entries(input.current)) {
    const node = workers.get(host);
    if (node === undefined || !Array.isArray(entries)) continue;
    for (const entry of entries) {
      const task = Object.hasOwn(input.tasks, entry.app) ? input.tasks[entry.app] : undefined;
      if (task === undefined || task.replication === 0) continue;
      if (!matchesCondition(task.condition, host, node.report)) continue;
      candidates.push({ host, app: entry.app, scheduleTime: entry.schedule_time });
    }
  }
  return candidates.sort(
    (a, b) => byName(a.scheduleTime, b.scheduleTime) || byName(a.app, b.app) || byName(a.host, b.host),
  );
}

function keep(input: ScheduleInput, workers: Map<string, NodeState>, placed: Map<string, number>): void {
  for (const candidate of keepCandidates(input, workers)) {
    const task = input.tasks[candidate.app];
    const node = workers.get(candidate.host);
    if (task === undefined || node === undefined) continue;
    const count = placed.get(candidate.app) ?? 0;
    if (count >= task.replication || node.apps.has(candidate.app)) continue;
    if (taskBytes(task) > node.freeBytes) continue;
    assign(node, candidate.app, task, candidate.scheduleTime);
    placed.set(candidate.app, count + 1);
  }
}

/** Least loaded first: fewest placements, then most free memory, then host name. */
function byLoad(a: NodeState, b: NodeState): number {
  return a.entries.length - b.entries.length || b.freeBytes - a.freeBytes || byName(a.host, b.host);
}

/** The `count` best of `candidates` by `byLoad`, best first (a partial selection: `count` is small). */
function leastLoaded(candidates: readonly NodeState[], count: number): NodeState[] {
  const best: NodeState[] = [];
  for (const node of candidates) {
    if (best.length === count && byLoad(node, best[count - 1]!) >= 0) continue;
    let at = best.length;
    while (at > 0 && byLoad(node, best[at - 1]!) < 0) at--;
    best.splice(at, 0, node);
    if (best.length > count) best.pop();
  }
  return best;
}

function place(input: ScheduleInput, workers: Map<string, NodeState>, placed: Map<string, number>): void {
  const nodes = [...workers.values()];
  const scheduleTime = formatScheduleTime(input.now);
  // Larger tasks first, so small ones do not fragment the memory big ones need.
  const pending = Object.keys(input.tasks)
    .filter((app) => (placed.get(app) ?? 0) < (input.tasks[app]?.replication ?? 0))
    .sort((a, b) => (input.tasks[b]?.memoryMB ?? 0) - (input.tasks[a]?.memoryMB ?? 0) || byName(a, b));
  for (const app of pending) {
    const task = input.tasks[app];
    if (task === undefined) continue;
    const bytes = taskBytes(task);
    const missing = task.replication - (placed.get(app) ?? 0);
    const fitting = nodes.filter(
      (node) =>
        !node.apps.has(app) &&
        bytes <= node.freeBytes &&
        matchesCondition(task.condition, node.host, node.report),
    );
    const chosen = missing >= fitting.length ? fitting : leastLoaded(fitting, missing);
    for (const node of chosen) assign(node, app, task, scheduleTime);
    placed.set(app, (placed.get(app) ?? 0) + chosen.length);
  }
}

/** The next topology: only hosts with at least one placement, hosts and entries in name order. */
export function schedule(input: ScheduleInput): Topology {
  const workers = liveWorkers(input.nodes);
  const placed = new Map<string, number>();
  keep(input, workers, placed);
  place(input, workers, placed);
  // fromEntries defines own properties, so even a host named `__proto__` is an ordinary key.
  return Object.fromEntries(
    [...workers.values()]
      .filter((node) => node.entries.length > 0)
      .map((node) => [node.host, [...node.entries].sort((a, b) => byName(a.app, b.app))]),
  );
}

export interface TopologyDiff {
  /** Host keys to write, with their new entries. */
  readonly put: Topology;
  /** Host keys to delete (nothing placed there any more). */
  readonly remove: readonly string[];
}

function sameEntries(a: readonly TopologyEntry[] | undefined, b: readonly TopologyEntry[]): boolean {
  return (
    a !== undefined &&
    a.length === b.length &&
    a.every((entry, i) => entry.app === b[i]?.app && entry.schedule_time === b[i]?.schedule_time)
  );
}

/** What the leader must write to turn `current` into `next` (unchanged hosts are left alone). */
export function diffTopology(current: Readonly<Topology>, next: Readonly<Topology>): TopologyDiff {
  const put: Topology = Object.fromEntries(
    Object.entries(next).filter(
      ([host, entries]) => !sameEntries(Object.hasOwn(current, host) ? current[host] : undefined, entries),
    ),
  );
  const remove = Object.keys(current)
    .filter((host) => !Object.hasOwn(next, host))
    .sort(byName);
  return { put, remove };
}
