// When an application may start and whether it may keep running. Pure functions over a clock
// passed in; the runtime owns the timers.
//
//   start_time / end_time   nothing starts before start_time; nothing starts or runs from end_time on
//   daily_limitation        starts and runs only inside [daily_start, daily_end) of the local day;
//                           daily_start > daily_end is a window across midnight
//   interval                periodic: starts on a grid of `interval` (anchored at start_time, else at
//                           the last start); missed slots are skipped, never made up in a burst
//   cron_schedule           the next cron occurrence; occurrences outside the daily window are skipped
//
// "Local" is the host's time zone unless `tz` (an IANA name) is given; tests pass 'UTC'.
import { cronParser } from '../util/cron-parser.ts';
import type { AppDefinition } from '../model/app-definition.ts';
import { cronExpression, intervalSeconds, parseTimeOfDay } from '../model/app-definition.ts';

export type ScheduleDefinition = Pick<
  AppDefinition,
  'enabled' | 'start_time' | 'end_time' | 'interval' | 'cron_schedule' | 'daily_limitation'
>;

export interface RunHistory {
  lastStartAt?: number;
  lastExitAt?: number;
}

export interface ScheduleOptions {
  /** IANA time zone for daily windows and cron; default: the host's local time zone. */
  tz?: string;
}

const DAY_SECONDS = 86_400;
/** Window openings examined for a cron occurrence inside the daily window (over a year of days). */
const MAX_CRON_STEPS = 400;

/** Whether the app is periodic (interval or cron), i.e. starts again on its own schedule. */
export function isPeriodic(def: Pick<AppDefinition, 'interval' | 'cron_schedule'>): boolean {
  return intervalSeconds(def) !== undefined || cronExpression(def) !== undefined;
}

/**
 * The earliest time (epoch ms, >= now) at which the app should be started, or undefined when it
 * will never start again (disabled, end_time reached, no cron occurrence left).
 *
 * - Periodic apps: the next slot after `state.lastStartAt` (or the first slot when never started).
 * - Other apps: the earliest allowed instant >= now; the runtime asks when it wants to (re)start
 *   (registration, enable, a restart decision, the daily window reopening).
 * The caller decides what to do while a process is still running (skip the slot).
 */
export function nextStartTime(
  def: ScheduleDefinition,
  state: RunHistory,
  now: number,
  options: ScheduleOptions = {},
): number | undefined {
  if (!def.enabled) return undefined;
  const earliest = Math.max(now, def.start_time ?? now);
  const cron = cronExpression(def);
  if (cron !== undefined)
    return nextCron(def, cron, Math.max(earliest - 1, state.lastStartAt ?? -Infinity), options);

  let candidate = earliest;
  const interval = intervalSeconds(def);
  if (interval !== undefined && state.lastStartAt !== undefined) {
    const step = interval * 1000;
    const anchor = def.start_time ?? state.lastStartAt;
    const base = Math.max(state.lastStartAt + 1, earliest);
    candidate = anchor + Math.max(0, Math.ceil((base - anchor) / step)) * step;
  }
  if (def.daily_limitation !== undefined)
    candidate = nextWindowOpen(def.daily_limitation, candidate, options);
  if (def.end_time !== undefined && candidate >= def.end_time) return undefined;
  return candidate;
}

/**
 * Whether a process of this app may be running at `now`: after start_time, before end_time and
 * inside the daily window. Outside it the runtime stops the process (a deliberate stop).
 */
export function inWindow(
  def: Pick<AppDefinition, 'start_time' | 'end_time' | 'daily_limitation'>,
  now: number,
  options: ScheduleOptions = {},
): boolean {
  if (def.start_time !== undefined && now < def.start_time) return false;
  if (def.end_time !== undefined && now >= def.end_time) return false;
  return def.daily_limitation === undefined || inDailyWindow(def.daily_limitation, now, options);
}

/**
 * When the current run must end (epoch ms): the daily window's close or end_time, whichever is
 * first; undefined when neither applies. Lets the runtime arm one timer instead of polling.
 */
export function windowEnd(
  def: Pick<AppDefinition, 'end_time' | 'daily_limitation'>,
  now: number,
  options: ScheduleOptions = {},
): number | undefined {
  let end = def.end_time;
  if (def.daily_limitation !== undefined && inDailyWindow(def.daily_limitation, now, options)) {
    const close = nextTimeOfDay(seconds(def.daily_limitation.daily_end), now, options);
    end = end === undefined ? close : Math.min(end, close);
  }
  return end;
}

// ---------------------------------------------------------------------------------------------

function nextCron(
  def: ScheduleDefinition,
  expression: string,
  after: number,
  options: ScheduleOptions,
): number | undefined {
  const tz = options.tz === undefined ? {} : { tz: options.tz };
  let from = after;
  // Each step either returns or jumps to the next opening of the daily window, so a frequent
  // expression does not walk minute by minute through the closed hours.
  for (let step = 0; step < MAX_CRON_STEPS; step++) {
    let occurrence: number;
    try {
      occurrence = cronParser()
        .CronExpressionParser.parse(expression, { currentDate: new Date(from), ...tz })
        .next()
        .getTime();
    } catch {
      return undefined; // no further occurrence
    }
    if (def.end_time !== undefined && occurrence >= def.end_time) return undefined;
    const window = def.daily_limitation;
    if (window === undefined || inDailyWindow(window, occurrence, options)) return occurrence;
    from = Math.max(occurrence, nextWindowOpen(window, occurrence, options) - 1);
  }
  return undefined;
}

function seconds(timeOfDay: string): number {
  const result = parseTimeOfDay(timeOfDay);
  if (!result.ok) throw new Error(`daily_limitation: bad time of day ${JSON.stringify(timeOfDay)}`);
  return result.value;
}

export function inDailyWindow(
  window: NonNullable<AppDefinition['daily_limitation']>,
  at: number,
  options: ScheduleOptions = {},
): boolean {
  const start = seconds(window.daily_start);
  const end = seconds(window.daily_end);
  const sod = secondsOfDay(at, options.tz);
  return start < end ? sod >= start && sod < end : sod >= start || sod < end;
}

/** The first instant >= at inside the daily window. */
function nextWindowOpen(
  window: NonNullable<AppDefinition['daily_limitation']>,
  at: number,
  options: ScheduleOptions,
): number {
  if (inDailyWindow(window, at, options)) return at;
  const open = nextTimeOfDay(seconds(window.daily_start), at, options);
  if (inDailyWindow(window, open, options)) return open;
  // A DST jump swallowed the opening time: find the first in-window minute.
  for (let t = at - (at % 60_000) + 60_000; t < at + 2 * DAY_SECONDS * 1000; t += 60_000) {
    if (inDailyWindow(window, t, options)) return t;
  }
  return open;
}

/** The first instant >= at (at a whole second) whose local time of day is `target` seconds. */
function nextTimeOfDay(target: number, at: number, options: ScheduleOptions): number {
  const wholeSecond = Math.ceil(at / 1000) * 1000;
  const sod = secondsOfDay(wholeSecond, options.tz);
  let t = wholeSecond + ((target - sod + DAY_SECONDS) % DAY_SECONDS) * 1000;
  // Across a DST change the local clock moved: correct once by the observed difference.
  const drift = target - secondsOfDay(t, options.tz);
  if (drift !== 0) {
    const signed = ((drift + DAY_SECONDS * 1.5) % DAY_SECONDS) - DAY_SECONDS / 2;
    const corrected = t + signed * 1000;
    if (corrected >= at) t = corrected;
  }
  return t;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Local seconds of the day of an instant, in `tz` or the host's zone. */
export function secondsOfDay(at: number, tz: string | undefined): number {
  const date = new Date(at);
  if (tz === undefined) return date.getHours() * 3600 + date.getMinutes() * 60 + date.getSeconds();
  let format = formatters.get(tz);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(tz, format);
  }
  let total = 0;
  for (const part of format.formatToParts(date)) {
    if (part.type === 'hour') total += Number(part.value) * 3600;
    else if (part.type === 'minute') total += Number(part.value) * 60;
    else if (part.type === 'second') total += Number(part.value);
  }
  return total;
}
