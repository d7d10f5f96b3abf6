// Cluster mode for one node (spec "Cluster-mode behavior"; docs/cluster.md): opens the registry
// session, keeps the node report current (labels, resources, leadership) and, on main nodes, runs
// for leader. Started by daemon/cluster-member.ts when SVC_REGISTRY_URL or Registry.Url is set.
import type { Etcd3 } from 'etcd3';
import { readFile } from 'node:fs/promises';
import type { ClusterConfig } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import { startElection, type Election } from './election.ts';
import { startLeaderLoop, type LeaderLoop, type PassResult } from './leader.ts';
import { hostFacts, nodeReport, type HostFacts } from './node-report.ts';
import { KEYS, type NodeReport } from './records.ts';
import { openRegistrySession, type RegistrySession, type RegistryTls } from './session.ts';

export interface ClusterOptions {
  config: ClusterConfig;
  hostName: string;
  /** The node's HTTPS address (`svc` of the node report). */
  svcUrl: () => string;
  labels: () => Readonly<Record<string, string>>;
  logger: Logger;
  /** How often resources are re-read for the report (default 10 s). */
  resourceIntervalMs?: number;
  /** Reads the machine (default `hostFacts`; tests pass their own). */
  facts?: () => HostFacts;
}

/** What this node is in the cluster right now. */
export interface ClusterStatus {
  host: string;
  main: boolean;
  worker: boolean;
  leader: boolean;
  /** The registry session's lease, while one is granted. */
  lease: string | undefined;
  /** False while the registry is unreachable (by the session's lease estimate). */
  connected: boolean;
}

export interface ClusterNode {
  readonly session: RegistrySession;
  readonly hostName: string;
  readonly config: ClusterConfig;
  /** The report as last written. */
  report(): NodeReport;
  /** Recomputes the report and writes it when it changed (labels, resources, leadership). */
  refreshReport(): Promise<void>;
  status(): ClusterStatus;
  /** Called after each leader pass that wrote topology (tests and the benchmark). */
  onPass(listener: (result: PassResult) => void): () => void;
  close(): Promise<void>;
}

export async function readTls(tls: ClusterConfig['tls']): Promise<RegistryTls | undefined> {
  if (tls === undefined) return undefined;
  const read = async (file: string | undefined): Promise<Buffer | undefined> =>
    file === undefined ? undefined : readFile(file);
  return { ca: await read(tls.caFile), cert: await read(tls.certFile), key: await read(tls.keyFile) };
}

export async function startCluster(options: ClusterOptions): Promise<ClusterNode> {
  const { config, hostName } = options;
  const log = options.logger.child({ component: 'cluster' });
  const session = await openRegistrySession({
    urls: config.urls,
    ttlSeconds: config.sessionTtlSeconds,
    tls: await readTls(config.tls),
    log: (level, message) => log[level](message),
  });
  const readFacts = options.facts ?? hostFacts;
  let facts: HostFacts = readFacts();
  let leader = false;
  let written = '';
  let current: NodeReport;

  const compute = (): NodeReport =>
    nodeReport({
      svcUrl: options.svcUrl(),
      hostName,
      isWorkerNode: config.isWorkerNode,
      leader,
      labels: options.labels(),
      facts,
    });

  // Serialised, so that two quick changes (elected, then deposed) reach etcd in their order.
  let writing: Promise<void> = Promise.resolve();
  const refreshReport = (): Promise<void> => {
    writing = writing.then(async () => {
      current = compute();
      const text = JSON.stringify(current);
      if (text === written) return;
      written = text;
      await session.putOwned(KEYS.node(hostName), text);
    });
    return writing;
  };

  await refreshReport();

  // Main nodes run for leader; the leader runs the scheduling loop while its term lasts.
  const passListeners = new Set<(result: PassResult) => void>();
  let loop: LeaderLoop | undefined;
  let election: Election | undefined;
  // One watch client for every term's leader loop (created on the first term, closed with the session).
  let leaderWatch: Etcd3 | undefined;
  const leaderWatchClient = (): Etcd3 => (leaderWatch ??= session.watchClient());
  if (config.isMainNode) {
    const electionLog = (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>): void =>
      log[level](message, fields);
    election = startElection({
      session,
      value: hostName,
      log: electionLog,
      onElected(fence) {
        leader = true;
        void refreshReport();
        const term: LeaderLoop = startLeaderLoop({
          client: session.client,
          watchClient: leaderWatchClient(),
          fence,
          log: electionLog,
          // Only the loop of the current term may end it.
          onDeposed: (reason) => {
            if (loop === term) election?.deposed(reason);
          },
          periodicMs: config.sessionTtlSeconds * 1000,
          graceMs: config.sessionTtlSeconds * 1000,
          onPass: (result) => {
            for (const listener of passListeners) listener(result);
          },
        });
        loop = term;
      },
      onDeposed() {
        leader = false;
        void loop?.stop();
        loop = undefined;
        void refreshReport();
      },
    });
  }
  const resourceTimer = setInterval(() => {
    facts = readFacts();
    void refreshReport();
  }, options.resourceIntervalMs ?? 10_000);
  resourceTimer.unref();
  log.info('cluster member started', {
    host: hostName,
    main: config.isMainNode,
    worker: config.isWorkerNode,
    ttl_seconds: config.sessionTtlSeconds,
    lease: session.leaseId(),
  });

  return {
    session,
    hostName,
    config,
    report: () => current,
    refreshReport,
    status: () => ({
      host: hostName,
      main: config.isMainNode,
      worker: config.isWorkerNode,
      leader,
      lease: session.leaseId(),
      connected: session.alive(),
    }),
    onPass(listener) {
      passListeners.add(listener);
      return () => passListeners.delete(listener);
    },
    async close() {
      clearInterval(resourceTimer);
      await election?.stop();
      await session.close();
    },
  };
}
