// The application side of one cluster node, started by daemon.ts after the node joined: the
// service registry (every node: its processes get the peer variables), the worker that follows the
// schedule (worker nodes only) and the registry view of the /svc/cluster/* operations.
import type { Logger } from '../log/logger.ts';
import type { ClusterApps } from '../supervisor/cluster-apps.ts';
import type { ClusterNode } from './cluster.ts';
import { createClusterApi, type ClusterApi } from './cluster-api.ts';
import { createServiceRegistry, type ServiceRegistry } from './services.ts';
import { startClusterWorker, type ClusterWorker } from './worker.ts';

export interface WorkerSide {
  api: ClusterApi;
  services: ServiceRegistry;
  worker: ClusterWorker | undefined;
  close(): Promise<void>;
}

export function startWorkerSide(node: ClusterNode, apps: ClusterApps, logger: Logger): WorkerSide {
  const client = node.session.client;
  const services = createServiceRegistry({
    session: node.session,
    hostName: node.hostName,
    svcUrl: () => node.report().svc,
    logger: logger.child({ component: 'cluster-services' }),
  });
  const worker = node.config.isWorkerNode
    ? startClusterWorker({ client, hostName: node.hostName, apps, services, logger })
    : undefined;
  return {
    api: createClusterApi(client),
    services,
    worker,
    async close() {
      await worker?.close();
      await services.close();
    },
  };
}
