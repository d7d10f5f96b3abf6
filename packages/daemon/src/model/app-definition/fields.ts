// The fields of an application definition as zod schemas. Each one is the JSON type that the OpenAPI
// document and the web form show, with the bounds JSON Schema can say (pattern, length, range,
// enum), and refines the rest; every refusal is the problem text of svc's invalid_app messages (the
// field path is added by issues.ts). A field validates and keeps the value as sent: reading it into
// the internal model (instants, durations, defaults) is parse.ts.
import * as z from 'zod';
import { reportKey } from './issues.ts';
import { NAME_PATTERN } from '@svc/protocol';
import { ENV_NAME_PATTERN, EXIT_ACTIONS, LIMITS } from './types.ts';
import {
  DURATION_TEXT,
  ISO_DATE_TIME,
  MAX_EPOCH_SECONDS,
  TIME_OF_DAY,
  describe,
  exceedsBytes,
  fail,
  isPlainObject,
  parseCron,
  parseDuration,
  parseInstant,
  parsePermission,
  parseTimeOfDay,
  type Result,
} from './values.ts';

type ErrorMap = (issue: z.core.$ZodRawIssue) => string | undefined;

/** "is required" for a missing value, else `<rule>, got <the kind of value>`. */
const refusal =
  (rule: string) =>
  (input: unknown): string =>
    input === undefined ? 'is required' : `${rule}, got ${describe(input)}`;

const typeError =
  (rule: string): ErrorMap =>
  (issue) =>
    refusal(rule)(issue.input);

/**
 * Refuses a value that is not of `type` (or missing) in front of a schema of that type: zod runs a
 * length check on any value with a length (an array given for a string), even after a type error.
 */
function guarded<T extends z.ZodType>(
  type: 'string' | 'array',
  message: (input: unknown) => string,
  schema: T,
) {
  return z.preprocess((input, context) => {
    if (type === 'string' ? typeof input !== 'string' : !Array.isArray(input))
      context.addIssue(message(input));
    return input;
  }, schema);
}

/** A string of at most `maxBytes` bytes of UTF-8 (JSON Schema: at most as many characters), no NUL. */
export function text(rules: {
  maxBytes: number;
  nonEmpty?: boolean;
  lineBreaks?: boolean;
  pattern?: { regex: RegExp; error: string };
}) {
  const { maxBytes, nonEmpty = false, lineBreaks = true, pattern } = rules;
  const tooLong = { error: `must be at most ${maxBytes} bytes`, abort: true };
  let schema = z.string();
  if (nonEmpty)
    schema = schema
      .min(1, { error: 'must not be empty', abort: true })
      .refine((value) => value.trim() !== '', { error: 'must not be empty', abort: true });
  schema = schema
    .max(maxBytes, tooLong) // a character is at least one byte: the cheap bound first
    .refine((value) => !exceedsBytes(value, maxBytes), tooLong)
    .refine((value) => !value.includes('\0'), { error: 'must not contain NUL characters', abort: true });
  if (!lineBreaks)
    schema = schema.refine((value) => !/[\r\n]/.test(value), {
      error: 'must not contain line breaks',
      abort: true,
    });
  if (pattern !== undefined) schema = schema.regex(pattern.regex, { error: pattern.error });
  return guarded('string', refusal('must be a string'), schema);
}

export const appName = z
  .string({ error: typeError('must be a string') })
  .regex(NAME_PATTERN, { error: `must match ${NAME_PATTERN.source}`, abort: true })
  .refine((name) => name !== '.' && name !== '..', { error: '"." and ".." are not allowed' });

export const flag = () => z.boolean({ error: 'must be true or false' });

export const integer = (min: number, max: number, message: string) =>
  z
    .number({ error: message })
    .int({ error: message })
    .min(min, { error: message })
    .max(max, { error: message });

/**
 * For the checks of a union's branches: a failed check ends its branch, so that a value no branch
 * takes is one refusal of the union (with the union's message), not the branch's own.
 */
const STOP = { abort: true } as const;

/**
 * A field of the JSON types `types` (what JSON Schema shows) whose value `parse` reads: every
 * refusal, of a type or of a value, is `parse`'s own message. `types` must admit every value
 * `parse` accepts.
 */
function parsedBy<T extends z.ZodType>(
  parse: (value: unknown) => Result<unknown>,
  types: (error: ErrorMap) => T,
): T {
  const problem = (value: unknown): string | undefined => {
    const result = parse(value);
    return result.ok ? undefined : result.message;
  };
  return types((issue) =>
    issue.input === undefined ? 'is required' : (problem(issue.input) ?? 'is invalid'),
  ).superRefine((value, context) => {
    const message = problem(value);
    if (message !== undefined) context.addIssue(message);
  });
}

/** Epoch seconds or an ISO 8601 date-time (without an offset: the host's local time). */
export const instant = () =>
  parsedBy(parseInstant, (error) =>
    z.union([z.number().min(0, STOP).max(MAX_EPOCH_SECONDS, STOP), z.string().regex(ISO_DATE_TIME, STOP)], {
      error,
    }),
  );

/** Whole seconds (a number or digits) or an ISO 8601 duration in weeks, days, hours, minutes, seconds. */
export const duration = (parse: (value: unknown) => Result<number> = parseDuration) =>
  parsedBy(parse, (error) =>
    z.union(
      [
        z.number().int(STOP).min(0, STOP).max(LIMITS.durationSeconds, STOP),
        z.string().regex(DURATION_TEXT, STOP),
      ],
      { error },
    ),
  );

/** A duration that points a cron expression sent by mistake to cron_schedule. */
export const interval = () =>
  duration((value) => {
    const result = parseDuration(value);
    if (result.ok || typeof value !== 'string' || !/\s/.test(value.trim())) return result;
    return fail(`${result.message}; use cron_schedule for a cron expression`);
  });

export const cronSchedule = () => parsedBy(parseCron, (error) => z.string({ error }));

/** "HH:MM[:SS]" local time, seconds of the day, or epoch seconds (their local time of day). */
export const timeOfDay = () =>
  parsedBy(parseTimeOfDay, (error) =>
    z.union(
      [z.string().regex(TIME_OF_DAY, STOP), z.number().int(STOP).min(0, STOP).max(MAX_EPOCH_SECONDS, STOP)],
      { error },
    ),
  );

export const permission = () =>
  parsedBy(parsePermission, (error) =>
    z.union([z.number().int(STOP).min(10, STOP).max(39, STOP), z.string().regex(/^[1-3]\d$/, STOP)], {
      error,
    }),
  );

/**
 * env and secret_env: variable name -> value. More than LIMITS.envEntries entries are refused
 * before any is checked. zod's records skip a `__proto__` key: it is reported here.
 */
export function environment() {
  const tooLong = { error: `value must be at most ${LIMITS.valueBytes} bytes`, abort: true };
  const value = guarded(
    'string',
    (input) => `value must be a string, got ${describe(input)}`,
    z
      .string()
      .max(LIMITS.valueBytes, tooLong)
      .refine((text) => !exceedsBytes(text, LIMITS.valueBytes), tooLong)
      .refine((text) => !text.includes('\0'), { error: 'value must not contain NUL characters' }),
  );
  const objectError = typeError('must be an object of string values');
  const entries = z.record(
    z.string().regex(ENV_NAME_PATTERN, { error: `variable name must match ${ENV_NAME_PATTERN.source}` }),
    value,
    { error: (issue) => (issue.code === 'invalid_type' ? objectError(issue) : undefined) },
  );
  return z.preprocess((input, context) => {
    if (!isPlainObject(input)) return input; // the record says what it must be
    if (Object.keys(input).length > LIMITS.envEntries)
      context.addIssue({ code: 'custom', message: `must have at most ${LIMITS.envEntries} entries` });
    else if (Object.hasOwn(input, '__proto__')) reportKey(context, '__proto__', 'reserved name');
    return input;
  }, entries);
}

/** Any JSON value (a string is written to stdin as is), bounded in size and depth. */
export const metadata = () =>
  z.unknown().superRefine((value, context) => {
    const problem = metadataProblem(value);
    if (problem !== undefined) context.addIssue(problem);
  });

function metadataProblem(value: unknown): string | undefined {
  if (typeof value === 'string')
    return exceedsBytes(value, LIMITS.metadataBytes)
      ? `must be at most ${LIMITS.metadataBytes} bytes`
      : undefined;
  // Iterative walk: no recursion, so hostile nesting cannot overflow the stack.
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > LIMITS.metadataDepth) return `must be nested at most ${LIMITS.metadataDepth} levels deep`;
    if (node === null || typeof node === 'string' || typeof node === 'boolean') continue;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) return 'must be a JSON value (numbers must be finite)';
      continue;
    }
    if (Array.isArray(node)) {
      for (const item of node) stack.push({ node: item, depth: depth + 1 });
      continue;
    }
    if (!isPlainObject(node)) return `must be a string or a JSON value, got ${describe(node)}`;
    for (const key of Object.keys(node)) stack.push({ node: node[key], depth: depth + 1 });
  }
  return exceedsBytes(JSON.stringify(value), LIMITS.metadataBytes)
    ? `must be at most ${LIMITS.metadataBytes} bytes as JSON`
    : undefined;
}

/** Names of other applications; more than LIMITS.dependsOnEntries are refused before any is checked. */
export function dependsOn() {
  const rule = `must be an application name matching ${NAME_PATTERN.source}`;
  const tooMany = `must have at most ${LIMITS.dependsOnEntries} entries`;
  const item = z
    .string({ error: rule })
    .regex(NAME_PATTERN, { error: rule, abort: true })
    .refine((name) => name !== '.' && name !== '..', { error: rule });
  const list = z
    .array(item, { error: typeError('must be an array of application names') })
    .max(LIMITS.dependsOnEntries, { error: tooMany });
  return guarded(
    'array',
    refusal('must be an array of application names'),
    // Refused before any entry is checked.
    z.preprocess((input, context) => {
      if (Array.isArray(input) && input.length > LIMITS.dependsOnEntries) context.addIssue(tooMany);
      return input;
    }, list),
  );
}

/** A strict sub-object whose refusal as a whole says what it must be. */
export function subObject<T extends z.core.$ZodLooseShape>(shape: T, what: string) {
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? 'unknown field' : what),
  });
}

export const exitAction = () => z.enum(EXIT_ACTIONS, { error: `must be one of ${EXIT_ACTIONS.join(', ')}` });

/** An exit code as a key of exit_code_actions: an integer, blanks and leading zeros allowed. */
const EXIT_CODE = /^\s*[+-]?\d{1,10}\s*$/;

const inRange = (key: string): boolean => Math.abs(Number(key.trim())) <= LIMITS.exitCode;

/** The canonical form of an exit code key ("+1" -> "1", " 007 " -> "7", "-0" -> "0"). */
export function canonicalExitCode(key: string): string {
  const code = Number(key.trim());
  return String(code === 0 ? 0 : code);
}

/**
 * behavior.exit_code_actions: exit code -> what happens. A second key for one code, and a
 * `__proto__` key (zod's records skip it), are reported in front of the map's own check.
 */
export function exitCodeActions() {
  const objectError = typeError('must be an object mapping exit codes to actions');
  const actions = z.record(
    z
      .string()
      .regex(EXIT_CODE, { error: 'exit code must be an integer', abort: true })
      .refine(inRange, { error: `exit code must be between -${LIMITS.exitCode} and ${LIMITS.exitCode}` }),
    z.enum(EXIT_ACTIONS, { error: `action must be one of ${EXIT_ACTIONS.join(', ')}` }),
    { error: (issue) => (issue.code === 'invalid_type' ? objectError(issue) : undefined) },
  );
  return z.preprocess((input, context) => {
    if (!isPlainObject(input)) return input;
    const first = new Map<string, string>();
    const distinct: Record<string, unknown> = {};
    for (const key of Object.keys(input)) {
      if (key === '__proto__') {
        reportKey(context, key, 'exit code must be an integer');
        continue;
      }
      const code = EXIT_CODE.test(key) && inRange(key) ? canonicalExitCode(key) : undefined;
      const earlier = code === undefined ? undefined : first.get(code);
      if (earlier !== undefined) {
        reportKey(context, key, `same exit code as ${JSON.stringify(earlier)}`);
        continue;
      }
      if (code !== undefined) first.set(code, key);
      Object.defineProperty(distinct, key, {
        value: input[key],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return distinct;
  }, actions);
}
