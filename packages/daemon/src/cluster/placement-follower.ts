// The placement follower of cluster mode (spec "Cluster-mode behavior" 4; docs/cluster.md): a worker node
// (Registry.IsWorkerNode) follows its topology key `svc/cluster/topology/<host>`, runs every task the
// key names through the supervisor's cluster source (supervisor/cluster-apps.ts), withdraws the ones
// it no longer names, and registers the replicas that have a port as services.
//
// Every change of the key or of the tasks, every (re)connection of the watches and a periodic pass
// lead to one reconciliation that re-reads the key and the tasks it names: a missed event, an etcd
// restart or a compacted watch cannot leave the node on a stale schedule. A registry that does not
// answer changes nothing: the apps placed here keep running.
import { SvcError } from '@svc/protocol';
import type { Etcd3 } from 'etcd3';
import type { Logger } from '../log/logger.ts';
import type { ClusterApps } from '../supervisor/cluster-apps.ts';
import { ClusterTaskSchema, HostTopologySchema, KEYS, parseRecord, type ClusterTask } from './records.ts';
import { watchRegistry } from './registry-watch.ts';
import type { ServiceRegistry } from './service-registry.ts';

export interface PlacementFollowerOptions {
  client: Etcd3;
  /** A new etcd client for each watch (registry-watch.ts). */
  watchClient: () => Etcd3;
  hostName: string;
  apps: ClusterApps;
  serviceRegistry: ServiceRegistry;
  logger: Logger;
  /** Safety net: a full reconciliation at least this often (default 10 s). */
  resyncMs?: number;
  /** Called with every outcome of a reconciliation (tests, diagnostics). */
  onReconciled?: (placed: readonly string[]) => void;
}

export interface PlacementFollower {
  /** Reconciles now (and waits for it). */
  reconcile(): Promise<void>;
  /** Stops following the schedule; the cluster apps keep running until the daemon stops. */
  close(): Promise<void>;
}

/** The tasks the schedule places here: the names of the topology entries and their tasks. */
async function readPlacements(
  client: Etcd3,
  hostName: string,
): Promise<Map<string, ClusterTask | undefined>> {
  const value = await client.get(KEYS.topology(hostName)).string();
  const entries = value === null ? [] : parseRecord(HostTopologySchema, value);
  if (entries === undefined) throw new Error(`the topology of ${hostName} does not parse`);
  const names = [...new Set(entries.map((entry) => entry.app))];
  const tasks = await Promise.all(names.map((name) => client.get(KEYS.task(name)).string()));
  return new Map(names.map((name, i) => [name, parseRecord(ClusterTaskSchema, tasks[i])]));
}

export function startPlacementFollower(options: PlacementFollowerOptions): PlacementFollower {
  const { client, hostName, apps, serviceRegistry } = options;
  const logger = options.logger.child({ component: 'cluster-placements' });
  let running: Promise<void> | undefined;
  let again = false;
  let closed = false;

  const applyOne = async (name: string, task: ClusterTask): Promise<void> => {
    const owner = typeof task.content['owner'] === 'string' ? task.content['owner'] : undefined;
    try {
      const outcome = await apps.apply(name, task.content, owner);
      if (outcome === 'conflict') return void (await serviceRegistry.set(name, undefined));
      if (outcome !== 'unchanged') logger.info(`cluster app ${outcome}`, { app: name });
      await serviceRegistry.set(name, task.port);
    } catch (error) {
      const message = error instanceof SvcError || error instanceof Error ? error.message : String(error);
      logger.error('cluster task not applied', { app: name, error: message });
    }
  };

  const withdrawOne = async (name: string): Promise<void> => {
    try {
      await serviceRegistry.set(name, undefined);
      if (await apps.withdraw(name)) logger.info('cluster app withdrawn', { app: name });
    } catch (error) {
      logger.error('cluster app not withdrawn', { app: name, error: error as Error });
    }
  };

  const pass = async (): Promise<void> => {
    let placed: Map<string, ClusterTask | undefined>;
    try {
      placed = await readPlacements(client, hostName);
    } catch (error) {
      logger.warn('schedule not read; keeping the cluster apps as they are', {
        error: (error as Error).message,
      });
      return;
    }
    const wanted = new Map(
      [...placed].filter((entry): entry is [string, ClusterTask] => entry[1] !== undefined),
    );
    for (const name of new Set([...apps.names(), ...serviceRegistry.registered()]))
      if (!wanted.has(name)) await withdrawOne(name);
    // A placement whose task is gone (deleted since) waits for the leader's next topology.
    for (const [name, task] of wanted) await applyOne(name, task);
    options.onReconciled?.([...wanted.keys()]);
  };

  /** One reconciliation at a time; changes during one cause exactly one more. */
  const reconcile = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = pass().finally(() => {
      running = undefined;
      if (again && !closed) {
        again = false;
        void reconcile();
      }
    });
    return running;
  };
  const trigger = (): void => void reconcile();

  const watches = [
    watchRegistry(options.watchClient, { key: KEYS.topology(hostName) }, trigger, logger),
    watchRegistry(options.watchClient, { prefix: KEYS.tasksPrefix }, trigger, logger),
  ];
  const timer = setInterval(trigger, options.resyncMs ?? 10_000);
  timer.unref();
  logger.info('following the cluster schedule', { host: hostName });

  return {
    reconcile,
    async close() {
      closed = true;
      clearInterval(timer);
      await Promise.all(watches.map((watch) => watch.close()));
      await running;
    },
  };
}
