// The small parsers of definition values (each returns the value or the problem as text) and the
// helpers the schema, the views and the file form share.
import { cronParser } from '../../util/cron-parser.ts';
import { LIMITS } from './types.ts';

export type Result<T> = { ok: true; value: T } | { ok: false; message: string };
export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T>(message: string): Result<T> => ({ ok: false, message });

/** Whether `text` is longer than `max` bytes of UTF-8 (a huge string is rejected without encoding it). */
export function exceedsBytes(text: string, max: number): boolean {
  return text.length > max || Buffer.byteLength(text, 'utf8') > max;
}

/** Bytes of `NAME=value\0` entries, as execve receives an environment. */
export function environmentBytes(env: Readonly<Record<string, string>> | undefined): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(env ?? {})) bytes += name.length + Buffer.byteLength(value) + 2;
  return bytes;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** An ISO 8601 date-time as parseInstant reads it (no flags: it is also the JSON Schema pattern). */
export const ISO_DATE_TIME =
  /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?$/;
export const MAX_EPOCH_SECONDS = 253402300799; // 9999-12-31T23:59:59Z

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
/** Every string parseDuration may accept (it refuses some, such as "P", "PT" or too long a duration). */
export const DURATION_TEXT = /^(?:\d{1,12}|P(?:\d+W)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?)$/;

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

/** "HH:MM" or "HH:MM:SS" as parseTimeOfDay reads it (it refuses 24:00, 10:60 and the like). */
export const TIME_OF_DAY = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

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

/** `permission`: two digits, the tens digit what other principals may do (1 deny, 2 read, 3 write). */
export function parsePermission(value: unknown): Result<number> {
  const rule = 'must be a two-digit number (tens digit for other principals: 1 deny, 2 read, 3 write)';
  if (Array.isArray(value))
    return fail(`${rule}; sharing with a list of principal ids is no longer supported`);
  const number = typeof value === 'string' && /^\d{1,2}$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 0 || number > 99) return fail(rule);
  const others = Math.floor(number / 10);
  if (others < 1 || others > 3)
    return fail('tens digit (other principals) must be 1 deny, 2 read or 3 write');
  return ok(number);
}

/** The value of a result the schema already accepted (a refusal here is a bug, not bad input). */
export function accepted<T>(result: Result<T>): T {
  if (!result.ok) throw new Error(`a validated value was refused: ${result.message}`);
  return result.value;
}
