// What the rest of the daemon imports from the supervisor.
export { createSupervisor } from './supervisor.ts';
export type { Supervisor, SupervisorOptions } from './supervisor.ts';
export { ADOPTED_EXIT_ERROR, UNKNOWN_EXIT_CODE } from './lifecycle.ts';
export { DEFAULT_RUN_LIFECYCLE_SECONDS, DEFAULT_SYNC_RUN_TIMEOUT_SECONDS } from './runs.ts';
export { MAX_READ_BYTES } from './output-store.ts';
export type * from './types.ts';
