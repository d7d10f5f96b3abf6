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
import { writeBlockYaml } from '../util/block-yaml.ts';
import { cronParser } from '../util/cron-parser.ts';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
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
 * In `behavior.control` an action names exactly what happens for that code: `restart` and
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
  memory_mb?: number;
  cpu_shares?: number;
}

export interface AppBehavior {
  exit: ExitAction;
  /** Keys are canonical decimal exit codes ("1", "-9"); checked before `exit`. */
  control: Record<string, ExitAction>;
}

export interface AppDefinition {
  name: string;
  description?: string;
  command: string;
  /** Run through `/bin/sh -c`; multi-line commands are allowed only then. */
  shell: boolean;
  /** Absolute path. */
  working_dir?: string;
  env: Record<string, string>;
  /** Plaintext in memory; encrypted at rest; never returned by the API. */
  sec_env: Record<string, string>;
  /** Written to the process's stdin: a string as is, any other JSON value as JSON text. */
  metadata?: JsonValue;
  /** 1 enabled, 0 disabled. */
  status: 0 | 1;
  health_check_cmd?: string;
  /** Number of previous output files kept, 0..100. */
  stdout_cache_num: number;
  /** Epoch ms. */
  start_time?: number;
  /** Epoch ms, > start_time. */
  end_time?: number;
  /** Seconds between starts, or a cron expression (string) when `cron` is true. */
  start_interval_seconds?: number | string;
  cron: boolean;
  daily_limitation?: DailyLimitation;
  resource_limit?: ResourceLimit;
  behavior: AppBehavior;
  /** Seconds. */
  retention?: number;
  /** Principal ids the owner shares the app with. */
  permission?: string[];
  /** Adopt this running process instead of spawning. */
  pid?: number;
  /** Principal id of the registering caller; set by the server. */
  owner?: string;
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
  metadataBytes: 1024 * 1024,
  metadataDepth: 64,
  descriptionBytes: 64 * 1024,
  pathBytes: 4096,
  principalIdLength: 256,
  permissionEntries: 1000,
  cronLength: 256,
  stdoutCacheNum: 100,
  exitCode: 255,
  /** Durations are capped at ~68 years. */
  durationSeconds: 2 ** 31 - 1,
} as const;

/** Value shown in place of each sec_env value; sending it back on replace keeps the stored value. */
export const SECRET_MASK = '******';

/** Fields of the API's app view that clients may echo back on PUT; they are ignored. */
export const RUNTIME_FIELDS: readonly string[] = [
  'process_uuid',
  'pid_user',
  'return_code',
  'health',
  'memory',
  'cpu',
  'starts',
  'last_start_time',
  'last_exit_time',
  'next_start_time',
  'last_error',
  'stdout_cache_size',
  'register_time',
  'subscription_id',
];

const SERVER_FIELDS = ['owner', 'register_time'] as const;

// ---------------------------------------------------------------------------------------------
// Small parsers shared by the schema (each returns the value or an error message)

type Result<T> = { ok: true; value: T } | { ok: false; message: string };
const ok = <T>(value: T): Result<T> => ({ ok: true, value });
const fail = <T>(message: string): Result<T> => ({ ok: false, message });

/** Whether `text` is longer than `max` bytes of UTF-8 (a huge string is rejected without encoding it). */
function exceedsBytes(text: string, max: number): boolean {
  return text.length > max || Buffer.byteLength(text, 'utf8') > max;
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
  if (typeof value !== 'string') return fail('must be a cron expression string when cron is true');
  const expression = value.trim();
  if (expression === '') return fail('must be a cron expression string when cron is true');
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
  const hint = 'must be "HH:MM" or "HH:MM:SS" (24-hour local time) or seconds of the day 0..86399';
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0 && value < 86400 ? ok(value) : fail(hint);
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

const principalList = check<string[]>((value, failWith) => {
  if (!Array.isArray(value)) return failWith(`must be an array of principal ids, got ${describe(value)}`);
  if (value.length > LIMITS.permissionEntries) {
    return failWith(`must have at most ${LIMITS.permissionEntries} entries`);
  }
  const out: string[] = [];
  value.forEach((item: unknown, index) => {
    if (
      typeof item !== 'string' ||
      item.length === 0 ||
      item.length > LIMITS.principalIdLength ||
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u001f\u007f]/.test(item)
    ) {
      failWith(
        `must be a principal id: 1..${LIMITS.principalIdLength} characters without control characters`,
        [index],
      );
    } else if (!out.includes(item)) {
      out.push(item);
    }
  });
  return out;
});

const intInRange = (min: number, max: number, message: string): z.ZodType<number> =>
  z
    .number({ error: message })
    .int({ error: message })
    .min(min, { error: message })
    .max(max, { error: message });

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
  working_dir: boundedString({ maxBytes: LIMITS.pathBytes, allowNewline: false, nonEmpty: true })
    .refine((dir) => dir.startsWith('/'), { error: 'must be an absolute path' })
    .optional(),
  env: envRecord('variable').optional(),
  sec_env: envRecord('variable').optional(),
  metadata: metadataSchema.optional(),
  status: z.union([z.literal(0), z.literal(1)], { error: 'must be 1 (enabled) or 0 (disabled)' }).optional(),
  health_check_cmd: boundedString({ maxBytes: LIMITS.commandBytes, nonEmpty: true }).optional(),
  stdout_cache_num: intInRange(
    0,
    LIMITS.stdoutCacheNum,
    `must be an integer from 0 to ${LIMITS.stdoutCacheNum}`,
  ).optional(),
  start_time: fromResult(parseInstant).optional(),
  end_time: fromResult(parseInstant).optional(),
  // Checked against `cron` after the object parse.
  start_interval_seconds: z.unknown().optional(),
  cron: z.boolean({ error: 'must be true or false' }).optional(),
  daily_limitation: z
    .strictObject(
      {
        daily_start: fromResult(parseTimeOfDay, true),
        daily_end: fromResult(parseTimeOfDay, true),
      },
      {
        error: (issue) =>
          issue.code === 'unrecognized_keys' ? undefined : 'must be an object with daily_start and daily_end',
      },
    )
    .optional(),
  resource_limit: z
    .strictObject(
      {
        memory_mb: intInRange(1, 16 * 1024 * 1024, 'must be a positive integer (MiB)').optional(),
        cpu_shares: intInRange(1, 262144, 'must be an integer from 1 to 262144').optional(),
      },
      {
        error: (issue) =>
          issue.code === 'unrecognized_keys'
            ? undefined
            : 'must be an object with memory_mb and/or cpu_shares',
      },
    )
    .optional(),
  behavior: z
    .strictObject(
      { exit: exitAction.optional(), control: controlRecord.optional() },
      {
        error: (issue) =>
          issue.code === 'unrecognized_keys' ? undefined : 'must be an object with exit and/or control',
      },
    )
    .optional(),
  retention: fromResult(parseDuration).optional(),
  permission: principalList.optional(),
  pid: intInRange(1, 2 ** 31 - 1, 'must be a positive integer process id').optional(),
  owner: z.string({ error: 'must be a string' }).max(LIMITS.principalIdLength).optional(),
  system: z.boolean({ error: 'must be true or false' }).optional(),
  register_time: fromResult(parseInstant).optional(),
});

// ---------------------------------------------------------------------------------------------
// Errors

const RECORD_PATHS = new Set(['env', 'sec_env', 'behavior.control']);

/** Render a path as `behavior.control["abc"]`, `env["A"]`, `permission[2]`, `daily_limitation.daily_end`. */
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
   * The definition being replaced: a sec_env value equal to SECRET_MASK keeps its stored value,
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

function parseFrom(input: unknown, source: Source, options: ParseOptions): AppDefinition {
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
  if (source !== 'bundled' && body['system'] === true) {
    throw invalid(['system: only bundled application files (apps/*.yaml) may set system']);
  }
  if (!('name' in body)) body['name'] = undefined;
  if (!('command' in body)) body['command'] = undefined;

  const parsed = appSchema.safeParse(body);
  if (!parsed.success) throw invalid(issueMessages(parsed.error.issues));
  const raw = parsed.data;

  const messages: string[] = [];
  const shell = raw.shell ?? false;
  if (!shell && /[\r\n]/.test(raw.command))
    messages.push('command: must not contain line breaks unless shell is true');

  const cron = raw.cron ?? false;
  let interval: number | string | undefined;
  if (raw.start_interval_seconds !== undefined) {
    if (cron) {
      const result = parseCron(raw.start_interval_seconds);
      if (result.ok) interval = result.value;
      else messages.push(`start_interval_seconds: ${result.message}`);
    } else {
      const result = parseDuration(raw.start_interval_seconds);
      if (!result.ok) {
        const looksCron =
          typeof raw.start_interval_seconds === 'string' && /\s/.test(raw.start_interval_seconds.trim());
        messages.push(
          `start_interval_seconds: ${result.message}${looksCron ? '; set cron: true for a cron expression' : ''}`,
        );
      } else if (result.value < 1) messages.push('start_interval_seconds: must be at least 1 second');
      else interval = result.value;
    }
  } else if (cron) {
    messages.push('start_interval_seconds: is required when cron is true (the cron expression)');
  }

  if (raw.start_time !== undefined && raw.end_time !== undefined && raw.end_time <= raw.start_time) {
    messages.push('end_time: must be after start_time');
  }
  if (
    raw.daily_limitation !== undefined &&
    raw.daily_limitation.daily_start === raw.daily_limitation.daily_end
  ) {
    messages.push('daily_limitation: daily_start and daily_end must differ');
  }

  // A masked value is what GET returned: keep the stored value, or refuse when there is none.
  const previousSecrets = options.previous?.sec_env ?? {};
  const secEnv = Object.fromEntries(
    Object.entries(raw.sec_env ?? {}).map(([key, value]): [string, string] => {
      if (value !== SECRET_MASK) return [key, value];
      const kept = Object.hasOwn(previousSecrets, key) ? previousSecrets[key] : undefined;
      if (kept === undefined) {
        messages.push(
          `sec_env["${key}"]: "${SECRET_MASK}" stands for a stored value, but there is none to keep`,
        );
      }
      return [key, kept ?? value];
    }),
  );
  if (messages.length > 0) throw invalid(messages);

  const def: AppDefinition = {
    name: raw.name,
    command: raw.command,
    shell,
    env: raw.env ?? {},
    sec_env: secEnv,
    status: raw.status ?? 1,
    stdout_cache_num: raw.stdout_cache_num ?? 3,
    cron,
    behavior: {
      exit: raw.behavior?.exit ?? (interval === undefined ? 'restart' : 'standby'),
      control: raw.behavior?.control ?? {},
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
  if (interval !== undefined) def.start_interval_seconds = interval;
  if (raw.daily_limitation !== undefined) {
    def.daily_limitation = {
      daily_start: formatTimeOfDay(raw.daily_limitation.daily_start),
      daily_end: formatTimeOfDay(raw.daily_limitation.daily_end),
    };
  }
  if (raw.resource_limit !== undefined) {
    const limit: ResourceLimit = {};
    if (raw.resource_limit.memory_mb !== undefined) limit.memory_mb = raw.resource_limit.memory_mb;
    if (raw.resource_limit.cpu_shares !== undefined) limit.cpu_shares = raw.resource_limit.cpu_shares;
    def.resource_limit = limit;
  }
  if (raw.retention !== undefined) def.retention = raw.retention;
  if (raw.permission !== undefined) def.permission = raw.permission;
  if (raw.pid !== undefined) def.pid = raw.pid;
  if (source !== 'api' && raw.owner !== undefined) def.owner = raw.owner;
  return def;
}

/** The interval in seconds of a periodic (non-cron) app, else undefined. */
export function intervalSeconds(
  def: Pick<AppDefinition, 'cron' | 'start_interval_seconds'>,
): number | undefined {
  return !def.cron && typeof def.start_interval_seconds === 'number' ? def.start_interval_seconds : undefined;
}

/** The cron expression of a cron-scheduled app, else undefined. */
export function cronExpression(
  def: Pick<AppDefinition, 'cron' | 'start_interval_seconds'>,
): string | undefined {
  return def.cron && typeof def.start_interval_seconds === 'string' ? def.start_interval_seconds : undefined;
}

// ---------------------------------------------------------------------------------------------
// Views

/**
 * The definition as the API returns it: sec_env values masked, instants as ISO 8601 (UTC),
 * durations in seconds. Runtime fields are added by the supervisor.
 */
export function toPublicView(def: AppDefinition): Record<string, unknown> {
  const view: Record<string, unknown> = { ...plainFields(def) };
  view['sec_env'] = Object.fromEntries(Object.keys(def.sec_env).map((key) => [key, SECRET_MASK]));
  return view;
}

/** Every field but sec_env, in a stable order, JSON-ready. */
function plainFields(def: AppDefinition): Record<string, unknown> {
  const iso = (ms: number): string => new Date(ms).toISOString();
  const out: Record<string, unknown> = { name: def.name };
  if (def.description !== undefined) out['description'] = def.description;
  out['command'] = def.command;
  out['shell'] = def.shell;
  if (def.working_dir !== undefined) out['working_dir'] = def.working_dir;
  out['env'] = { ...def.env };
  if (def.metadata !== undefined) out['metadata'] = def.metadata;
  out['status'] = def.status;
  if (def.health_check_cmd !== undefined) out['health_check_cmd'] = def.health_check_cmd;
  out['stdout_cache_num'] = def.stdout_cache_num;
  if (def.start_time !== undefined) out['start_time'] = iso(def.start_time);
  if (def.end_time !== undefined) out['end_time'] = iso(def.end_time);
  if (def.start_interval_seconds !== undefined) out['start_interval_seconds'] = def.start_interval_seconds;
  out['cron'] = def.cron;
  if (def.daily_limitation !== undefined) out['daily_limitation'] = { ...def.daily_limitation };
  if (def.resource_limit !== undefined) out['resource_limit'] = { ...def.resource_limit };
  out['behavior'] = { exit: def.behavior.exit, control: { ...def.behavior.control } };
  if (def.retention !== undefined) out['retention'] = def.retention;
  if (def.permission !== undefined) out['permission'] = [...def.permission];
  if (def.pid !== undefined) out['pid'] = def.pid;
  if (def.owner !== undefined) out['owner'] = def.owner;
  out['system'] = def.system;
  out['register_time'] = iso(def.register_time);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Persistence (work/apps/<name>.yaml and bundled apps/*.yaml)

/** YAML of the definition with every sec_env value encrypted. */
export function serializeApp(def: AppDefinition, crypter: SecretCrypter): string {
  const doc = plainFields(def);
  doc['sec_env'] = Object.fromEntries(
    Object.entries(def.sec_env).map(([key, value]) => [key, crypter.encrypt(value)]),
  );
  // The library only for what the small writer declines (metadata objects, unusual characters).
  return writeBlockYaml(doc) ?? stringifyYaml(doc, { lineWidth: 0 });
}

export interface DeserializeOptions {
  /** Bundled apps/*.yaml: `system: true` is accepted. */
  trusted?: boolean;
  /** File name for messages. */
  file?: string;
}

/**
 * Parse a persisted definition. sec_env values are decrypted (a plaintext value, as an operator
 * may write in a bundled file, is accepted and encrypted on the next save). Throws
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
  const secEnv = doc['sec_env'];
  if (isPlainObject(secEnv)) {
    const plain: Record<string, unknown> = {};
    for (const key of Object.keys(secEnv)) {
      const value = secEnv[key];
      let decrypted: unknown = value;
      if (typeof value === 'string' && isEncryptedToken(value)) {
        try {
          decrypted = crypter.decrypt(value);
        } catch (error) {
          throw new SvcError('invalid_app', `${prefix}sec_env["${key}"]: ${(error as Error).message}`, {
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
    doc['sec_env'] = plain;
  }
  try {
    return parseFrom(doc, options.trusted === true ? 'bundled' : 'stored', {});
  } catch (error) {
    if (error instanceof SvcError)
      throw new SvcError('invalid_app', prefix + error.message, { cause: error });
    throw error;
  }
}
