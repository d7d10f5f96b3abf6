// Password-guessing limits of the built-in issuer (issue 12 item 9), pure logic on an injected clock.
//
//   attempt(user, address) ─► locked? ──yes──► refused (no password check, Retry-After)
//                               │no
//                               ▼ password (and TOTP) checked
//   failed  ─► user count +1, address count +1 ─► count reaches the limit within the window ─► lock
//   success ─► user count cleared (the address count is not: one address guessing many users)
//
// The user key is the account's user_id when the login names one, else the lower-cased login, so
// unknown logins are limited exactly as known ones (nothing tells them apart). An administrator
// clears a user's lockout (admin gRPC `Passwords.UnlockUser`, UI, `svc-auth.sh unlock-user`).

export interface ThrottleLimits {
  /** Failed sign-ins of one user within `windowMs` that lock the user. */
  readonly userFailures: number;
  /** Failed sign-ins from one address within `windowMs` that lock the address. */
  readonly addressFailures: number;
  readonly windowMs: number;
  /** How long a lock lasts. */
  readonly lockMs: number;
  /** Bound on remembered keys (users + addresses); the oldest are forgotten first. */
  readonly maxEntries: number;
}

export const DEFAULT_THROTTLE_LIMITS: ThrottleLimits = {
  userFailures: 5,
  addressFailures: 20,
  windowMs: 15 * 60_000,
  lockMs: 15 * 60_000,
  maxEntries: 10_000,
};

export type ThrottleVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly scope: 'user' | 'address'; readonly retryAfterMs: number };

interface Counter {
  windowStart: number;
  failures: number;
  lockedUntil: number;
}

export interface LockRecord {
  readonly key: string;
  readonly lockedUntil: number;
}

export class SignInThrottle {
  readonly #now: () => number;
  readonly #limits: ThrottleLimits;
  readonly #counters = new Map<string, Counter>();

  constructor(options: { now?: (() => number) | undefined; limits?: Partial<ThrottleLimits> } = {}) {
    this.#now = options.now ?? Date.now;
    this.#limits = { ...DEFAULT_THROTTLE_LIMITS, ...options.limits };
  }

  get limits(): ThrottleLimits {
    return this.#limits;
  }

  /** Whether a sign-in of `userKey` from `address` may be checked now. */
  check(userKey: string, address: string): ThrottleVerdict {
    const now = this.#now();
    for (const [scope, key] of [
      ['user', `u:${userKey}`],
      ['address', `a:${address}`],
    ] as const) {
      const counter = this.#counters.get(key);
      if (counter !== undefined && counter.lockedUntil > now)
        return { allowed: false, scope, retryAfterMs: counter.lockedUntil - now };
    }
    return { allowed: true };
  }

  failed(userKey: string, address: string): void {
    this.#fail(`u:${userKey}`, this.#limits.userFailures);
    this.#fail(`a:${address}`, this.#limits.addressFailures);
  }

  succeeded(userKey: string): void {
    this.#counters.delete(`u:${userKey}`);
  }

  /**
   * An administrator's unlock: ends the lockout and failure count of each given user key and every
   * address lock (an address is shared: the agent's clients, a NAT, the operator's own host), so
   * that the user can sign in at once. Returns how many locks were in force.
   */
  clearUsers(userKeys: readonly string[]): number {
    const now = this.#now();
    const keys = new Set(userKeys.map((userKey) => `u:${userKey}`));
    let locked = 0;
    for (const [key, counter] of [...this.#counters]) {
      if (!keys.has(key) && !key.startsWith('a:')) continue;
      if (counter.lockedUntil > now) locked += 1;
      this.#counters.delete(key);
    }
    return locked;
  }

  /** Ends every lockout (users and addresses). */
  clearAll(): number {
    const count = this.locks().length;
    this.#counters.clear();
    return count;
  }

  /** Current locks, keys as `u:<user>` / `a:<address>`. */
  locks(): LockRecord[] {
    const now = this.#now();
    return [...this.#counters]
      .filter(([, counter]) => counter.lockedUntil > now)
      .map(([key, counter]) => ({ key, lockedUntil: counter.lockedUntil }));
  }

  #fail(key: string, limit: number): void {
    const now = this.#now();
    let counter = this.#counters.get(key);
    if (counter === undefined || now - counter.windowStart >= this.#limits.windowMs) {
      counter = { windowStart: now, failures: 0, lockedUntil: counter?.lockedUntil ?? 0 };
    }
    this.#counters.delete(key); // re-inserted last: the map's order is the eviction order
    counter.failures += 1;
    if (counter.failures >= limit) {
      counter.lockedUntil = now + this.#limits.lockMs;
      counter.failures = 0;
      counter.windowStart = now;
    }
    this.#counters.set(key, counter);
    while (this.#counters.size > this.#limits.maxEntries) {
      const oldest = this.#counters.keys().next();
      if (oldest.done === true) break;
      this.#counters.delete(oldest.value);
    }
  }
}
