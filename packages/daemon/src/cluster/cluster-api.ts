// What the /svc/cluster/* operations read and write in the registry (api/operations/cluster.ts):
// cluster tasks (defined by the API, read by the leader and the workers), node reports and the
// topology (read only). Records that do not parse are left out of listings (never thrown at a
// client); an etcd that does not answer is 503 `unavailable`.
import { SvcError } from '@svc/protocol';
import type { Etcd3 } from 'etcd3';
import {
  ClusterTaskSchema,
  HostTopologySchema,
  KEYS,
  NodeReportSchema,
  nameUnder,
  parseRecord,
  type ClusterTask,
  type NodeReport,
  type Topology,
  type TopologyEntry,
} from './records.ts';

/** Where a task runs now: one entry per host of the topology that names it. */
export interface Placement {
  host: string;
  schedule_time: string;
}

export type TaskView = ClusterTask & { placements: Placement[] };

export interface ClusterApi {
  tasks(): Promise<Record<string, TaskView>>;
  task(name: string): Promise<TaskView | undefined>;
  putTask(name: string, task: ClusterTask): Promise<void>;
  /** false when there was no such task. */
  deleteTask(name: string): Promise<boolean>;
  nodes(): Promise<Record<string, NodeReport>>;
  topology(): Promise<Topology>;
}

/** Registry calls from the API give up after this long (a client never hangs on a dead etcd). */
const REGISTRY_CALL_MS = 5_000;
/** Pause between attempts while the client reconnects (after an etcd restart the first calls fail fast). */
const RETRY_MS = 200;

/**
 * Runs `call`, retrying failures until REGISTRY_CALL_MS have passed, then 503 `unavailable`. Every
 * call here is idempotent (reads, a put of a whole value, a delete), so a retry after an answer
 * that was lost is harmless.
 */
async function bounded<T>(what: string, call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + REGISTRY_CALL_MS;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error('timed out')), Math.max(1, deadline - Date.now()));
        }),
      ]);
    } catch (error) {
      if (error instanceof SvcError) throw error;
      if (Date.now() + RETRY_MS >= deadline)
        throw new SvcError('unavailable', `the cluster registry did not answer (${what}); try again`);
    } finally {
      clearTimeout(timer);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** Every record under `prefix` named by its last path segment, parsed with `schema`. */
async function listUnder<T>(
  client: Etcd3,
  prefix: string,
  parse: (value: string) => T | undefined,
): Promise<Record<string, T>> {
  const all = await client.getAll().prefix(prefix).strings();
  const out: Record<string, T> = {};
  for (const [key, value] of Object.entries(all).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const name = nameUnder(prefix, key);
    const parsed = name === undefined ? undefined : parse(value);
    if (name !== undefined && parsed !== undefined) out[name] = parsed;
  }
  return out;
}

export function placementsOf(topology: Topology, app: string): Placement[] {
  const out: Placement[] = [];
  for (const [host, entries] of Object.entries(topology)) {
    const entry = entries.find((e: TopologyEntry) => e.app === app);
    if (entry !== undefined) out.push({ host, schedule_time: entry.schedule_time });
  }
  return out;
}

export function createClusterApi(client: Etcd3): ClusterApi {
  const topology = (): Promise<Topology> =>
    listUnder(client, KEYS.topologyPrefix, (v) => parseRecord(HostTopologySchema, v));
  return {
    tasks: () =>
      bounded('list tasks', async () => {
        const [tasks, current] = await Promise.all([
          listUnder(client, KEYS.tasksPrefix, (v) => parseRecord(ClusterTaskSchema, v)),
          topology(),
        ]);
        return Object.fromEntries(
          Object.entries(tasks).map(([name, task]) => [
            name,
            { ...task, placements: placementsOf(current, name) },
          ]),
        );
      }),
    task: (name) =>
      bounded('read a task', async () => {
        const [value, current] = await Promise.all([client.get(KEYS.task(name)).string(), topology()]);
        const task = parseRecord(ClusterTaskSchema, value);
        return task === undefined ? undefined : { ...task, placements: placementsOf(current, name) };
      }),
    putTask: (name, task) =>
      bounded('write a task', async () => {
        await client.put(KEYS.task(name)).value(JSON.stringify(task));
      }),
    deleteTask: (name) =>
      bounded('delete a task', async () => {
        const result = await client.delete().key(KEYS.task(name));
        return Number(result.deleted) > 0;
      }),
    nodes: () =>
      bounded('list nodes', () =>
        listUnder(client, KEYS.nodesPrefix, (v) => parseRecord(NodeReportSchema, v)),
      ),
    topology: () => bounded('read the topology', topology),
  };
}
