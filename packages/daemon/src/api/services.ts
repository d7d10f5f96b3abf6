// What operations may use. Built once in daemon.ts; unit tests may pass twins.
import type { ClusterApi } from '../cluster/cluster-api.ts';
import type { ClusterNode } from '../cluster/cluster.ts';
import type { DaemonConfig } from '@svc/platform/config';
import type { HostConfigStore } from '../config/host-config-store.ts';
import type { PolicyStore } from '../auth/policy-store.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import type { EventHub } from '../events/event-hub.ts';
import type { Logger } from '../log/logger.ts';
import type { SupervisorApi } from '../supervisor/types.ts';
import type { TaskQueues } from '../tasks/task-queues.ts';

export interface Services {
  config: DaemonConfig;
  hostConfig: HostConfigStore;
  supervisor: SupervisorApi;
  /** Worker task loop: the queues, and the check of a process key (the supervisor's). */
  tasks: TaskQueues;
  verifyProcessKey(name: string, key: string): 'ok' | 'superseded' | 'unknown';
  /** Event subscriptions and pushes (events/). */
  events: EventHub;
  policy: PolicyStore;
  /** The privilege boundary of file transfers (and the supervisor's own processes). */
  users: UserSwitch;
  logger: Logger;
  /** svcd's Prometheus registry (metrics/), absent in unit-test twins. */
  metrics?: { render(): Promise<{ contentType: string; text: string }> };
  /** This node's cluster membership (registry session, report); absent when stand-alone. */
  cluster?: ClusterNode;
  /** Cluster mode: the registry as the /svc/cluster/* operations use it; undefined stand-alone. */
  clusterApi?: ClusterApi;
  /** Base URL of this daemon's REST listener, for discovery documents. */
  restBaseUrl(): string;
}
