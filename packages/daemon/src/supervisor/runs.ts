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
//
// transientDefinition is pure; startRun and syncRun install and follow the app through the
// registry (registry.ts).
import { randomBytes } from 'node:crypto';
import { NAME_PATTERN, SvcError } from '@svc/protocol';
import type { Logger } from '../log/logger.ts';
import type { AppDefinition } from '../model/app-definition.ts';
import { parseAppDefinition } from '../model/app-definition.ts';
import { refuseReservedName } from './app-store.ts';
import type { AppLifecycle } from './lifecycle.ts';
import type { OutputStore } from './output-store.ts';
import type { AppRegistry } from './registry.ts';
import type { RunOptions } from './types.ts';

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

export interface RunContext {
  registry: AppRegistry;
  output: Pick<OutputStore, 'read'>;
  now: () => number;
  logger: Logger;
}

/** Start the transient app of a run (`sync`: syncrun); resolves once it started and its definition is durable. */
export async function startRun(
  context: RunContext,
  input: unknown,
  options: RunOptions,
  owner: string,
  sync: boolean,
): Promise<AppLifecycle> {
  const { registry } = context;
  const t = context.now();
  const def = transientDefinition(input, (name) => registry.apps.get(name)?.def, owner, t);
  refuseReservedName(def.name);
  const lifecycle =
    Number.isFinite(options.lifecycleSeconds) && options.lifecycleSeconds >= 0
      ? options.lifecycleSeconds
      : DEFAULT_RUN_LIFECYCLE_SECONDS;
  let timeout =
    Number.isFinite(options.timeoutSeconds) && options.timeoutSeconds > 0 ? options.timeoutSeconds : 0;
  if (sync && timeout === 0) timeout = DEFAULT_SYNC_RUN_TIMEOUT_SECONDS;
  const transient = { lifecycleSeconds: lifecycle, timeoutAt: timeout > 0 ? t + timeout * 1000 : undefined };
  // As in register: the durable write runs while the process is spawned, the call returns after
  // both, and a failed write undoes the start. Not for syncrun: it subscribes to the app's exit
  // only once this returns, and a process that exited meanwhile would already be on its way out
  // (its transient lifetime starts at the exit), output files and all.
  return registry.serial(def.name, () =>
    registry.install({ def, source: 'local', transient, saveFirst: sync }, undefined),
  );
}

/** syncrun: run to completion (or timeout), collect all output and the exit code, remove the app. */
export async function syncRun(
  context: RunContext,
  input: unknown,
  options: RunOptions,
  owner: string,
): Promise<{ output: Buffer; exitCode: number | undefined }> {
  const { registry } = context;
  const app = await startRun(context, input, options, owner, true);
  const processUuid = app.runtime.uuids[0];
  let exitCode: number | undefined;
  await new Promise<void>((resolve) => {
    const off = registry.onEvent((event) => {
      if (event.app !== app.name) return;
      if (event.type === 'EXIT' && event.processUuid === processUuid) {
        exitCode = event.exitCode;
        off();
        resolve();
      } else if (event.type === 'REMOVED') {
        off();
        resolve();
      }
    });
    if (app.process === undefined && app.runtime.lastExitAt !== undefined) {
      // Already exited (spawn failure reported before we subscribed).
      exitCode = app.runtime.returnCode;
      off();
      resolve();
    }
  });
  // A timeout is a deliberate stop by the lifecycle; it is reported as "no exit code".
  const timedOut = app.lastStop === 'timeout';
  const chunks: Buffer[] = [];
  let position = 0;
  for (;;) {
    const chunk = await context.output.read(app.name, {
      position,
      index: 0,
      maxSize: undefined,
      processUuid,
      timeoutMs: 0,
    });
    if (chunk.output.length === 0) break;
    chunks.push(chunk.output);
    position = chunk.position;
  }
  await registry
    .serial(app.name, () => registry.removeNow(app))
    .catch((error: unknown) => context.logger.error('syncrun cleanup failed', { app: app.name, error }));
  return { output: Buffer.concat(chunks), exitCode: timedOut ? undefined : exitCode };
}
