// The operation table: every API operation of the daemon, whatever transport carries it.
import type { Services } from '../services.ts';
import type { Operation } from '../types.ts';
import { appOperations } from './apps.ts';
import { authzOperations } from './authz.ts';
import { clusterOperations } from './cluster.ts';
import { discoveryOperations } from './discovery.ts';
import { eventOperations } from './events.ts';
import { fileOperations } from './files.ts';
import { hostOperations } from './host.ts';
import { metricsOperations } from './metrics.ts';
import { runOperations } from './runs.ts';
import { taskOperations } from './tasks.ts';

export const operations: readonly Operation<Services>[] = [
  ...appOperations,
  ...runOperations,
  ...taskOperations,
  ...hostOperations,
  ...authzOperations,
  ...discoveryOperations,
  ...eventOperations,
  ...metricsOperations,
  ...fileOperations,
  ...clusterOperations,
];
