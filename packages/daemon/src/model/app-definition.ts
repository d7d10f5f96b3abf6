// The application definition (CONTRACT §7): validation of untrusted input, the normalized
// in-memory shape, the public JSON view and the persisted YAML form.
//
// Three sources feed parseAppDefinition, and they differ only in which server-set fields they may
// carry:
//   api      (default)  owner / register_time are ignored, system: true is refused
//   stored   (work/apps/*.yaml, written by us)  owner / register_time are kept
//   bundled  ({trusted: true}, apps/*.yaml)  owner / register_time / system are kept
//
// Every error is SvcError('invalid_app', '<field path>: <problem>'), issues joined by '; '.
import { SvcError } from '@svc/protocol';
import { writeYaml } from '../util/block-yaml.ts';
import { cronParser } from '../util/cron-parser.ts';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import type { SecretCrypter } from './secret-crypter.ts';
import { isEncryptedToken } from './secret-crypter.ts';

// ---------------------------------------------------------------------------------------------
// The normalized shape

export const EXIT_ACTIONS = ['standby', 'restart', 'keepalive', 'remove'] as const;
/**
 * What happens when a process exits on its own (never after a deliberate stop):
 *   standby    stay stopped (a periodic app waits for its next scheduled start)
 *   restart    start again after a failed exit (code != 0, including signals); exit 0 = standby
 *   keepalive  start again after any exit, including 0
 *   remove     remove the application (REMOVED event, file deleted)
 * In `behavior.exit_code_actions` an action names exactly what happens for that code: `restart` and
 * `keepalive` both mean start again.
 */
export type ExitAction = (typeof EXIT_ACTIONS)[number];

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface DailyLimitation {
  /** Local time of day "HH:MM:SS"; the window is [daily_start, daily_end) and may cross midnight. */
  daily_start: string;
  daily_end: string;
}

export interface ResourceLimit {
  cpu_shares?: number;
  memory_mb?: number;
  /** Memory plus swap, MiB; at least memory_mb. */
  memory_virt_mb?: number;
}

export interface AppBehavior {
  exit: ExitAction;
  /** Keys are canonical decimal exit codes ("1", "-9"); checked before `exit`. */
  exit_code_actions: Record<string, ExitAction>;
}

/** Field names are App Mesh 3.0's (docs/decisions.md "Application definition"). */
export interface AppDefinition {
  name: string;
  description?: string;
  command: string;
  /** Run through `/bin/sh -c`; multi-line commands are allowed only then. */
  shell: boolean;
  /** Run as a login session (`/bin/sh -l`) of the execution user. */
  session_login: boolean;
  /** Absolute path. */
  working_dir?: string;
  env: Record<string, string>;
  /** Plaintext in memory; encrypted at rest; never returned by the API. */
  secret_env: Record<string, string>;
  /** Written to the process's stdin: a string as is, any other JSON value as JSON text. */
  metadata?: JsonValue;
  enabled: boolean;
  health_check_cmd?: string;
  /** Number of previous output files kept, 0..100. */
  stdout_backup_count: number;
  /** Epoch ms. */
  start_time?: number;
  /** Epoch ms, > start_time. */
  end_time?: number;
  /** Seconds between starts (periodic app). Exclusive with cron_schedule. */
  interval?: number;
  /** Cron expression (cron-scheduled app). Exclusive with interval. */
  cron_schedule?: string;
  daily_limitation?: DailyLimitation;
  /**
   * Time between SIGTERM and SIGKILL when the app is stopped (default: the daemon's): seconds, and
   * the text the client sent (`"PT3S"`, `"30"`), which is what the API returns (App Mesh 3.0).
   */
  stop_grace_period?: { seconds: number; text: string };
  /** Apps that must be registered, enabled, running and healthy before this one starts. */
  depends_on: string[];
  resource_limit?: ResourceLimit;
  behavior: AppBehavior;
  /** Two digits; the tens digit is what other principals may do: 1 deny, 2 read, 3 write. */
  permission?: number;
  /** Adopt this running process instead of spawning. */
  pid?: number;
  /** Accepted and stored; the app does not start unless a container runtime is configured. */
  docker_image?: string;
  /** Principal id of the registering caller; set by the server. */
  owner_principal_id?: string;
  /** Bundled system application (apps/*.yaml only). */
  system: boolean;
  /** Epoch ms; set by the server. */
  register_time: number;
}

// ---------------------------------------------------------------------------------------------
// Limits and vocabularies

export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const LIMITS = {
  commandBytes: 64 * 1024,
  valueBytes: 64 * 1024,
  envEntries: 1000,
  /**
   * env and secret_env together, as the process receives them (`NAME=value` plus a NUL each): the
   * kernel takes at most ~2 MiB of arguments and environment at exec, svc's own variables included.
   */
  envTotalBytes: 1024 * 1024,
  /** The whole definition as JSON (secret values included): what one application may hold in memory. */
  definitionBytes: 2 * 1024 * 1024,
  /** The largest JSON body that carries one definition (twice the above, for whitespace and escapes). */
  definitionBodyBytes: 4 * 1024 * 1024,
  metadataBytes: 1024 * 1024,
  metadataDepth: 64,
  descriptionBytes: 64 * 1024,
  pathBytes: 4096,
  principalIdLength: 256,
  dependsOnEntries: 64,
  dockerImageBytes: 1024,
  cronLength: 256,
  stdoutBackupCount: 100,
  exitCode: 255,
  /** Durations are capped at ~68 years. */
  durationSeconds: 2 ** 31 - 1,
} as const;

/** Value shown in place of each secret_env value; sending it back on replace keeps the stored value. */
export const SECRET_MASK = '******';

/**
 * Fields of the API's app view (App Mesh 3.0 runtime fields and svc's own) that clients may echo
 * back on PUT; they are ignored.
 */
export const RUNTIME_FIELDS: readonly string[] = [
  'process_uuid',
  'pid_user',
  'return_code',
  'health',
  'memory',
  'cpu',
  'fd',
  'pstree',
  'starts',
  'last_start_time',
  'last_exit_time',
  'next_start_time',
  'last_error',
  'waiting_for',
  'stdout_file_count',
  'owner_display_name',
  'task_id',
  'task_status',
  'subscription_id',
  'container_id',
  'processes',
  'adopted',
  'output_captured',
  'resource_limit_status',
  'transient',
  'state',
  'stdout_cache_size',
];

const SERVER_FIELDS = ['owner_principal_id', 'owner', 'register_time'] as const;

/**
 * Names of the definition before App Mesh 3.0's were adopted, accepted on input (and in stored
 * files, which are rewritten at start) as aliases; output never uses them.
 */
export const LEGACY_FIELDS: Readonly<Record<string, string>> = {
  status: 'enabled',
  sec_env: 'secret_env',
  stdout_cache_num: 'stdout_backup_count',
  start_interval_seconds: 'interval or cron_schedule',
  cron: 'cron_schedule',
  retention: 'stop_grace_period',
  owner: 'owner_principal_id',
};

// ---------------------------------------------------------------------------------------------
// Small parsers shared by the schema (each returns the value or an error message)

type Result<T> = { ok: true; value: T } | { ok: false; message: string };
const ok = <T>(value: T): Result<T> => ({ ok: true, value });
const fail = <T>(message: string): Result<T> => ({ ok: false, message });

/** Whether `text` is longer than `max` bytes of UTF-8 (a huge string is rejected without encoding it). */
function exceedsBytes(text: string, max: number): boolean {
  return text.length > max || Buffer.byteLength(text, 'utf8') > max;
}

/** Bytes of `NAME=value\0` entries, as execve receives an environment. */
function environmentBytes(env: Readonly<Record<string, string>> | undefined): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(env ?? {})) bytes += name.length + Buffer.byteLength(value) + 2;
  return bytes;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

const ISO_DATE_TIME =
  /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const MAX_EPOCH_SECONDS = 253402300799; // 9999-12-31T23:59:59Z

/** Epoch seconds (number) or ISO 8601 date-time (no offset = host local time) -> epoch ms. */
export function parseInstant(value: unknown): Result<number> {
  const hint = 'must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z';
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0 || value > MAX_EPOCH_SECONDS) return fail(hint);
    return ok(Math.round(value * 1000));
  }
  if (typeof value !== 'string') return fail(hint);
  if (!ISO_DATE_TIME.test(value)) return fail(`${hint} (got ${JSON.stringify(value.slice(0, 64))})`);
  // Normalize "+hh" and "+hhmm" offsets to "+hh:mm", which Date.parse accepts everywhere.
  const normalized = value
    .replace(' ', 'T')
    .replace(/([+-]\d{2})(\d{2})?$/, (_m, h: string, m?: string) => `${h}:${m ?? '00'}`);
  const ms = Date.parse(normalized);
  if (Number.isNaN(ms)) return fail(`${hint} (got ${JSON.stringify(value.slice(0, 64))})`);
  return ok(ms);
}

const ISO_DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

/** Integer seconds (number or digit string) or an ISO 8601 duration (PT5M, P1DT2H, P2W) -> seconds. */
export function parseDuration(value: unknown): Result<number> {
  const hint = 'must be whole seconds or an ISO 8601 duration like PT5M';
  let seconds: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0) return fail(`${hint}`);
    seconds = value;
  } else if (typeof value === 'string' && /^\d{1,12}$/.test(value)) {
    seconds = Number(value);
  } else if (typeof value === 'string') {
    const m = ISO_DURATION.exec(value);
    if (m === null || value === 'P' || value.endsWith('T')) {
      if (/^P(?:\d+Y|.*\d+M.*T|\d+M)/.test(value)) {
        return fail(
          `years and months are not fixed lengths; use weeks, days, hours, minutes, seconds (got ${JSON.stringify(value.slice(0, 64))})`,
        );
      }
      return fail(`${hint} (got ${JSON.stringify(value.slice(0, 64))})`);
    }
    const [, w, d, h, mi, s] = m.map((part) => Number(part ?? 0));
    seconds = (w ?? 0) * 604800 + (d ?? 0) * 86400 + (h ?? 0) * 3600 + (mi ?? 0) * 60 + (s ?? 0);
  } else {
    return fail(hint);
  }
  if (seconds > LIMITS.durationSeconds) return fail(`must be at most ${LIMITS.durationSeconds} seconds`);
  return ok(seconds);
}

/** Validate a cron expression (5 fields, or 6 with seconds first, or @daily etc.). */
export function parseCron(value: unknown): Result<string> {
  if (typeof value !== 'string') return fail('must be a cron expression string');
  const expression = value.trim();
  if (expression === '') return fail('must be a cron expression string');
  if (expression.length > LIMITS.cronLength)
    return fail(`cron expression must be at most ${LIMITS.cronLength} characters`);
  try {
    const parsed = cronParser().CronExpressionParser.parse(expression, { currentDate: 0, tz: 'UTC' });
    parsed.next();
  } catch (error) {
    return fail(`invalid cron expression ${JSON.stringify(expression)}: ${(error as Error).message}`);
  }
  return ok(expression);
}

const TIME_OF_DAY = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

/** "HH:MM", "HH:MM:SS" or integer seconds of day -> seconds of day. */
export function parseTimeOfDay(value: unknown): Result<number> {
  const hint =
    'must be "HH:MM" or "HH:MM:SS" (24-hour local time), seconds of the day 0..86399 or epoch seconds';
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 0 || value > MAX_EPOCH_SECONDS) return fail(hint);
    if (value < 86400) return ok(value);
    // An epoch timestamp (App Mesh 3.0 SDKs send one): its time of day in the host's zone.
    const at = new Date(value * 1000);
    return ok(at.getHours() * 3600 + at.getMinutes() * 60 + at.getSeconds());
  }
  if (typeof value !== 'string') return fail(hint);
  const m = TIME_OF_DAY.exec(value);
  if (m === null) return fail(hint);
  const h = Number(m[1]);
  const mi = Number(m[2]);
  const s = Number(m[3] ?? 0);
  if (h > 23 || mi > 59 || s > 59) return fail(hint);
  return ok(h * 3600 + mi * 60 + s);
}

export function formatTimeOfDay(seconds: number): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor((seconds % 3600) / 60))}:${pad(seconds % 60)}`;
}

// ---------------------------------------------------------------------------------------------
// The schema. Each field is a zod schema whose messages are the problem text; the path is added
// by formatIssues. Custom checks run in `check`, which collects issues with sub-paths.

const FAILED: unique symbol = Symbol('failed');
type Failed = typeof FAILED;
type Fail = (message: string, path?: (string | number)[]) => Failed;

/** A field validated by a function; issues it reports carry paths relative to the field. */
function check<T>(fn: (value: unknown, fail: Fail) => T | Failed): z.ZodType<T> {
  return z.unknown().transform((value, ctx) => {
    let failed = false;
    const out = fn(value, (message, path = []) => {
      failed = true;
      ctx.issues.push({ code: 'custom', message, input: value, path });
      return FAILED;
    });
    return failed || out === FAILED ? z.NEVER : out;
  });
}

function boundedString(opts: {
  maxBytes: number;
  allowNewline?: boolean;
  nonEmpty?: boolean;
  required?: boolean;
}): z.ZodType<string> {
  return check((value, failWith) => {
    if (opts.required === true && value === undefined) return failWith('is required');
    if (typeof value !== 'string') return failWith(`must be a string, got ${describe(value)}`);
    if (opts.nonEmpty === true && value.trim() === '') return failWith('must not be empty');
    if (exceedsBytes(value, opts.maxBytes)) return failWith(`must be at most ${opts.maxBytes} bytes`);
    if (value.includes('\0')) return failWith('must not contain NUL characters');
    if (opts.allowNewline === false && /[\r\n]/.test(value)) return failWith('must not contain line breaks');
    return value;
  });
}

function fromResult<T>(parse: (value: unknown) => Result<T>, required = false): z.ZodType<T> {
  return check((value, failWith) => {
    if (required && value === undefined) return failWith('is required');
    const result = parse(value);
    if (!result.ok) return failWith(result.message);
    return result.value;
  });
}

const envRecord = (label: string): z.ZodType<Record<string, string>> =>
  check((value, failWith) => {
    if (!isPlainObject(value)) return failWith(`must be an object of string values, got ${describe(value)}`);
    const keys = Object.keys(value);
    if (keys.length > LIMITS.envEntries) return failWith(`must have at most ${LIMITS.envEntries} entries`);
    const entries: [string, string][] = [];
    for (const key of keys) {
      const item = value[key];
      if (key === '__proto__') failWith('reserved name', [key]);
      else if (!ENV_NAME_PATTERN.test(key))
        failWith(`${label} name must match ${ENV_NAME_PATTERN.source}`, [key]);
      else if (typeof item !== 'string') failWith(`value must be a string, got ${describe(item)}`, [key]);
      else if (exceedsBytes(item, LIMITS.valueBytes))
        failWith(`value must be at most ${LIMITS.valueBytes} bytes`, [key]);
      else if (item.includes('\0')) failWith('value must not contain NUL characters', [key]);
      else entries.push([key, item]);
    }
    return Object.fromEntries(entries);
  });

const exitAction = z.enum(EXIT_ACTIONS, { error: `must be one of ${EXIT_ACTIONS.join(', ')}` });

const controlRecord = check<Record<string, ExitAction>>((value, failWith) => {
  if (!isPlainObject(value))
    return failWith(`must be an object mapping exit codes to actions, got ${describe(value)}`);
  const entries: [string, ExitAction][] = [];
  const seen = new Map<string, string>();
  for (const key of Object.keys(value)) {
    const action = value[key];
    if (!/^[+-]?\d{1,10}$/.test(key.trim())) {
      failWith('exit code must be an integer', [key]);
      continue;
    }
    const code = Number(key.trim());
    if (Math.abs(code) > LIMITS.exitCode) {
      failWith(`exit code must be between -${LIMITS.exitCode} and ${LIMITS.exitCode}`, [key]);
      continue;
    }
    const canonical = String(code === 0 ? 0 : code); // folds "-0" into "0"
    const previous = seen.get(canonical);
    if (previous !== undefined) {
      failWith(`same exit code as ${JSON.stringify(previous)}`, [key]);
      continue;
    }
    seen.set(canonical, key);
    if (typeof action !== 'string' || !(EXIT_ACTIONS as readonly string[]).includes(action)) {
      failWith(`action must be one of ${EXIT_ACTIONS.join(', ')}`, [key]);
      continue;
    }
    entries.push([canonical, action as ExitAction]);
  }
  return Object.fromEntries(entries);
});

const metadataSchema = check<JsonValue>((value, failWith) => {
  if (typeof value === 'string') {
    if (exceedsBytes(value, LIMITS.metadataBytes)) failWith(`must be at most ${LIMITS.metadataBytes} bytes`);
    return value;
  }
  // Iterative walk: no recursion, so hostile nesting cannot overflow the stack.
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > LIMITS.metadataDepth)
      return failWith(`must be nested at most ${LIMITS.metadataDepth} levels deep`);
    if (node === null || typeof node === 'string' || typeof node === 'boolean') continue;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) return failWith('must be a JSON value (numbers must be finite)');
      continue;
    }
    if (Array.isArray(node)) {
      for (const item of node) stack.push({ node: item, depth: depth + 1 });
      continue;
    }
    if (isPlainObject(node)) {
      for (const key of Object.keys(node)) stack.push({ node: node[key], depth: depth + 1 });
      continue;
    }
    return failWith(`must be a string or a JSON value, got ${describe(node)}`);
  }
  if (exceedsBytes(JSON.stringify(value), LIMITS.metadataBytes)) {
    return failWith(`must be at most ${LIMITS.metadataBytes} bytes as JSON`);
  }
  return value as JsonValue;
});

const dependsOnList = check<string[]>((value, failWith) => {
  if (!Array.isArray(value)) return failWith(`must be an array of application names, got ${describe(value)}`);
  if (value.length > LIMITS.dependsOnEntries) {
    return failWith(`must have at most ${LIMITS.dependsOnEntries} entries`);
  }
  const out: string[] = [];
  value.forEach((item: unknown, index) => {
    if (typeof item !== 'string' || !NAME_PATTERN.test(item) || item === '.' || item === '..') {
      failWith(`must be an application name matching ${NAME_PATTERN.source}`, [index]);
    } else if (!out.includes(item)) {
      out.push(item);
    }
  });
  return out;
});

/** Two digits; the tens digit (others) must be 1 deny, 2 read or 3 write. */
const permissionDigits = check<number>((value, failWith) => {
  if (Array.isArray(value)) {
    return failWith(
      'must be a two-digit number (tens digit for other principals: 1 deny, 2 read, 3 write); ' +
        'sharing with a list of principal ids is no longer supported',
    );
  }
  const number = typeof value === 'string' && /^\d{1,2}$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 0 || number > 99) {
    return failWith('must be a two-digit number (tens digit for other principals: 1 deny, 2 read, 3 write)');
  }
  const others = Math.floor(number / 10);
  if (others < 1 || others > 3)
    return failWith('tens digit (other principals) must be 1 deny, 2 read or 3 write');
  return number;
});

const intInRange = (min: number, max: number, message: string): z.ZodType<number> =>
  z
    .number({ error: message })
    .int({ error: message })
    .min(min, { error: message })
    .max(max, { error: message });

/** A strict sub-object whose non-key errors say what it must be. */
function subObject<T extends z.core.$ZodLooseShape>(shape: T, what: string) {
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? undefined : what),
  });
}

const appSchema = z.strictObject({
  name: check((value, failWith) => {
    if (value === undefined) return failWith('is required');
    if (typeof value !== 'string') return failWith(`must be a string, got ${describe(value)}`);
    if (!NAME_PATTERN.test(value)) return failWith(`must match ${NAME_PATTERN.source}`);
    if (value === '.' || value === '..') return failWith('"." and ".." are not allowed');
    return value;
  }),
  description: boundedString({ maxBytes: LIMITS.descriptionBytes }).optional(),
  command: boundedString({ maxBytes: LIMITS.commandBytes, nonEmpty: true, required: true }),
  shell: z.boolean({ error: 'must be true or false' }).optional(),
  session_login: z.boolean({ error: 'must be true or false' }).optional(),
  working_dir: boundedString({ maxBytes: LIMITS.pathBytes, allowNewline: false, nonEmpty: true })
    .refine((dir) => dir.startsWith('/'), { error: 'must be an absolute path' })
    .optional(),
  env: envRecord('variable').optional(),
  secret_env: envRecord('variable').optional(),
  metadata: metadataSchema.optional(),
  enabled: z.boolean({ error: 'must be true or false' }).optional(),
  health_check_cmd: boundedString({ maxBytes: LIMITS.commandBytes, nonEmpty: true }).optional(),
  stdout_backup_count: intInRange(
    0,
    LIMITS.stdoutBackupCount,
    `must be an integer from 0 to ${LIMITS.stdoutBackupCount}`,
  ).optional(),
  start_time: fromResult(parseInstant).optional(),
  end_time: fromResult(parseInstant).optional(),
  interval: fromResult((value): Result<number> => {
    const result = parseDuration(value);
    if (result.ok || typeof value !== 'string' || !/\s/.test(value.trim())) return result;
    return fail(`${result.message}; use cron_schedule for a cron expression`);
  }).optional(),
  cron_schedule: fromResult(parseCron).optional(),
  daily_limitation: subObject(
    {
      daily_start: fromResult(parseTimeOfDay, true),
      daily_end: fromResult(parseTimeOfDay, true),
    },
    'must be an object with daily_start and daily_end',
  ).optional(),
  stop_grace_period: fromResult((value): Result<{ seconds: number; text: string }> => {
    const result = parseDuration(value);
    return result.ok ? ok({ seconds: result.value, text: String(value) }) : result;
  }).optional(),
  depends_on: dependsOnList.optional(),
  resource_limit: subObject(
    {
      cpu_shares: intInRange(1, 262144, 'must be an integer from 1 to 262144').optional(),
      memory_mb: intInRange(1, 16 * 1024 * 1024, 'must be a positive integer (MiB)').optional(),
      memory_virt_mb: intInRange(1, 16 * 1024 * 1024, 'must be a positive integer (MiB)').optional(),
    },
    'must be an object with cpu_shares, memory_mb and/or memory_virt_mb',
  ).optional(),
  behavior: subObject(
    { exit: exitAction.optional(), exit_code_actions: controlRecord.optional() },
    'must be an object with exit and/or exit_code_actions',
  ).optional(),
  permission: permissionDigits.optional(),
  pid: intInRange(1, 2 ** 31 - 1, 'must be a positive integer process id').optional(),
  docker_image: boundedString({
    maxBytes: LIMITS.dockerImageBytes,
    allowNewline: false,
    nonEmpty: true,
  }).optional(),
  owner_principal_id: z.string({ error: 'must be a string' }).max(LIMITS.principalIdLength).optional(),
  system: z.boolean({ error: 'must be true or false' }).optional(),
  register_time: fromResult(parseInstant).optional(),
});

// ---------------------------------------------------------------------------------------------
// Errors

const RECORD_PATHS = new Set(['env', 'secret_env', 'behavior.exit_code_actions']);

/** Render a path as `behavior.exit_code_actions["abc"]`, `env["A"]`, `depends_on[2]`, `daily_limitation.daily_end`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (
      RECORD_PATHS.has(out) ||
      typeof segment === 'symbol' ||
      !/^[A-Za-z_][A-Za-z0-9_]*$/.test(segment)
    ) {
      out += `[${JSON.stringify(String(segment))}]`;
    } else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

function issueMessages(issues: readonly z.core.$ZodIssue[]): string[] {
  const messages: string[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) messages.push(`${formatPath([...issue.path, key])}: unknown field`);
    } else if (
      issue.code === 'invalid_union' &&
      issue.errors.length > 0 &&
      issue.message === 'Invalid input'
    ) {
      messages.push(...issueMessages(issue.errors[0] ?? []));
    } else {
      const where = formatPath(issue.path);
      messages.push(where === '' ? issue.message : `${where}: ${issue.message}`);
    }
  }
  return messages;
}

function invalid(messages: string[], prefix = ''): SvcError {
  const shown = messages.slice(0, 10);
  const more = messages.length > shown.length ? `; and ${messages.length - shown.length} more` : '';
  return new SvcError('invalid_app', prefix + shown.join('; ') + more);
}

// ---------------------------------------------------------------------------------------------
// Parsing

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

type Source = 'api' | 'stored' | 'bundled';

/**
 * Validate and normalize an application definition from an API body. Throws
 * SvcError('invalid_app', '<path>: <problem>[; ...]').
 */
export function parseAppDefinition(input: unknown, options: ParseOptions = {}): AppDefinition {
  return parseFrom(input, options.trusted === true ? 'bundled' : 'api', options);
}

/**
 * Rewrite the names of the definition before App Mesh 3.0's (LEGACY_FIELDS) into 3.0's, in place.
 * `stored` files may carry a share list in `permission`; it becomes 11 (others denied), the only
 * safe reading. Returns the legacy names found (the caller rewrites a stored file that had any).
 */
function renameLegacyFields(body: Record<string, unknown>, source: Source, problems: string[]): string[] {
  const found: string[] = [];
  const move = (from: string, to: string, value: unknown): void => {
    found.push(from);
    delete body[from];
    if (to in body) {
      problems.push(`${from}: is the old name of ${to}; send only ${to}`);
      return;
    }
    Object.defineProperty(body, to, { value, enumerable: true, writable: true, configurable: true });
  };
  if ('status' in body) {
    const status = body['status'];
    if (status === 0 || status === 1) move('status', 'enabled', status === 1);
    else {
      delete body['status'];
      problems.push('status: must be 1 (enabled) or 0 (disabled)');
    }
  }
  if ('sec_env' in body) move('sec_env', 'secret_env', body['sec_env']);
  if ('stdout_cache_num' in body) move('stdout_cache_num', 'stdout_backup_count', body['stdout_cache_num']);
  if ('retention' in body) move('retention', 'stop_grace_period', body['retention']);
  if ('owner' in body) move('owner', 'owner_principal_id', body['owner']);
  if ('cron' in body || 'start_interval_seconds' in body) {
    const cron = body['cron'];
    if (cron !== undefined && typeof cron !== 'boolean') problems.push('cron: must be true or false');
    if ('cron' in body) {
      found.push('cron');
      delete body['cron'];
    }
    if ('start_interval_seconds' in body) {
      const target = cron === true ? 'cron_schedule' : 'interval';
      move('start_interval_seconds', target, body['start_interval_seconds']);
    } else if (cron === true) {
      problems.push('cron: use cron_schedule with the cron expression');
    }
  }
  const behavior = body['behavior'];
  if (isPlainObject(behavior) && 'control' in behavior) {
    found.push('behavior.control');
    if ('exit_code_actions' in behavior)
      problems.push('behavior.control: is the old name of behavior.exit_code_actions; send only the latter');
    else {
      const { control, ...rest } = behavior;
      body['behavior'] = { ...rest, exit_code_actions: control };
    }
  }
  if (source !== 'api' && Array.isArray(body['permission'])) {
    found.push('permission');
    body['permission'] = 11;
  }
  return found;
}

function parseFrom(
  input: unknown,
  source: Source,
  options: ParseOptions,
  onLegacy?: (fields: string[]) => void,
): AppDefinition {
  if (!isPlainObject(input)) {
    throw invalid([`application definition must be a JSON object, got ${describe(input)}`]);
  }
  // Copy own keys only (JSON.parse makes "__proto__" an own key; a strict schema reports it).
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(input)) {
    const value = input[key];
    if (value === null || value === undefined) continue; // null = not set
    if (
      source === 'api' &&
      (RUNTIME_FIELDS.includes(key) || (SERVER_FIELDS as readonly string[]).includes(key))
    )
      continue;
    Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true });
  }
  const messages: string[] = [];
  const legacy = renameLegacyFields(body, source, messages);
  if (legacy.length > 0) onLegacy?.(legacy);
  if (source !== 'bundled' && body['system'] === true) {
    throw invalid(['system: only bundled application files (apps/*.yaml) may set system']);
  }
  if (!('name' in body)) body['name'] = undefined;
  if (!('command' in body)) body['command'] = undefined;

  const parsed = appSchema.safeParse(body);
  if (!parsed.success) throw invalid([...messages, ...issueMessages(parsed.error.issues)]);
  const raw = parsed.data;

  const shell = raw.shell ?? false;
  if (!shell && /[\r\n]/.test(raw.command))
    messages.push('command: must not contain line breaks unless shell is true');
  if (raw.interval !== undefined && raw.cron_schedule !== undefined)
    messages.push('interval: give either interval or cron_schedule, not both');
  if (raw.interval !== undefined && raw.interval < 1) messages.push('interval: must be at least 1 second');
  if (raw.start_time !== undefined && raw.end_time !== undefined && raw.end_time <= raw.start_time) {
    messages.push('end_time: must be after start_time');
  }
  if (
    raw.daily_limitation !== undefined &&
    raw.daily_limitation.daily_start === raw.daily_limitation.daily_end
  ) {
    messages.push('daily_limitation: daily_start and daily_end must differ');
  }
  const limit = raw.resource_limit;
  if (
    limit?.memory_virt_mb !== undefined &&
    limit.memory_mb !== undefined &&
    limit.memory_virt_mb < limit.memory_mb
  )
    messages.push('resource_limit.memory_virt_mb: must be at least memory_mb');
  if (raw.depends_on?.includes(raw.name) === true)
    messages.push(`depends_on: an application cannot depend on itself (${raw.name})`);
  // Totals of API input only: a file stored before these caps still loads (its next PUT must fit).
  if (source === 'api') {
    const envBytes = environmentBytes(raw.env) + environmentBytes(raw.secret_env);
    if (envBytes > LIMITS.envTotalBytes)
      messages.push(
        `env: env and secret_env together must be at most ${LIMITS.envTotalBytes} bytes as the process receives them (NAME=value), got ${envBytes}`,
      );
    else if (exceedsBytes(JSON.stringify(body), LIMITS.definitionBytes))
      messages.push(`(definition): must be at most ${LIMITS.definitionBytes} bytes as JSON`);
  }

  // A masked value is what GET returned: keep the stored value, or refuse when there is none.
  const previousSecrets = options.previous?.secret_env ?? {};
  const secretEnv = Object.fromEntries(
    Object.entries(raw.secret_env ?? {}).map(([key, value]): [string, string] => {
      if (value !== SECRET_MASK) return [key, value];
      const kept = Object.hasOwn(previousSecrets, key) ? previousSecrets[key] : undefined;
      if (kept === undefined) {
        messages.push(
          `secret_env["${key}"]: "${SECRET_MASK}" stands for a stored value, but there is none to keep`,
        );
      }
      return [key, kept ?? value];
    }),
  );
  if (messages.length > 0) throw invalid(messages);

  const periodic = raw.interval !== undefined || raw.cron_schedule !== undefined;
  const def: AppDefinition = {
    name: raw.name,
    command: raw.command,
    shell,
    session_login: raw.session_login ?? false,
    env: raw.env ?? {},
    secret_env: secretEnv,
    enabled: raw.enabled ?? true,
    stdout_backup_count: raw.stdout_backup_count ?? 3,
    depends_on: raw.depends_on ?? [],
    behavior: {
      exit: raw.behavior?.exit ?? (periodic ? 'standby' : 'restart'),
      exit_code_actions: raw.behavior?.exit_code_actions ?? {},
    },
    system: source === 'bundled' ? (raw.system ?? false) : false,
    register_time:
      source !== 'api' && raw.register_time !== undefined ? raw.register_time : (options.now ?? Date.now()),
  };
  if (raw.description !== undefined) def.description = raw.description;
  if (raw.working_dir !== undefined) def.working_dir = raw.working_dir;
  if (raw.metadata !== undefined) def.metadata = raw.metadata;
  if (raw.health_check_cmd !== undefined) def.health_check_cmd = raw.health_check_cmd;
  if (raw.start_time !== undefined) def.start_time = raw.start_time;
  if (raw.end_time !== undefined) def.end_time = raw.end_time;
  if (raw.interval !== undefined) def.interval = raw.interval;
  if (raw.cron_schedule !== undefined) def.cron_schedule = raw.cron_schedule;
  if (raw.daily_limitation !== undefined) {
    def.daily_limitation = {
      daily_start: formatTimeOfDay(raw.daily_limitation.daily_start),
      daily_end: formatTimeOfDay(raw.daily_limitation.daily_end),
    };
  }
  if (raw.stop_grace_period !== undefined) def.stop_grace_period = raw.stop_grace_period;
  if (limit !== undefined) {
    const out: ResourceLimit = {};
    if (limit.cpu_shares !== undefined) out.cpu_shares = limit.cpu_shares;
    if (limit.memory_mb !== undefined) out.memory_mb = limit.memory_mb;
    if (limit.memory_virt_mb !== undefined) out.memory_virt_mb = limit.memory_virt_mb;
    def.resource_limit = out;
  }
  if (raw.permission !== undefined) def.permission = raw.permission;
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

// ---------------------------------------------------------------------------------------------
// Views

/**
 * The definition as the API returns it (App Mesh 3.0 names): secret_env values masked, instants
 * as epoch seconds, daily_limitation as seconds of the local day, interval in seconds,
 * stop_grace_period as the text it was given (the 3.0 SDKs read it as a string). Runtime fields are
 * added by the supervisor.
 */
export function toPublicView(def: AppDefinition): Record<string, unknown> {
  const view: Record<string, unknown> = { ...plainFields(def, 'api') };
  view['secret_env'] = Object.fromEntries(Object.keys(def.secret_env).map((key) => [key, SECRET_MASK]));
  return view;
}

/**
 * Every field but secret_env, in a stable order, JSON-ready. The file form keeps instants as
 * ISO 8601 and daily windows as "HH:MM:SS", which an operator reads more easily.
 */
function plainFields(def: AppDefinition, form: 'api' | 'file'): Record<string, unknown> {
  const instant = (ms: number): string | number =>
    form === 'file' ? new Date(ms).toISOString() : Math.floor(ms / 1000);
  const timeOfDay = (text: string): string | number => {
    if (form === 'file') return text;
    const parsed = parseTimeOfDay(text);
    return parsed.ok ? parsed.value : text;
  };
  const out: Record<string, unknown> = { name: def.name };
  if (def.description !== undefined) out['description'] = def.description;
  out['command'] = def.command;
  out['shell'] = def.shell;
  out['session_login'] = def.session_login;
  if (def.working_dir !== undefined) out['working_dir'] = def.working_dir;
  out['env'] = { ...def.env };
  if (def.metadata !== undefined) out['metadata'] = def.metadata;
  out['enabled'] = def.enabled;
  if (def.health_check_cmd !== undefined) out['health_check_cmd'] = def.health_check_cmd;
  out['stdout_backup_count'] = def.stdout_backup_count;
  if (def.start_time !== undefined) out['start_time'] = instant(def.start_time);
  if (def.end_time !== undefined) out['end_time'] = instant(def.end_time);
  if (def.interval !== undefined) out['interval'] = def.interval;
  if (def.cron_schedule !== undefined) out['cron_schedule'] = def.cron_schedule;
  if (def.daily_limitation !== undefined) {
    out['daily_limitation'] = {
      daily_start: timeOfDay(def.daily_limitation.daily_start),
      daily_end: timeOfDay(def.daily_limitation.daily_end),
    };
  }
  if (def.stop_grace_period !== undefined) out['stop_grace_period'] = def.stop_grace_period.text;
  if (def.depends_on.length > 0) out['depends_on'] = [...def.depends_on];
  if (def.resource_limit !== undefined) out['resource_limit'] = { ...def.resource_limit };
  out['behavior'] = { exit: def.behavior.exit, exit_code_actions: { ...def.behavior.exit_code_actions } };
  if (def.permission !== undefined) out['permission'] = def.permission;
  if (def.pid !== undefined) out['pid'] = def.pid;
  if (def.docker_image !== undefined) out['docker_image'] = def.docker_image;
  if (def.owner_principal_id !== undefined) out['owner_principal_id'] = def.owner_principal_id;
  out['system'] = def.system;
  out['register_time'] = instant(def.register_time);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Persistence (work/apps/<name>.yaml and bundled apps/*.yaml)

/** YAML of the definition with every secret_env value encrypted. */
export function serializeApp(def: AppDefinition, crypter: SecretCrypter): string {
  const doc = plainFields(def, 'file');
  doc['secret_env'] = Object.fromEntries(
    Object.entries(def.secret_env).map(([key, value]) => [key, crypter.encrypt(value)]),
  );
  return writeYaml(doc); // YAML 1.1 and 1.2 safe (util/block-yaml.ts)
}

export interface DeserializeOptions {
  /** Bundled apps/*.yaml: `system: true` is accepted. */
  trusted?: boolean;
  /** File name for messages. */
  file?: string;
  /** Called with the old field names (LEGACY_FIELDS) the file used; its owner may rewrite it. */
  onLegacy?: (fields: string[]) => void;
}

/**
 * Parse a persisted definition. secret_env values are decrypted (a plaintext value, as an operator
 * may write in a bundled file, is accepted and encrypted on the next save). Files of the shape
 * before App Mesh 3.0's names are read through the same aliases as API input. Throws
 * SvcError('invalid_app', '<file>: <problem>').
 */
export function deserializeApp(
  text: string,
  crypter: SecretCrypter,
  options: DeserializeOptions = {},
): AppDefinition {
  const prefix = `${options.file ?? 'application file'}: `;
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100, uniqueKeys: true });
  } catch (error) {
    throw new SvcError(
      'invalid_app',
      `${prefix}not valid YAML: ${(error as Error).message.split('\n')[0] ?? ''}`,
      {
        cause: error,
      },
    );
  }
  if (!isPlainObject(doc))
    throw invalid([`must be a YAML mapping of application fields, got ${describe(doc)}`], prefix);
  for (const field of ['secret_env', 'sec_env']) {
    const secrets = doc[field];
    if (isPlainObject(secrets)) doc[field] = decryptAll(secrets, crypter, `${prefix}${field}`);
  }
  try {
    return parseFrom(doc, options.trusted === true ? 'bundled' : 'stored', {}, options.onLegacy);
  } catch (error) {
    if (error instanceof SvcError)
      throw new SvcError('invalid_app', prefix + error.message, { cause: error });
    throw error;
  }
}

function decryptAll(
  secrets: Record<string, unknown>,
  crypter: SecretCrypter,
  where: string,
): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const key of Object.keys(secrets)) {
    const value = secrets[key];
    let decrypted: unknown = value;
    if (typeof value === 'string' && isEncryptedToken(value)) {
      try {
        decrypted = crypter.decrypt(value);
      } catch (error) {
        throw new SvcError('invalid_app', `${where}["${key}"]: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
    Object.defineProperty(plain, key, {
      value: decrypted,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return plain;
}

/** Every field an application definition may carry (the API documents them in api/schemas.ts). */
export const APP_DEFINITION_FIELDS: readonly string[] = Object.keys(appSchema.shape);
