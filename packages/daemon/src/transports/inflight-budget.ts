// In-flight byte budgets (issue 25 H1, docs/security.md "Budgets"): the bytes of request bodies that
// svcd is receiving or handling at once, counted per connection, per principal (a bearer's
// principal, or a process key's application), per address (everything without a principal), and
// in all. A body is admitted from its declared length — a TCP frame header, a WebSocket frame
// header, a REST Content-Length — before any byte of it is buffered, and its bytes stay counted
// until the request that carries it has been answered. A body above what its owner could ever have
// in flight is refused outright; one that only does not fit now waits (TCP: the socket is not read
// meanwhile) or is refused (REST 429, WSS 1009). Pure bookkeeping: no I/O, no clock.

export interface InflightLimits {
  /** One TCP or WSS connection (`REST.Limits.MaxInflightBytesPerConnection`). */
  readonly perConnection: number;
  /** One principal, or one application's process key (`MaxInflightBytesPerPrincipal`). */
  readonly perPrincipal: number;
  /** One remote address, for bodies without a principal (`MaxInflightBytesPerAddress`). */
  readonly perAddress: number;
  /** Everything (`MaxInflightBytes`). */
  readonly total: number;
}

/** Who pays for a body: its connection (TCP/WSS), and its principal or else its remote address. */
export interface BudgetOwner {
  readonly connection?: string | undefined;
  /** A principal id, or `process:<app>` for a process key; undefined = counted against `address`. */
  readonly principal?: string | undefined;
  readonly address: string;
}

export interface Reservation {
  readonly bytes: number;
  /** Idempotent. */
  release(): void;
}

interface Waiter {
  readonly keys: readonly [string, number][];
  readonly bytes: number;
  readonly granted: (reservation: Reservation) => void;
  cancelled: boolean;
}

function payerKey(owner: BudgetOwner): string {
  return owner.principal !== undefined ? `p\0${owner.principal}` : `a\0${owner.address}`;
}

const NOTHING: Reservation = { bytes: 0, release: () => undefined };

export class InflightBudget {
  readonly #limits: InflightLimits;
  readonly #used = new Map<string, number>();
  #waiters: Waiter[] = [];
  #serving = false;

  constructor(limits: InflightLimits) {
    this.#limits = limits;
  }

  /** The largest body `owner` may ever have in flight: larger ones are refused from their header. */
  ceiling(owner: BudgetOwner): number {
    return Math.min(...this.#keys(owner).map(([, cap]) => cap));
  }

  /** Bytes counted now against the owner's principal (or address). */
  usedBy(owner: BudgetOwner): number {
    return this.#used.get(payerKey(owner)) ?? 0;
  }

  /** A reservation of `bytes`, or undefined when it does not fit now (nothing is counted then). */
  tryReserve(owner: BudgetOwner, bytes: number): Reservation | undefined {
    if (bytes === 0) return NOTHING;
    const keys = this.#keys(owner);
    if (!this.#fits(keys, bytes)) return undefined;
    return this.#take(keys, bytes);
  }

  /**
   * Calls `granted` with a reservation once `bytes` fit. Returns a cancel function (idempotent). The caller has
   * checked `bytes <= ceiling(owner)`, or the wait could never end. A body that fits is
   * granted at once, whoever else waits (waiters are served in order as bytes are released).
   */
  reserve(owner: BudgetOwner, bytes: number, granted: (reservation: Reservation) => void): () => void {
    // Granted at once whenever it fits, even with others waiting: a waiter blocked on its own
    // principal's budget must not hold up anybody else.
    const now = this.tryReserve(owner, bytes);
    if (now !== undefined) {
      granted(now);
      return () => undefined;
    }
    const waiter: Waiter = { keys: this.#keys(owner), bytes, granted, cancelled: false };
    this.#waiters.push(waiter);
    return () => {
      waiter.cancelled = true;
      this.#waiters = this.#waiters.filter((w) => w !== waiter);
    };
  }

  #keys(owner: BudgetOwner): [string, number][] {
    const keys: [string, number][] = [];
    if (owner.connection !== undefined) keys.push([`c\0${owner.connection}`, this.#limits.perConnection]);
    const payer = payerKey(owner);
    keys.push([payer, owner.principal !== undefined ? this.#limits.perPrincipal : this.#limits.perAddress]);
    keys.push(['*', this.#limits.total]);
    return keys;
  }

  #fits(keys: readonly [string, number][], bytes: number): boolean {
    return keys.every(([key, cap]) => (this.#used.get(key) ?? 0) + bytes <= cap);
  }

  #take(keys: readonly [string, number][], bytes: number): Reservation {
    for (const [key] of keys) this.#used.set(key, (this.#used.get(key) ?? 0) + bytes);
    let released = false;
    return {
      bytes,
      release: () => {
        if (released) return;
        released = true;
        for (const [key] of keys) {
          const left = (this.#used.get(key) ?? 0) - bytes;
          if (left <= 0) this.#used.delete(key);
          else this.#used.set(key, left);
        }
        this.#serveWaiters();
      },
    };
  }

  /** Grants, in order, every waiter that fits now (a grant callback may release or wait again). */
  #serveWaiters(): void {
    if (this.#serving) return;
    this.#serving = true;
    try {
      for (let i = 0; i < this.#waiters.length; ) {
        const waiter = this.#waiters[i]!;
        if (waiter.cancelled || !this.#fits(waiter.keys, waiter.bytes)) {
          i++;
          continue;
        }
        this.#waiters.splice(i, 1);
        waiter.granted(this.#take(waiter.keys, waiter.bytes));
        i = 0; // a grant may have released bytes an earlier waiter needed
      }
    } finally {
      this.#serving = false;
    }
  }
}
