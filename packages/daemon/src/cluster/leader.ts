// The leader's loop (spec "Cluster-mode behavior" 3): while this node leads, every change under
// `svc/cluster/` (tasks, node reports, topology) triggers a scheduling pass, debounced; a pass
// re-lists tasks, nodes and topology at one revision, calls the pure `schedule()` and writes only the
// host keys that changed, in transactions fenced by the election key's create_revision. A failed
// fence means another node leads: the loop stops at once and the election starts over.
//
// Passes re-list everything, so a watch cancelled on a compacted revision is simply re-created and
// followed by a pass; a periodic pass (every TTL) covers a watch that silently stalled.
import type { Etcd3, Watcher } from 'etcd3';
import type { Fence } from './election.ts';
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
} from './records.ts';
import { diffTopology, schedule } from './scheduler.ts';

/** etcd's default --max-txn-ops is 128: larger diffs go in several fenced transactions. */
export const MAX_OPS_PER_TXN = 100;

export interface LeaderLoopOptions {
  client: Etcd3;
  /** The client the loop's watch runs on (its own: session.watchClient()); default `client`. */
  watchClient?: Etcd3;
  fence: Fence;
  log: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  /** The fence failed: another node leads. */
  onDeposed: (reason: string) => void;
  /** Quiet time after a change before a pass (default 20 ms). */
  debounceMs?: number;
  /** A pass at least this often (default 10 s). */
  periodicMs?: number;
  /**
   * For this long after the term starts (default 0; cluster.ts: one TTL), placements on hosts
   * without a node report are not moved: after an etcd restart or a leader change every node
   * re-registers on a new lease, and a new leader must not take a node that is still doing so for
   * a dead one. Passes that would move them wait for the end of the grace.
   */
  graceMs?: number;
  now?: () => Date;
  /** After each pass that wrote something (tests, bench). */
  onPass?: (result: PassResult) => void;
}

export interface PassResult {
  tasks: number;
  nodes: number;
  written: number;
  removed: number;
  revision: string;
}

export interface LeaderLoop {
  /** Runs a pass now (and waits for it). */
  pass(): Promise<void>;
  stop(): Promise<void>;
}

export interface RegistrySnapshot {
  tasks: Record<string, ClusterTask>;
  nodes: Record<string, NodeReport>;
  current: Topology;
  /** Hosts with a topology key that did not parse (rewritten or deleted by the next write). */
  unreadable: string[];
  revision: string;
}

function parsePrefix<T>(
  values: Record<string, string>,
  prefix: string,
  parse: (value: string) => T | undefined,
): { parsed: Record<string, T>; bad: string[] } {
  const parsed: Record<string, T> = {};
  const bad: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    const name = nameUnder(prefix, key);
    if (name === undefined) continue;
    const record = parse(value);
    if (record === undefined) bad.push(name);
    // An own property even for `__proto__` (a valid app and host name).
    else
      Object.defineProperty(parsed, name, {
        value: record,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return { parsed, bad };
}

/** Tasks, node reports and topology at one revision. */
export async function readRegistrySnapshot(client: Etcd3): Promise<RegistrySnapshot> {
  const tasksResponse = await client.getAll().prefix(KEYS.tasksPrefix).exec();
  const revision = tasksResponse.header.revision;
  const [nodes, topology] = await Promise.all([
    client.getAll().prefix(KEYS.nodesPrefix).revision(revision).strings(),
    client.getAll().prefix(KEYS.topologyPrefix).revision(revision).strings(),
  ]);
  const taskValues = Object.fromEntries(
    tasksResponse.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]),
  );
  const tasks = parsePrefix(taskValues, KEYS.tasksPrefix, (v) => parseRecord(ClusterTaskSchema, v));
  const current = parsePrefix(topology, KEYS.topologyPrefix, (v) => parseRecord(HostTopologySchema, v));
  return {
    tasks: tasks.parsed,
    nodes: parsePrefix(nodes, KEYS.nodesPrefix, (v) => parseRecord(NodeReportSchema, v)).parsed,
    current: current.parsed,
    unreadable: current.bad,
    revision,
  };
}

/** The operations a pass writes: changed host keys put, emptied (or unreadable and unused) ones deleted. */
export function topologyWrites(
  snapshot: RegistrySnapshot,
  next: Topology,
): { put: Topology; remove: string[] } {
  const diff = diffTopology(snapshot.current, next);
  const put: Topology = { ...diff.put };
  const remove = [...diff.remove];
  for (const host of snapshot.unreadable) {
    if (Object.hasOwn(next, host)) put[host] = next[host]!;
    else remove.push(host);
  }
  return { put, remove };
}

export function startLeaderLoop(options: LeaderLoopOptions): LeaderLoop {
  const { client, fence, log } = options;
  const now = options.now ?? ((): Date => new Date());
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  let debounce: NodeJS.Timeout | undefined;
  let watcher: Watcher | undefined;
  const graceEnd = now().getTime() + (options.graceMs ?? 0);
  let graceTimer: NodeJS.Timeout | undefined;

  const writeFenced = async (put: Topology, remove: readonly string[]): Promise<boolean> => {
    const ops = [
      ...Object.entries(put).map(([host, entries]) =>
        client.put(KEYS.topology(host)).value(JSON.stringify(entries)),
      ),
      ...remove.map((host) => client.delete().key(KEYS.topology(host))),
    ];
    for (let i = 0; i < ops.length; i += MAX_OPS_PER_TXN) {
      const result = await client
        .if(fence.key, 'Create', '==', fence.createRevision)
        .then(...ops.slice(i, i + MAX_OPS_PER_TXN))
        .commit();
      if (!result.succeeded) return false;
    }
    return true;
  };

  const onePass = async (): Promise<void> => {
    const snapshot = await readRegistrySnapshot(client);
    if (stopped) return;
    const graceLeft = graceEnd - now().getTime();
    if (graceLeft > 0 && Object.keys(snapshot.current).some((host) => !Object.hasOwn(snapshot.nodes, host))) {
      if (graceTimer === undefined) {
        log('info', 'hosts with placements have no report yet; waiting for them to register', {
          wait_ms: graceLeft,
        });
        graceTimer = setTimeout(() => void pass(), graceLeft + 10);
        graceTimer.unref();
      }
      return;
    }
    const next = schedule({
      tasks: snapshot.tasks,
      nodes: snapshot.nodes,
      current: snapshot.current,
      now: now(),
    });
    const { put, remove } = topologyWrites(snapshot, next);
    const written = Object.keys(put).length;
    if (written + remove.length === 0) return;
    if (!(await writeFenced(put, remove))) {
      // A loop already stopped (its term ended) says nothing: a newer term may be running.
      if (stopped) return;
      stopped = true;
      options.onDeposed('a fenced topology write failed: the election key is no longer ours');
      return;
    }
    log('info', 'topology written', { hosts_written: written, hosts_removed: remove.length });
    options.onPass?.({
      tasks: Object.keys(snapshot.tasks).length,
      nodes: Object.keys(snapshot.nodes).length,
      written,
      removed: remove.length,
      revision: snapshot.revision,
    });
  };

  const pass = (): Promise<void> => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await onePass();
        } catch (error) {
          if (!stopped)
            log('warn', 'scheduling pass failed; retrying on the next change', {
              error: error instanceof Error ? error.message : String(error),
            });
        }
      } while (again && !stopped);
    })().finally(() => (running = undefined));
    return running;
  };

  const trigger = (): void => {
    if (stopped) return;
    if (debounce !== undefined) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = undefined;
      void pass();
    }, options.debounceMs ?? 20);
  };

  const watch = async (): Promise<void> => {
    try {
      const created = await (options.watchClient ?? client).watch().prefix('svc/cluster/').create();
      if (stopped) {
        await created.cancel();
        return;
      }
      watcher = created;
      created.on('data', trigger);
      created.on('error', (error: Error) => {
        // Cancelled (e.g. compacted): watch again from now and re-list.
        // etcd cancelled it already: never cancelled again (etcd3 1.1.2 throws on the gRPC stream
        // for the answer to a cancel of a watcher it no longer knows).
        log('warn', 'cluster watch ended; watching again', { error: error.message });
        if (watcher === created) watcher = undefined;
        if (!stopped) setTimeout(() => void watch().then(trigger), 200).unref();
      });
      // Reconnected after an outage: what changed meanwhile is re-listed.
      created.on('connected', trigger);
    } catch (error) {
      log('warn', 'cannot watch the cluster keys; retrying', {
        error: error instanceof Error ? error.message : String(error),
      });
      if (!stopped) setTimeout(() => void watch().then(trigger), 1_000).unref();
    }
  };

  const periodic = setInterval(() => void pass(), options.periodicMs ?? 10_000);
  periodic.unref();
  void watch().then(trigger);

  return {
    pass,
    async stop() {
      stopped = true;
      clearInterval(periodic);
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      if (debounce !== undefined) clearTimeout(debounce);
      await watcher?.cancel().catch(() => undefined);
      watcher = undefined;
      // A pass under way is not awaited (etcd may be unreachable); its write is fenced anyway.
    },
  };
}
