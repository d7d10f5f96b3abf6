// The subscription loop against a scripted svcd (fake timers): what it asks of svcd while the
// application has no running process, with and without events, and when svcd fails.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppWatch } from './event-feed.ts';
import { EventsRefused } from './event-feed.ts';
import { BACKOFF_MAX_MS, OutputSubscriptions } from './output-resources.ts';
import type { SvcdAnswer, SvcdCall } from './svcd.ts';

/** What svcd knows of the application's current process. */
interface Script {
  process: string | undefined;
  size: number;
  exited: boolean;
  /** Answer every request with this status instead. */
  status?: number;
  /** Long polls answer at once (svcd does when the process's output file cannot be opened). */
  atOnce?: boolean;
}

function answer(script: Script): SvcdAnswer {
  if (script.status !== undefined)
    return { status: script.status, headers: {}, body: Buffer.from('{"error":"x"}') };
  return {
    status: 200,
    headers: {
      'x-output-position': String(script.size),
      ...(script.process === undefined ? {} : { 'x-process-uuid': script.process }),
      ...(script.exited ? { 'x-exit-code': '0' } : {}),
    },
    body: Buffer.alloc(0),
  };
}

function harness(script: Script, watch: (app: string) => Promise<AppWatch>) {
  const calls: string[] = [];
  const updates: string[] = [];
  const call = (request: SvcdCall): Promise<SvcdAnswer> => {
    calls.push(request.path);
    const timeout = Number(/timeout=(\d+)/.exec(request.path)?.[1] ?? 0);
    const at = Number(/stdout_position=(\d+)/.exec(request.path)?.[1] ?? 0);
    // A long poll on a running process with nothing new waits its timeout (or the abort).
    if (timeout > 0 && !script.exited && !script.atOnce && script.status === undefined && at >= script.size)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve(answer(script)), timeout * 1000);
        request.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new Error('aborted'));
        });
      });
    return Promise.resolve(answer(script));
  };
  const subscriptions = new OutputSubscriptions({
    call,
    token: () => 'token',
    watch,
    updated: (uri) => {
      updates.push(uri);
      return Promise.resolve();
    },
    log: () => undefined,
  });
  return { calls, updates, subscriptions };
}

/** A controllable watch: `fire()` is an event of the application. */
function fakeWatch(): { watch: AppWatch; fire: () => void } {
  let wake: (() => void) | undefined;
  const watch = {
    seen: 0,
    live: true,
    until(mark: number, ms: number, signal: AbortSignal): Promise<void> {
      if (watch.seen > mark) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        signal.addEventListener('abort', wake);
      });
    },
    close() {
      watch.live = false;
    },
  };
  return {
    watch,
    fire: () => {
      watch.seen += 1;
      wake?.();
    },
  };
}

const URI = 'svc://app/web/output';
const MINUTE = 60_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('an output subscription while no process runs', () => {
  it('makes no request between events, and notifies when a new process starts', async () => {
    const script: Script = { process: 'p1', size: 10, exited: true };
    const { watch, fire } = fakeWatch();
    const { calls, updates, subscriptions } = harness(script, () => Promise.resolve(watch));
    await subscriptions.subscribe(URI);
    await vi.advanceTimersByTimeAsync(1000);
    const settled = calls.length;
    expect(settled).toBeLessThanOrEqual(2); // the subscribe's look, one more once subscribed to events
    await vi.advanceTimersByTimeAsync(9 * MINUTE);
    expect(calls.length).toBe(settled);
    Object.assign(script, { process: 'p2', size: 3, exited: false });
    fire();
    await vi.advanceTimersByTimeAsync(10);
    expect(updates).toEqual([URI]);
    subscriptions.close();
  });

  it('looks again by a doubling timer when svcd gives it no events', async () => {
    const script: Script = { process: 'p1', size: 10, exited: true };
    const { calls, subscriptions } = harness(script, () =>
      Promise.reject(new EventsRefused(403, 'permission app-subscribe required')),
    );
    await subscriptions.subscribe(URI);
    await vi.advanceTimersByTimeAsync(10 * MINUTE);
    // 2+4+8+16+32 s, then one a minute: about 14 looks in 10 minutes (a hot loop made thousands a second).
    expect(calls.length).toBeGreaterThan(5);
    expect(calls.length).toBeLessThanOrEqual(2 + 5 + Math.ceil((10 * MINUTE) / BACKOFF_MAX_MS));
    subscriptions.close();
  });

  it('never repeats at once a long poll that answers at once with nothing new', async () => {
    // A running process whose output file is gone: svcd answers every long poll at once.
    const script: Script = { process: 'p1', size: 10, exited: false };
    const { watch } = fakeWatch();
    const { calls, subscriptions } = harness(script, () => Promise.resolve(watch));
    await subscriptions.subscribe(URI);
    script.atOnce = true;
    await vi.advanceTimersByTimeAsync(10 * MINUTE);
    // Per event or EVENT_SAFETY_MS: a long poll and a look (a hot loop made thousands a second).
    expect(calls.length).toBeLessThan(10);
    subscriptions.close();
  });

  it('backs off while svcd fails, and ends at 401', async () => {
    const script: Script = { process: 'p1', size: 10, exited: true };
    const { watch, fire } = fakeWatch();
    const { calls, subscriptions } = harness(script, () => Promise.resolve(watch));
    await subscriptions.subscribe(URI);
    await vi.advanceTimersByTimeAsync(1000);
    script.status = 503;
    fire();
    await vi.advanceTimersByTimeAsync(10 * MINUTE);
    expect(calls.length).toBeLessThan(25);
    expect(subscriptions.size).toBe(1);
    script.status = 401;
    await vi.advanceTimersByTimeAsync(2 * MINUTE);
    expect(subscriptions.size).toBe(0);
    expect(watch.live).toBe(false);
  });

  it('follows a running process with one long poll at a time', async () => {
    const script: Script = { process: 'p1', size: 10, exited: false };
    const { calls, updates, subscriptions } = harness(script, () => Promise.reject(new Error('unused')));
    await subscriptions.subscribe(URI);
    await vi.advanceTimersByTimeAsync(5 * MINUTE);
    expect(calls.length).toBeLessThanOrEqual(2 + Math.ceil((5 * MINUTE) / 25_000));
    expect(calls.at(-1)).toMatch(/process_uuid=p1&stdout_position=10&stdout_maxsize=1&timeout=25/);
    expect(updates).toEqual([]);
    subscriptions.close();
  });
});
