// The clock that pure decision logic is handed (lifecycle timers, task deadlines): `now` and
// timers that never keep the process alive on their own (unref'd).

export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock; `now` may be replaced (tests that move time). */
export function realClock(now: () => number = Date.now): Clock {
  return {
    now,
    setTimeout(callback, ms) {
      const timer = setTimeout(callback, ms);
      timer.unref();
      return timer;
    },
    clearTimeout(handle) {
      clearTimeout(handle as NodeJS.Timeout);
    },
  };
}
