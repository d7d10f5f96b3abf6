// run / syncrun (CONTRACT §5): a transient application made from a new definition, or from a copy
// of an existing app with `{name, metadata?, env?}` overriding its metadata and env.
//
// The transient app:
// - is named `<base>-run-<8 hex>` and persisted like any app (a daemon restart does not lose it);
// - runs once: behavior exit standby, no schedule (start_time, end_time, interval, cron and daily
//   window are dropped from a copy), never restarted;
// - is stopped after `timeoutSeconds` (a deliberate stop; 0 = no timeout);
// - is removed `lifecycleSeconds` after its exit (REMOVED published); syncrun removes it as soon
//   as it has collected the output.
import { randomBytes } from 'node:crypto';
import { SvcError } from '@svc/protocol';
import type { AppDefinition } from '../model/app-definition.ts';
import { NAME_PATTERN, parseAppDefinition } from '../model/app-definition.ts';

/** Seconds a finished run's app is kept when the caller gives no (or a negative) lifecycle. */
export const DEFAULT_RUN_LIFECYCLE_SECONDS = 60;
/** syncrun timeout when the caller gives none. */
export const DEFAULT_SYNC_RUN_TIMEOUT_SECONDS = 10;

const COPY_KEYS = new Set(['name', 'metadata', 'env']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function transientName(base: string): string {
  const suffix = `-run-${randomBytes(4).toString('hex')}`;
  return base.slice(0, 128 - suffix.length) + suffix;
}

/**
 * Build the transient definition. `lookup` finds an existing app for the copy form. Throws
 * SvcError invalid_app / app_not_found.
 */
export function transientDefinition(
  input: unknown,
  lookup: (name: string) => AppDefinition | undefined,
  owner: string,
  now: number,
): AppDefinition {
  if (!isRecord(input)) throw new SvcError('invalid_app', 'run input must be a JSON object');
  const isCopy = Object.keys(input).every((key) => COPY_KEYS.has(key)) && !('command' in input);
  let def: AppDefinition;
  if (isCopy) {
    const name = input['name'];
    if (typeof name !== 'string' || !NAME_PATTERN.test(name))
      throw new SvcError('invalid_app', 'name: must name an existing application');
    const base = lookup(name);
    if (base === undefined) throw new SvcError('app_not_found', `no application named ${name}`);
    // Re-validate the copy with the overrides (metadata and env are untrusted input).
    const candidate: Record<string, unknown> = {
      name,
      command: base.command,
      shell: base.shell,
      env: base.env,
    };
    if (base.working_dir !== undefined) candidate['working_dir'] = base.working_dir;
    if (base.metadata !== undefined) candidate['metadata'] = base.metadata;
    if (base.resource_limit !== undefined) candidate['resource_limit'] = base.resource_limit;
    if (base.health_check_cmd !== undefined) candidate['health_check_cmd'] = base.health_check_cmd;
    if ('metadata' in input) candidate['metadata'] = input['metadata'];
    if (isRecord(input['env'])) candidate['env'] = { ...base.env, ...input['env'] };
    else if (input['env'] !== undefined) candidate['env'] = input['env'];
    def = parseAppDefinition(candidate, { now });
    def.secret_env = { ...base.secret_env };
    def.stdout_backup_count = 0;
  } else {
    def = parseAppDefinition(input, { now });
    delete def.start_time;
    delete def.end_time;
    delete def.interval;
    delete def.cron_schedule;
    delete def.daily_limitation;
    def.stdout_backup_count = 0;
  }
  delete def.pid;
  def.name = transientName(def.name);
  def.enabled = true;
  def.depends_on = [];
  def.behavior = { exit: 'standby', exit_code_actions: {} };
  def.owner_principal_id = owner;
  return def;
}
