// The application side of one cluster node, started by daemon/cluster-member.ts after the node
// joined: the service registry (every node: its processes get the peer variables), the placement
// follower that runs the schedule (worker nodes only, Registry.IsWorkerNode), the registered nodes
// as X-Target-Host targets and the registry view of the /svc/cluster/* operations.
import type { Logger } from '../log/logger.ts';
import type { ClusterApps } from '../supervisor/cluster-apps.ts';
import type { Etcd3 } from 'etcd3';
import { readTls, type ClusterNode } from './cluster.ts';
import { etcdClientOptions } from './session.ts';
import { createClusterApi, type ClusterApi } from './cluster-api.ts';
import { startNodeTargets, type NodeTargets } from './node-targets.ts';
import { createServiceRegistry, type ServiceRegistry } from './service-registry.ts';
import { startPlacementFollower, type PlacementFollower } from './placement-follower.ts';

export interface NodeApps {
  api: ClusterApi;
  serviceRegistry: ServiceRegistry;
  follower: PlacementFollower | undefined;
  /** Registered nodes as forward targets (add `targets.provider` to the forwarder). */
  targets: NodeTargets;
  close(): Promise<void>;
}

export async function startNodeApps(
  node: ClusterNode,
  apps: ClusterApps,
  tcpPort: number,
  logger: Logger,
): Promise<NodeApps> {
  const tls = await readTls(node.config.tls);
  // Imported here, not at the top: a static import of etcd3 (external to the bundle) is hoisted to
  // the bundle's first line and would load etcd3, gRPC and protobufjs into every stand-alone svcd.
  const { Etcd3 } = await import('etcd3');
  const watchClient = (): Etcd3 => new Etcd3(etcdClientOptions(node.config.urls, tls));
  // Reads of this side (and the API's calls) go through a client of their own: during an etcd outage
  // their failures open the client's circuit breaker, which on the session's client would also hold
  // up its keepalives (and cost the node its lease) after etcd is back.
  const client = watchClient();
  const svcHost = new URL(node.report().svc).hostname;
  const targets = await startNodeTargets({
    session: node.session,
    client,
    hostName: node.hostName,
    endpoint: { tcp_host: svcHost.startsWith('[') ? svcHost.slice(1, -1) : svcHost, tcp_port: tcpPort },
    watchClient,
    logger,
  });
  const serviceRegistry = createServiceRegistry({
    session: node.session,
    client,
    hostName: node.hostName,
    svcUrl: () => node.report().svc,
    watchClient,
    logger: logger.child({ component: 'cluster-services' }),
  });
  const follower = node.config.isWorkerNode
    ? startPlacementFollower({ client, watchClient, hostName: node.hostName, apps, serviceRegistry, logger })
    : undefined;
  return {
    api: createClusterApi(client),
    serviceRegistry,
    follower,
    targets,
    async close() {
      await targets.close();
      await follower?.close();
      await serviceRegistry.close();
      client.close();
    },
  };
}
