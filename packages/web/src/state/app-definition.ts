// The definition part of an application record (what was registered), without its runtime fields.
import type { AppInfo } from '@svc/client/browser';

/** Fields the daemon reports about the running app; everything else is the definition. */
const RUNTIME_FIELDS = new Set([
  'pid', 'pid_user', 'process_uuid', 'return_code', 'health', 'memory', 'cpu', 'fd', 'pstree', 'starts',
  'register_time', 'last_start_time', 'last_exit_time', 'next_start_time', 'last_error', 'waiting_for',
  'stdout_file_count', 'owner_principal_id', 'owner_display_name', 'version', 'status', 'stdout_cache_num',
  'adopted', 'cluster', 'cluster_conflict', 'container_id', 'output_captured', 'processes', 'resource_limit_status',
  'state', 'stdout_cache_size', 'task_id', 'task_status', 'transient', 'system',
]);

/**
 * What an edit sends back: the definition restricted to the fields the schema accepts from a
 * client (not server-set ones, not `pid`, which would adopt a process).
 */
export function editableDefinition(info: AppInfo, accepted: ReadonlySet<string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(definitionOf(info)).filter(([key]) => accepted.has(key) && key !== 'pid'));
}

export function definitionOf(info: AppInfo): Record<string, unknown> {
  return Object.fromEntries(Object.entries(info).filter(([key]) => !RUNTIME_FIELDS.has(key)));
}
