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

/**
 * One timer armed for one instant at a time (re-arming for the instant it is armed for is free).
 * setTimeout holds at most 2^31-1 ms: a longer wait fires early, and the owner, finding its
 * deadline still ahead, arms again.
 */
export class DeadlineTimer {
  readonly #clock: Clock;
  readonly #fire: () => void;
  #handle: unknown;
  #at: number | undefined;

  constructor(clock: Clock, fire: () => void) {
    this.#clock = clock;
    this.#fire = fire;
  }

  /** Fire at `at` (epoch ms; at once when past); undefined: not at all. */
  arm(at: number | undefined): void {
    if (at === this.#at && this.#handle !== undefined) return;
    this.clear();
    if (at === undefined) return;
    const clock = this.#clock;
    this.#at = at;
    this.#handle = clock.setTimeout(
      () => {
        this.#handle = undefined;
        this.#at = undefined;
        this.#fire();
      },
      Math.min(Math.max(0, at - clock.now()), 2 ** 31 - 1),
    );
  }

  clear(): void {
    if (this.#handle !== undefined) this.#clock.clearTimeout(this.#handle);
    this.#handle = undefined;
    this.#at = undefined;
  }
}
