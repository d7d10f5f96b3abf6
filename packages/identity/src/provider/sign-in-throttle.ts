// Password-guessing limits of the built-in issuer (issue 12 item 9; issue 25 M5), pure logic on an
// injected clock. Failures slow down the place they come from; they never lock an account, so a
// stranger who knows a user name cannot keep its owner out (OWASP Authentication Cheat Sheet:
// throttle per user and address with growing delays rather than lock accounts).
//
//   check(user, address) ─► this address failed for this user and must still wait? ─► refused (429)
//                           this address failed (any users) and must still wait?      ─► refused (429)
//                           otherwise                                                 ─► password checked
//   failed  ─► the (user, address) count, the address count and the user count + 1; the wait
//              before the next attempt from that place doubles with each failure past its threshold
//   success ─► the (user, address) count is cleared
//
// Thresholds (failures before the next attempt waits): 5 for one user from one address, 20 for one
// address over all users. The wait is `baseDelayMs` doubled per further failure, at most
// `maxDelayMs`. Once a user has 20 failures from all addresses together (a guesser with many
// addresses), every address's FIRST failure for that user already makes it wait, at least
// `baseDelayMs` doubled per further failure of the user (the user's own rate, which slows every
// failing address and none that has not failed). A count is forgotten after `forgetMs` without a
// failure. A refused attempt is not checked and not counted. So an address
// that has not failed is never refused: the real user, signing in from anywhere the guesser is not,
// gets in at once; only a shared address (a NAT, the same host) shares the guesser's waits.
//
// The user key is the account's user_id when the login names one, else the lower-cased login, so
// unknown logins are limited exactly as known ones. IPv6 addresses count per /64 (one subscriber's
// prefix), IPv4 per address. An administrator clears the counts of a user and of every address
// (admin gRPC `Passwords.UnlockUser`, UI, `svc-auth.sh unlock-user`).
import { isIP } from 'node:net';

export interface ThrottleLimits {
  /** Failures of one user from one address after which each further attempt from there waits. */
  readonly userAddressFailures: number;
  /** Failures from one address (any users) after which each further attempt from it waits. */
  readonly addressFailures: number;
  /** Failures of one user (any addresses) after which every address waits from its first failure. */
  readonly userFailures: number;
  /** The first wait; it doubles with each further failure. */
  readonly baseDelayMs: number;
  /** The longest wait. */
  readonly maxDelayMs: number;
  /** A count with no failure for this long is forgotten. */
  readonly forgetMs: number;
  /** Bound on remembered counts; the least recently failed are forgotten first. */
  readonly maxEntries: number;
}

export const DEFAULT_THROTTLE_LIMITS: ThrottleLimits = {
  userAddressFailures: 5,
  addressFailures: 20,
  userFailures: 20,
  baseDelayMs: 1000,
  maxDelayMs: 15 * 60_000,
  forgetMs: 60 * 60_000,
  maxEntries: 10_000,
};

export type ThrottleVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly scope: 'user' | 'address'; readonly retryAfterMs: number };

interface Counter {
  failures: number;
  lastFailure: number;
  /** No attempt is checked before this time. */
  nextAt: number;
}

export interface LockRecord {
  readonly key: string;
  readonly lockedUntil: number;
}

/** Expands an IPv6 address to its 8 groups (undefined when it is not one). */
function ipv6Groups(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.split('%')[0]!.toLowerCase();
  // A trailing dotted IPv4 part (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** The address a count is kept for: IPv4 as is, IPv6 as its /64 prefix. */
export function addressBucket(address: string): string {
  const groups = ipv6Groups(address);
  if (groups === undefined) return address;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
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
    const bucket = addressBucket(address);
    for (const [scope, key] of [
      ['user', pairKey(userKey, bucket)],
      ['address', `a:${bucket}`],
    ] as const) {
      const counter = this.#counters.get(key);
      if (counter !== undefined && counter.nextAt > now)
        return { allowed: false, scope, retryAfterMs: counter.nextAt - now };
    }
    return { allowed: true };
  }

  failed(userKey: string, address: string): void {
    const now = this.#now();
    const bucket = addressBucket(address);
    const limits = this.#limits;
    const user = this.#count(`u:${userKey}`, Number.POSITIVE_INFINITY);
    this.#count(`a:${bucket}`, limits.addressFailures);
    const guessedWidely = user.failures >= limits.userFailures;
    const pair = this.#count(pairKey(userKey, bucket), guessedWidely ? 1 : limits.userAddressFailures);
    // The user's own rate: past its threshold, an address that fails for this user waits at least
    // as long as the user's count says (doubling per failure of the user, from any address).
    if (guessedWidely)
      pair.nextAt = Math.max(pair.nextAt, now + this.#wait(user.failures - limits.userFailures));
  }

  /** The wait after `doublings` failures past a threshold. */
  #wait(doublings: number): number {
    return Math.min(this.#limits.baseDelayMs * 2 ** Math.min(doublings, 40), this.#limits.maxDelayMs);
  }

  /** A right password (and code): this user's count at this address ends. */
  succeeded(userKey: string, address: string): void {
    this.#counters.delete(pairKey(userKey, addressBucket(address)));
  }

  /**
   * An administrator's unlock: ends the counts of each given user key (from every address) and of
   * every address (an address is shared: the agent's clients, a NAT, the operator's own host), so
   * that the user can sign in at once. Returns how many waits were in force.
   */
  clearUsers(userKeys: readonly string[]): number {
    const now = this.#now();
    const users = new Set(userKeys.map((userKey) => `u:${userKey}`));
    const pairs = userKeys.map((userKey) => pairKey(userKey, ''));
    let waiting = 0;
    for (const [key, counter] of [...this.#counters]) {
      if (!users.has(key) && !key.startsWith('a:') && !pairs.some((prefix) => key.startsWith(prefix)))
        continue;
      if (counter.nextAt > now) waiting += 1;
      this.#counters.delete(key);
    }
    return waiting;
  }

  /** Ends every count (users and addresses). */
  clearAll(): number {
    const count = this.locks().length;
    this.#counters.clear();
    return count;
  }

  /** Waits in force, keys as `u:<user>`, `a:<address>` or `p:<length>:<user><address>`. */
  locks(): LockRecord[] {
    const now = this.#now();
    return [...this.#counters]
      .filter(([, counter]) => counter.nextAt > now)
      .map(([key, counter]) => ({ key, lockedUntil: counter.nextAt }));
  }

  /** One more failure under `key`; from the `threshold`-th on, the next attempt waits. */
  #count(key: string, threshold: number): Counter {
    const now = this.#now();
    const limits = this.#limits;
    let counter = this.#counters.get(key);
    if (counter === undefined || now - counter.lastFailure >= limits.forgetMs)
      counter = { failures: 0, lastFailure: now, nextAt: 0 };
    this.#counters.delete(key); // re-inserted last: the map's order is the eviction order
    counter.failures += 1;
    counter.lastFailure = now;
    if (counter.failures >= threshold) counter.nextAt = now + this.#wait(counter.failures - threshold);
    this.#counters.set(key, counter);
    while (this.#counters.size > limits.maxEntries) {
      const oldest = this.#counters.keys().next();
      if (oldest.done === true) break;
      this.#counters.delete(oldest.value);
    }
    return counter;
  }
}

/** The key of a (user, address) count; the user key's length makes the user part unambiguous. */
function pairKey(userKey: string, bucket: string): string {
  return `p:${userKey.length}:${userKey}${bucket}`;
}
