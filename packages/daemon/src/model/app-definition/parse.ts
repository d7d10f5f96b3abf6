// From input to the internal AppDefinition: the source's schema validates (schema.ts), then the
// accepted wire values are read into the model (instants in ms, durations in seconds, defaults,
// canonical exit codes) and masked secret_env values are resolved against the definition replaced.
//
// Every error is SvcError('invalid_app', '<field path>: <problem>'), problems joined by '; '.
import { canonicalExitCode } from './fields.ts';
import { invalid, issueMessages } from './issues.ts';
import type { Source } from './migrations.ts';
import * as z from 'zod';
import { definitionSchemas, fieldsAreValid, type WireDefinition } from './schema.ts';
import {
  SECRET_MASK,
  type AppDefinition,
  type ExitAction,
  type JsonValue,
  type ResourceLimit,
} from './types.ts';
import {
  accepted,
  formatTimeOfDay,
  parseCron,
  parseDuration,
  parseInstant,
  parsePermission,
  parseTimeOfDay,
} from './values.ts';

export interface ParseOptions {
  /** Bundled apps/*.yaml: `system`, `owner` and `register_time` are accepted from the input. */
  trusted?: boolean;
  /** register_time of a new definition (epoch ms); default Date.now(). */
  now?: number;
  /**
   * The definition being replaced: a secret_env value equal to SECRET_MASK keeps its stored value,
   * so that a client can PUT back what it got from GET.
   */
  previous?: AppDefinition;
}

/**
 * Validate and normalize an application definition from an API body. Throws
 * SvcError('invalid_app', '<path>: <problem>[; ...]').
 */
export function parseAppDefinition(input: unknown, options: ParseOptions = {}): AppDefinition {
  return parseFrom(input, options.trusted === true ? 'bundled' : 'api', options);
}

export function parseFrom(input: unknown, source: Source, options: ParseOptions): AppDefinition {
  const previous = options.previous?.secret_env ?? {};
  const parsed = definitionSchemas[source].check(masksKeep(previous)).safeParse(input);
  if (!parsed.success) throw invalid(issueMessages(parsed.error.issues));
  return toAppDefinition(parsed.data, source, options);
}

/**
 * A secret_env value equal to SECRET_MASK is what GET returned: it keeps the stored value of the
 * definition replaced, and is refused when there is none. Reported with the rules between fields.
 */
function masksKeep(previous: Readonly<Record<string, string>>) {
  return z.superRefine(
    (raw: WireDefinition, context) => {
      for (const [key, value] of Object.entries(raw.secret_env ?? {}))
        if (value === SECRET_MASK && !Object.hasOwn(previous, key))
          context.addIssue({
            code: 'custom',
            path: ['secret_env', key],
            message: `"${SECRET_MASK}" stands for a stored value, but there is none to keep`,
          });
    },
    { when: fieldsAreValid },
  );
}

/** The accepted definition in the internal model. */
export function toAppDefinition(raw: WireDefinition, source: Source, options: ParseOptions): AppDefinition {
  const previous = options.previous?.secret_env ?? {};
  const secretEnv = Object.fromEntries(
    Object.entries(raw.secret_env ?? {}).map(([key, value]): [string, string] => [
      key,
      value === SECRET_MASK ? previous[key]! : value, // masksKeep refused a mask without a value
    ]),
  );
  const periodic = raw.interval !== undefined || raw.cron_schedule !== undefined;
  const def: AppDefinition = {
    name: raw.name,
    command: raw.command,
    shell: raw.shell ?? false,
    session_login: raw.session_login ?? false,
    env: raw.env ?? {},
    secret_env: secretEnv,
    enabled: raw.enabled ?? true,
    stdout_backup_count: raw.stdout_backup_count ?? 3,
    depends_on: [...new Set(raw.depends_on ?? [])],
    behavior: {
      exit: raw.behavior?.exit ?? (periodic ? 'standby' : 'restart'),
      exit_code_actions: Object.fromEntries(
        Object.entries(raw.behavior?.exit_code_actions ?? {}).map(([code, action]): [string, ExitAction] => [
          canonicalExitCode(code),
          action,
        ]),
      ),
    },
    system: source === 'bundled' ? (raw.system ?? false) : false,
    register_time:
      source !== 'api' && raw.register_time !== undefined
        ? accepted(parseInstant(raw.register_time))
        : (options.now ?? Date.now()),
  };
  if (raw.description !== undefined) def.description = raw.description;
  if (raw.working_dir !== undefined) def.working_dir = raw.working_dir;
  if (raw.metadata !== undefined) def.metadata = raw.metadata as JsonValue;
  if (raw.health_check_cmd !== undefined) def.health_check_cmd = raw.health_check_cmd;
  if (raw.start_time !== undefined) def.start_time = accepted(parseInstant(raw.start_time));
  if (raw.end_time !== undefined) def.end_time = accepted(parseInstant(raw.end_time));
  if (raw.interval !== undefined) def.interval = accepted(parseDuration(raw.interval));
  if (raw.cron_schedule !== undefined) def.cron_schedule = accepted(parseCron(raw.cron_schedule));
  if (raw.daily_limitation !== undefined) {
    const { daily_start, daily_end } = raw.daily_limitation;
    def.daily_limitation = {
      daily_start: formatTimeOfDay(accepted(parseTimeOfDay(daily_start))),
      daily_end: formatTimeOfDay(accepted(parseTimeOfDay(daily_end))),
    };
  }
  if (raw.stop_grace_period !== undefined)
    def.stop_grace_period = {
      seconds: accepted(parseDuration(raw.stop_grace_period)),
      text: String(raw.stop_grace_period),
    };
  const limit = raw.resource_limit;
  if (limit !== undefined) {
    const out: ResourceLimit = {};
    if (limit.cpu_shares !== undefined) out.cpu_shares = limit.cpu_shares;
    if (limit.memory_mb !== undefined) out.memory_mb = limit.memory_mb;
    if (limit.memory_virt_mb !== undefined) out.memory_virt_mb = limit.memory_virt_mb;
    def.resource_limit = out;
  }
  if (raw.permission !== undefined) def.permission = accepted(parsePermission(raw.permission));
  if (raw.pid !== undefined) def.pid = raw.pid;
  if (raw.docker_image !== undefined) def.docker_image = raw.docker_image;
  if (source !== 'api' && raw.owner_principal_id !== undefined)
    def.owner_principal_id = raw.owner_principal_id;
  return def;
}

/** The interval in seconds of a periodic (non-cron) app, else undefined. */
export function intervalSeconds(def: Pick<AppDefinition, 'interval'>): number | undefined {
  return def.interval;
}

/** The cron expression of a cron-scheduled app, else undefined. */
export function cronExpression(def: Pick<AppDefinition, 'cron_schedule'>): string | undefined {
  return def.cron_schedule;
}

/** What other principals may do with the app (tens digit of `permission`); absent = deny. */
export function othersAccess(def: Pick<AppDefinition, 'permission'>): 'deny' | 'read' | 'write' {
  const digit = def.permission === undefined ? 1 : Math.floor(def.permission / 10);
  return digit === 3 ? 'write' : digit === 2 ? 'read' : 'deny';
}
