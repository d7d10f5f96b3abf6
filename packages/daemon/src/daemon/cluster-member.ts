// Cluster mode (SVC_REGISTRY_URL / Registry.Url; docs/cluster.md), as the daemon joins it: the
// registry session and the node report, the policy kept in etcd (security sync), and the node
// apps (cluster apps, service records, the registered nodes as forward targets). etcd3 and gRPC
// are loaded only here, only in cluster mode.
import type { PolicyStore } from '../auth/policy-store.ts';
import type { ClusterNode } from '../cluster/cluster.ts';
import type { NodeApps } from '../cluster/node-apps.ts';
import type { DaemonConfig } from '@svc/platform/config';
import type { HostConfigStore } from '../config/host-config-store.ts';
import type { Logger } from '../log/logger.ts';
import type { Supervisor } from '../supervisor/supervisor.ts';
import type { Step } from './component.ts';
import { urlHost } from './listeners.ts';
import type { PeerVariables } from './supervision.ts';

export interface ClusterMemberOptions {
  readonly config: DaemonConfig;
  readonly hostConfig: HostConfigStore;
  readonly policy: PolicyStore;
  readonly supervisor: Supervisor;
  readonly ports: { readonly rest: number; readonly tcp: number };
  readonly peers: PeerVariables;
  readonly logger: Logger;
}

/**
 * Joins the cluster when one is configured (at most one grant attempt of TTL/2, 5 s at most, waits
 * for etcd); nothing when stand-alone. The component leaves it.
 */
export async function joinCluster(
  options: ClusterMemberOptions,
): Promise<Step<{ cluster: ClusterNode | undefined; nodeApps: NodeApps | undefined }>> {
  const { config, logger } = options;
  const clusterConfig = config.cluster;
  if (clusterConfig === undefined) return { cluster: undefined, nodeApps: undefined, component: undefined };
  const cluster = await (
    await import('../cluster/cluster.ts')
  ).startCluster({
    config: clusterConfig,
    hostName: config.hostName,
    svcUrl: () => clusterConfig.svcProxyUrl ?? nodeSvcUrl(config, options.ports.rest),
    labels: () => options.hostConfig.labels,
    logger,
  });
  const stopLabelWatch = options.hostConfig.onLabels(() => void cluster.refreshReport());
  // Security in sync (Registry.EnableRegistrySecurity, default on): the policy lives in etcd.
  const securitySync =
    clusterConfig.enableRegistrySecurity !== true
      ? undefined
      : (await import('../cluster/security-sync.ts')).startSecuritySync({
          client: cluster.session.client,
          watchClient: cluster.session.watchClient(),
          store: options.policy,
          node: config.hostName,
          log: (level, message, fields) =>
            logger.child({ component: 'security-sync' })[level](message, fields),
        });
  // Cluster apps (worker nodes), service records and the /svc/cluster/* registry view.
  const nodeApps = await (
    await import('../cluster/node-apps.ts')
  ).startNodeApps(cluster, options.supervisor.cluster, options.ports.tcp, logger);
  options.peers.provide(() => nodeApps.serviceRegistry.environment());
  return {
    cluster,
    nodeApps,
    component: {
      name: 'cluster',
      async stop() {
        stopLabelWatch();
        await securitySync?.close();
        await nodeApps.close();
        await cluster.close();
      },
    },
  };
}

/**
 * The `svc` address of this node's report: the listen address, or the host name when svcd listens
 * on every interface (peers cannot reach 0.0.0.0).
 */
function nodeSvcUrl(config: DaemonConfig, restPort: number): string {
  const any = ['0.0.0.0', '::', ''].includes(config.listenAddress);
  return `https://${any ? config.hostName : urlHost(config.listenAddress)}:${restPort}`;
}
