// What operations may use. Built once in daemon.ts; unit tests may pass twins.
import type { DaemonConfig } from '../config/config.ts';
import type { HostConfigStore } from '../config/host-config-store.ts';
import type { PolicyStore } from '../auth/policy-store.ts';
import type { Logger } from '../log/logger.ts';
import type { SupervisorApi } from '../supervisor/types.ts';

export interface Services {
  config: DaemonConfig;
  hostConfig: HostConfigStore;
  supervisor: SupervisorApi;
  policy: PolicyStore;
  logger: Logger;
  /** Base URL of this daemon's REST listener, for discovery documents. */
  restBaseUrl(): string;
}
