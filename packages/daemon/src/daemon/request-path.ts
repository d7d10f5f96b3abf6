// What serves a request once the listeners let it in: the forwarding gateway (X-Target-Host), the
// event hub with the authority that keeps persistent connections authorized, the worker task
// queues, and the one dispatcher over the operation table with the resolver behind its access
// rules. Each subsystem that has something to stop is a component of its own (daemon.ts orders them).
import { join } from 'node:path';
import { createDispatcher } from '../api/dispatcher.ts';
import { operations } from '../api/operations/index.ts';
import { Router } from '../api/router.ts';
import type { Services } from '../api/services.ts';
import { METRICS_READER_APP as AGENT_APP, type AccessResolver } from '../auth/access-rules.ts';
import { ConnectionAuthority } from '../auth/connection-authority.ts';
import type { PolicyStore } from '../auth/policy-store.ts';
import type { ClusterNode } from '../cluster/cluster.ts';
import type { NodeApps } from '../cluster/node-apps.ts';
import type { DaemonConfig } from '@svc/platform/config';
import type { HostConfigStore } from '../config/host-config-store.ts';
import { EventHub } from '../events/event-hub.ts';
import { createForwarder, type Forwarder } from '../forwarding/index.ts';
import type { Logger } from '../log/logger.ts';
import type { DaemonMetrics } from '../metrics/daemon-metrics.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import type { Supervisor } from '../supervisor/supervisor.ts';
import { linkTasksToSupervisor } from '../tasks/supervisor-link.ts';
import { TaskQueues } from '../tasks/task-queues.ts';
import type { TlsMaterial } from '@svc/platform/tls';
import type { CallerAccess } from './access.ts';
import type { Component, Step } from './component.ts';
import type { RequestPath } from './listeners.ts';

/** The forwarding gateway; in cluster mode X-Target-Host may also name any registered node. */
export async function startForwarding(options: {
  config: DaemonConfig;
  tls: TlsMaterial;
  tcpPort: number;
  nodeApps: NodeApps | undefined;
  logger: Logger;
}): Promise<Step<{ forwarder: Forwarder }>> {
  const { nodeApps } = options;
  const forwarder = await createForwarder({ ...options, tcpPort: () => options.tcpPort });
  if (nodeApps !== undefined) forwarder.targets.addProvider(nodeApps.targets.provider);
  return { forwarder, component: { name: 'forward links', stop: () => forwarder.close() } };
}

/**
 * Event subscriptions and pushes, and the authority over persistent connections: tombstoning a
 * principal, or the expiry of the token a connection was authorized by, ends its subscriptions at
 * once and closes the connection (auth/connection-authority.ts).
 */
export function startEvents(options: {
  config: DaemonConfig;
  supervisor: Supervisor;
  policy: PolicyStore;
  metrics: DaemonMetrics;
  logger: Logger;
}): Step<{ events: EventHub; connections: ConnectionAuthority }> {
  const { logger, metrics } = options;
  const events = new EventHub({
    supervisor: options.supervisor,
    outputDir: join(options.config.workDir, 'stdout'),
    logger: logger.child({ component: 'events' }),
    onPush: (type, queued) => metrics.eventPushed(type, queued),
  });
  const connections = new ConnectionAuthority({
    revoke(connection, reason) {
      events.removeConnection(connection.id);
      connection.close(
        reason === 'token_expired'
          ? 'the access token expired; reconnect with a fresh token'
          : 'the principal record was deleted',
      );
      logger.info('persistent connection revoked', { connection: connection.id, reason });
    },
  });
  const stopTombstoneWatch = options.policy.onTombstone((id) => connections.revokePrincipal(id));
  const stop = (): void => {
    stopTombstoneWatch();
    connections.close();
    events.close();
  };
  return { events, connections, component: { name: 'events', stop } };
}

/**
 * The worker task queues, linked to the supervisor from the start. Reached only through the
 * listeners, so the daemon lists both components after them, to stop them first: waiting submitters
 * and fetchers are answered 503 while their connections are still open, and no supervisor event
 * reaches the queues once they are closed.
 */
export function taskQueues(
  supervisor: Supervisor,
  metrics: DaemonMetrics,
): { tasks: TaskQueues; queues: Component; link: Component } {
  const tasks = new TaskQueues();
  metrics.attachTasks(tasks);
  const unlink = linkTasksToSupervisor(tasks, supervisor);
  return {
    tasks,
    queues: { name: 'task queues', stop: () => tasks.close() },
    link: { name: 'task link', stop: unlink },
  };
}

export interface RequestPathOptions {
  readonly config: DaemonConfig;
  readonly hostConfig: HostConfigStore;
  readonly access: CallerAccess;
  readonly restBaseUrl: string;
  readonly supervisor: Supervisor;
  readonly users: UserSwitch;
  readonly tasks: TaskQueues;
  readonly events: EventHub;
  readonly connections: ConnectionAuthority;
  readonly forwarder: Forwarder;
  readonly cluster: ClusterNode | undefined;
  readonly nodeApps: NodeApps | undefined;
  readonly metrics: DaemonMetrics;
  readonly logger: Logger;
}

/** The dispatcher over the operation table, counted by route, and the listeners' checks. */
export function assembleRequestPath(options: RequestPathOptions): RequestPath {
  const { config, supervisor, events, nodeApps, forwarder, metrics, logger, restBaseUrl } = options;
  const policy = options.access.policy;
  const services: Services = {
    config,
    hostConfig: options.hostConfig,
    supervisor,
    tasks: options.tasks,
    verifyProcessKey: (name, key) => supervisor.verifyProcessKey(name, key),
    events,
    policy,
    users: options.users,
    logger,
    metrics,
    restBaseUrl: () => restBaseUrl,
    ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    ...(nodeApps === undefined ? {} : { clusterApi: nodeApps.api }),
  };
  const router = new Router(operations);
  const resolver: AccessResolver = {
    app: (name) => supervisor.access(name),
    service: (name) => nodeApps?.serviceRegistry.registered().includes(name) ?? false,
    subscription: (id) => events.owner(id),
    verifyProcessKey: (name, key) => supervisor.verifyProcessKey(name, key),
  };
  const dispatch = createDispatcher({
    router,
    services,
    auth: options.access.withChallenge(restBaseUrl),
    resolver,
    logger,
    forwarder,
    onConnectionAuthenticated: (connection, principal) =>
      options.connections.authenticated(connection, principal.id, principal.expiresAt),
  });
  // At debug level every request is logged (method, path without query, status): the line an
  // operator turns on with POST /svc/config {"BaseConfig": {"LogLevel": "DEBUG"}}.
  const apiLog = logger.child({ component: 'api' });
  return {
    dispatch: metrics.instrument(router, dispatch, (request, response) =>
      apiLog.debug('request', {
        method: request.method,
        path: request.path.slice(0, 256),
        status: response.status,
        transport: request.transport,
      }),
    ),
    // svc-agent proves a relayed request with its own process key (transports/agent-relay.ts).
    checkAgentKey: (key) => supervisor.verifyProcessKey(AGENT_APP, key) === 'ok',
    checkUpgradeTarget: (header) => forwarder.checkUpgradeTarget(header),
  };
}
