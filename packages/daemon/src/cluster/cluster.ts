// Cluster mode for one node (spec "Cluster-mode behavior"; docs/cluster.md): opens the registry
// session, keeps the node report current (labels, resources, leadership) and, on main nodes, runs
// for leader. Started by daemon.ts when SVC_REGISTRY_URL or Registry.Url is set.
import { readFile } from 'node:fs/promises';
import type { ClusterConfig } from '../config/registry-config.ts';
import type { Logger } from '../log/logger.ts';
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
}

export interface ClusterNode {
  readonly session: RegistrySession;
  readonly hostName: string;
  readonly config: ClusterConfig;
  /** The report as last written. */
  report(): NodeReport;
  /** Recomputes the report and writes it when it changed (labels, resources, leadership). */
  refreshReport(): Promise<void>;
  close(): Promise<void>;
}

async function readTls(tls: ClusterConfig['tls']): Promise<RegistryTls | undefined> {
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
  let facts: HostFacts = hostFacts();
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

  const refreshReport = async (): Promise<void> => {
    current = compute();
    const text = JSON.stringify(current);
    if (text === written) return;
    written = text;
    await session.putOwned(KEYS.node(hostName), text);
  };

  await refreshReport();
  const resourceTimer = setInterval(() => {
    facts = hostFacts();
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
    async close() {
      clearInterval(resourceTimer);
      leader = false;
      await session.close();
    },
  };
}
