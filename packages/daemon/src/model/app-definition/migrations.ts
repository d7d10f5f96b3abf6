// The names of the definition before App Mesh 3.0's (types.ts LEGACY_FIELDS), read as their new
// names: from API input, and from stored files, which the app store then rewrites.

/** Where input of a definition comes from: it decides which server-set fields it may carry. */
export type Source = 'api' | 'stored' | 'bundled';

/** An old name that cannot be read as its new one: `key` of the object at `path`. */
export interface OldNameProblem {
  path: string[];
  key: string;
  message: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function define(body: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Rewrite the old names of `body` into App Mesh 3.0's, in place. A stored or bundled file may carry
 * a share list in `permission`: it becomes 11 (others denied), the only safe reading. Returns the
 * old names found (dotted: `behavior.control`) and what could not be rewritten.
 */
export function renameOldFields(
  body: Record<string, unknown>,
  source: Source,
): { found: string[]; problems: OldNameProblem[] } {
  const found: string[] = [];
  const problems: OldNameProblem[] = [];
  const problem = (key: string, message: string, path: string[] = []): void => {
    problems.push({ path, key, message });
  };
  const move = (from: string, to: string, value: unknown): void => {
    found.push(from);
    delete body[from];
    if (to in body) problem(from, `is the old name of ${to}; send only ${to}`);
    else define(body, to, value);
  };
  if ('status' in body) {
    const status = body['status'];
    if (status === 0 || status === 1) move('status', 'enabled', status === 1);
    else {
      delete body['status'];
      problem('status', 'must be 1 (enabled) or 0 (disabled)');
    }
  }
  if ('sec_env' in body) move('sec_env', 'secret_env', body['sec_env']);
  if ('stdout_cache_num' in body) move('stdout_cache_num', 'stdout_backup_count', body['stdout_cache_num']);
  if ('retention' in body) move('retention', 'stop_grace_period', body['retention']);
  if ('owner' in body) move('owner', 'owner_principal_id', body['owner']);
  if ('cron' in body || 'start_interval_seconds' in body) {
    const cron = body['cron'];
    if (cron !== undefined && typeof cron !== 'boolean') problem('cron', 'must be true or false');
    if ('cron' in body) {
      found.push('cron');
      delete body['cron'];
    }
    if ('start_interval_seconds' in body) {
      const target = cron === true ? 'cron_schedule' : 'interval';
      move('start_interval_seconds', target, body['start_interval_seconds']);
    } else if (cron === true) {
      problem('cron', 'use cron_schedule with the cron expression');
    }
  }
  const behavior = body['behavior'];
  if (isRecord(behavior) && 'control' in behavior) {
    found.push('behavior.control');
    if ('exit_code_actions' in behavior)
      problem('control', 'is the old name of behavior.exit_code_actions; send only the latter', ['behavior']);
    else {
      const { control, ...rest } = behavior;
      body['behavior'] = { ...rest, exit_code_actions: control };
    }
  }
  if (source !== 'api' && Array.isArray(body['permission'])) {
    found.push('permission');
    body['permission'] = 11;
  }
  return { found, problems };
}
