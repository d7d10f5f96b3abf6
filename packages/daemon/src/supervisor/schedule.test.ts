import { describe, expect, it } from 'vitest';
import type { ScheduleDefinition } from './schedule.ts';
import { inWindow, isPeriodic, nextStartTime, secondsOfDay, windowEnd } from './schedule.ts';

const UTC = { tz: 'UTC' };
/** 2024-03-01 (a Friday) at hh:mm:ss UTC, plus `day` days. */
const at = (hh: number, mm = 0, ss = 0, day = 0): number => Date.UTC(2024, 2, 1 + day, hh, mm, ss);
const def = (extra: Partial<ScheduleDefinition> = {}): ScheduleDefinition => ({
  enabled: true,
  ...extra,
});
const nine2five = { daily_start: '09:00:00', daily_end: '17:00:00' };
const night = { daily_start: '22:00:00', daily_end: '06:00:00' };

describe('nextStartTime: plain apps', () => {
  it('starts now', () => {
    expect(nextStartTime(def(), {}, at(10), UTC)).toBe(at(10));
    expect(nextStartTime(def(), { lastStartAt: at(9), lastExitAt: at(9, 30) }, at(10), UTC)).toBe(at(10));
  });
  it('never starts a disabled app', () => {
    expect(nextStartTime(def({ enabled: false }), {}, at(10), UTC)).toBeUndefined();
  });
  it('waits for a future start_time', () => {
    expect(nextStartTime(def({ start_time: at(12) }), {}, at(10), UTC)).toBe(at(12));
    expect(nextStartTime(def({ start_time: at(8) }), {}, at(10), UTC)).toBe(at(10));
  });
  it('never starts at or after end_time', () => {
    expect(nextStartTime(def({ end_time: at(10) }), {}, at(10), UTC)).toBeUndefined();
    expect(nextStartTime(def({ end_time: at(10) }), {}, at(11), UTC)).toBeUndefined();
    expect(nextStartTime(def({ end_time: at(10, 0, 1) }), {}, at(10), UTC)).toBe(at(10));
    expect(nextStartTime(def({ start_time: at(12), end_time: at(13) }), {}, at(10), UTC)).toBe(at(12));
  });
});

describe('nextStartTime: daily window', () => {
  it('starts inside the window, at the opening edge, not at the closing edge', () => {
    const d = def({ daily_limitation: nine2five });
    expect(nextStartTime(d, {}, at(12), UTC)).toBe(at(12));
    expect(nextStartTime(d, {}, at(9), UTC)).toBe(at(9));
    expect(nextStartTime(d, {}, at(8, 59, 59), UTC)).toBe(at(9));
    expect(nextStartTime(d, {}, at(16, 59, 59), UTC)).toBe(at(16, 59, 59));
    expect(nextStartTime(d, {}, at(17), UTC)).toBe(at(9, 0, 0, 1));
    expect(nextStartTime(d, {}, at(23), UTC)).toBe(at(9, 0, 0, 1));
  });
  it('rounds a sub-second instant before the opening up to the opening', () => {
    expect(nextStartTime(def({ daily_limitation: nine2five }), {}, at(8, 59, 59) + 500, UTC)).toBe(at(9));
  });
  it('supports windows across midnight', () => {
    const d = def({ daily_limitation: night });
    expect(nextStartTime(d, {}, at(23), UTC)).toBe(at(23));
    expect(nextStartTime(d, {}, at(0, 30), UTC)).toBe(at(0, 30));
    expect(nextStartTime(d, {}, at(5, 59, 59), UTC)).toBe(at(5, 59, 59));
    expect(nextStartTime(d, {}, at(6), UTC)).toBe(at(22));
    expect(nextStartTime(d, {}, at(21, 59), UTC)).toBe(at(22));
  });
  it('combines the window with start_time and end_time', () => {
    const d = def({ daily_limitation: nine2five, start_time: at(18), end_time: at(12, 0, 0, 2) });
    expect(nextStartTime(d, {}, at(10), UTC)).toBe(at(9, 0, 0, 1));
    expect(nextStartTime(d, {}, at(17, 0, 0, 1), UTC)).toBe(at(9, 0, 0, 2));
    expect(nextStartTime(d, {}, at(13, 0, 0, 2), UTC)).toBeUndefined();
    const ending = def({ daily_limitation: nine2five, end_time: at(8) });
    expect(nextStartTime(ending, {}, at(7), UTC)).toBeUndefined();
  });
  it('uses the given time zone', () => {
    // 09:00 in Tokyo (UTC+9, no DST) is 00:00 UTC.
    const d = def({ daily_limitation: nine2five });
    expect(nextStartTime(d, {}, at(20), { tz: 'Asia/Tokyo' })).toBe(at(0, 0, 0, 1));
    expect(inWindow(d, at(1), { tz: 'Asia/Tokyo' })).toBe(true);
    expect(inWindow(d, at(9), { tz: 'Asia/Tokyo' })).toBe(false);
  });
  it('finds the opening across a DST change', () => {
    // America/New_York springs forward on 2024-03-10 at 02:00 local (07:00 UTC).
    const d = def({ daily_limitation: nine2five });
    const sat18 = Date.UTC(2024, 2, 9, 23); // 18:00 EST on Saturday
    expect(nextStartTime(d, {}, sat18, { tz: 'America/New_York' })).toBe(Date.UTC(2024, 2, 10, 13)); // 09:00 EDT
    // A window opening inside the skipped hour opens when the clock reaches the window.
    const skipped = def({ daily_limitation: { daily_start: '02:30:00', daily_end: '04:00:00' } });
    const next = nextStartTime(skipped, {}, Date.UTC(2024, 2, 10, 5), { tz: 'America/New_York' });
    expect(next).toBe(Date.UTC(2024, 2, 10, 7)); // 03:00 EDT, the first in-window instant
  });
});

describe('nextStartTime: periodic interval', () => {
  const every5m = def({ interval: 300 });
  it('starts at once the first time, then every interval', () => {
    expect(nextStartTime(every5m, {}, at(10), UTC)).toBe(at(10));
    expect(nextStartTime(every5m, { lastStartAt: at(10) }, at(10, 1), UTC)).toBe(at(10, 5));
    expect(nextStartTime(every5m, { lastStartAt: at(10) }, at(10, 5), UTC)).toBe(at(10, 5));
  });
  it('never returns the last start again', () => {
    expect(nextStartTime(every5m, { lastStartAt: at(10) }, at(10), UTC)).toBe(at(10, 5));
  });
  it('skips missed periods after a long pause instead of bursting', () => {
    expect(nextStartTime(every5m, { lastStartAt: at(10) }, at(13, 2), UTC)).toBe(at(13, 5));
    // A run longer than the interval: the slot it overlapped is skipped.
    expect(nextStartTime(every5m, { lastStartAt: at(10), lastExitAt: at(10, 7) }, at(10, 7), UTC)).toBe(
      at(10, 10),
    );
  });
  it('aligns the grid to start_time when set', () => {
    const d = def({ interval: 3600, start_time: at(8, 30) });
    expect(nextStartTime(d, {}, at(7), UTC)).toBe(at(8, 30));
    expect(nextStartTime(d, { lastStartAt: at(9, 0) }, at(9, 10), UTC)).toBe(at(9, 30));
    expect(nextStartTime(d, { lastStartAt: at(9, 30) }, at(15, 45), UTC)).toBe(at(16, 30));
  });
  it('moves a slot outside the daily window to the next opening', () => {
    const d = def({ interval: 3600, daily_limitation: nine2five });
    expect(nextStartTime(d, { lastStartAt: at(16, 30) }, at(16, 31), UTC)).toBe(at(9, 0, 0, 1));
    expect(nextStartTime(d, { lastStartAt: at(9) }, at(9, 1), UTC)).toBe(at(10));
  });
  it('stops at end_time', () => {
    const d = def({ interval: 3600, end_time: at(11) });
    expect(nextStartTime(d, { lastStartAt: at(10) }, at(10, 1), UTC)).toBeUndefined();
    expect(nextStartTime(d, { lastStartAt: at(9, 59) }, at(10, 1), UTC)).toBe(at(10, 59));
  });
});

describe('nextStartTime: cron', () => {
  const every5m = def({ cron_schedule: '*/5 * * * *' });
  it('returns the next occurrence, an occurrence at now included', () => {
    expect(nextStartTime(every5m, {}, at(10, 2), UTC)).toBe(at(10, 5));
    expect(nextStartTime(every5m, {}, at(10, 5), UTC)).toBe(at(10, 5));
    expect(nextStartTime(every5m, {}, at(10, 5) + 1, UTC)).toBe(at(10, 10));
  });
  it('does not repeat the occurrence that just started', () => {
    expect(nextStartTime(every5m, { lastStartAt: at(10, 5) }, at(10, 5), UTC)).toBe(at(10, 10));
  });
  it('skips missed occurrences after a pause', () => {
    expect(nextStartTime(every5m, { lastStartAt: at(10) }, at(14, 3), UTC)).toBe(at(14, 5));
  });
  it('honours start_time, end_time and the daily window', () => {
    const d = def({
      cron_schedule: '0 * * * *',
      start_time: at(12, 30),
      end_time: at(15),
    });
    expect(nextStartTime(d, {}, at(10), UTC)).toBe(at(13));
    expect(nextStartTime(d, { lastStartAt: at(14) }, at(14), UTC)).toBeUndefined();
    const windowed = def({ cron_schedule: '0 * * * *', daily_limitation: nine2five });
    expect(nextStartTime(windowed, {}, at(16, 30), UTC)).toBe(at(9, 0, 0, 1));
  });
  it('uses the time zone for the expression', () => {
    const d = def({ cron_schedule: '0 9 * * *' });
    expect(nextStartTime(d, {}, at(10), UTC)).toBe(at(9, 0, 0, 1));
    expect(nextStartTime(d, {}, at(10), { tz: 'Asia/Tokyo' })).toBe(at(0, 0, 0, 1));
  });
  it('supports a six-field expression with seconds', () => {
    const d = def({ cron_schedule: '30 * * * * *' });
    expect(nextStartTime(d, {}, at(10, 0, 10), UTC)).toBe(at(10, 0, 30));
  });
  it('gives up when no occurrence falls inside the window', () => {
    const d = def({ cron_schedule: '0 3 * * *', daily_limitation: nine2five });
    expect(nextStartTime(d, {}, at(10), UTC)).toBeUndefined();
  });
});

describe('inWindow and windowEnd', () => {
  it('is true without limits', () => {
    expect(inWindow(def(), at(3), UTC)).toBe(true);
    expect(windowEnd(def(), at(3), UTC)).toBeUndefined();
  });
  it('honours start_time and end_time edges', () => {
    const d = def({ start_time: at(10), end_time: at(11) });
    expect(inWindow(d, at(10) - 1, UTC)).toBe(false);
    expect(inWindow(d, at(10), UTC)).toBe(true);
    expect(inWindow(d, at(11) - 1, UTC)).toBe(true);
    expect(inWindow(d, at(11), UTC)).toBe(false);
  });
  it('honours the daily window edges, also across midnight', () => {
    const day = def({ daily_limitation: nine2five });
    expect(inWindow(day, at(9) - 1, UTC)).toBe(false);
    expect(inWindow(day, at(9), UTC)).toBe(true);
    expect(inWindow(day, at(17) - 1, UTC)).toBe(true);
    expect(inWindow(day, at(17), UTC)).toBe(false);
    const n = def({ daily_limitation: night });
    expect(inWindow(n, at(21, 59, 59), UTC)).toBe(false);
    expect(inWindow(n, at(22), UTC)).toBe(true);
    expect(inWindow(n, at(0), UTC)).toBe(true);
    expect(inWindow(n, at(5, 59, 59), UTC)).toBe(true);
    expect(inWindow(n, at(6), UTC)).toBe(false);
  });
  it('tells when a running process must stop', () => {
    expect(windowEnd(def({ daily_limitation: nine2five }), at(10), UTC)).toBe(at(17));
    expect(windowEnd(def({ daily_limitation: night }), at(23), UTC)).toBe(at(6, 0, 0, 1));
    expect(windowEnd(def({ daily_limitation: night }), at(1), UTC)).toBe(at(6));
    expect(windowEnd(def({ daily_limitation: nine2five, end_time: at(12) }), at(10), UTC)).toBe(at(12));
    expect(windowEnd(def({ end_time: at(12) }), at(10), UTC)).toBe(at(12));
  });
});

describe('helpers', () => {
  it('computes local seconds of day', () => {
    expect(secondsOfDay(at(13, 14, 15), 'UTC')).toBe(13 * 3600 + 14 * 60 + 15);
    expect(secondsOfDay(at(0), 'Asia/Kolkata')).toBe(5 * 3600 + 30 * 60);
    const local = new Date(at(13, 14, 15));
    expect(secondsOfDay(at(13, 14, 15), undefined)).toBe(
      local.getHours() * 3600 + local.getMinutes() * 60 + local.getSeconds(),
    );
  });
  it('knows periodic apps', () => {
    expect(isPeriodic(def())).toBe(false);
    expect(isPeriodic(def({ interval: 5 }))).toBe(true);
    expect(isPeriodic(def({ cron_schedule: '* * * * *' }))).toBe(true);
  });
});

describe('nextStartTime: cron with a daily window', () => {
  it('jumps over closed hours for a frequent expression', () => {
    const d: ScheduleDefinition = {
      enabled: true,
      cron_schedule: '* * * * * *',
      daily_limitation: { daily_start: '09:00:00', daily_end: '17:00:00' },
    };
    expect(nextStartTime(d, {}, Date.UTC(2024, 2, 1, 17), { tz: 'UTC' })).toBe(Date.UTC(2024, 2, 2, 9));
  });
  it('finds a yearly occurrence inside a night window', () => {
    const d: ScheduleDefinition = {
      enabled: true,
      cron_schedule: '0 23 1 1 *',
      daily_limitation: { daily_start: '22:00:00', daily_end: '06:00:00' },
    };
    expect(nextStartTime(d, {}, Date.UTC(2024, 2, 1), { tz: 'UTC' })).toBe(Date.UTC(2025, 0, 1, 23));
  });
});
