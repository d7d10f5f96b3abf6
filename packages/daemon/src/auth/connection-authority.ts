// How long a persistent connection (TCP, WSS) stays authorized. A connection is pinned to one
// principal; it stays authorized while that principal is active and until the latest `exp` of the
// bearer tokens it presented (a client that refreshes and sends the new token on the connection
// extends it). When the principal is tombstoned, or that deadline passes, the connection is
// revoked: its subscriptions end at once and the connection is closed (TCP: closed; WSS: close
// code 1008 with the reason), so neither events nor answers reach it any more. The client
// reconnects with a fresh token. Decisions are pure (`isExpired`); timers only schedule them.

/** What the authority needs of a connection. */
export interface RevocableConnection {
  readonly id: string;
  /** Closes the connection (the transport finishes its close). */
  close(reason: string): void;
  onClose(callback: () => void): void;
}

export type RevocationReason = 'principal_tombstoned' | 'token_expired';

export interface ConnectionAuthorityOptions {
  /** Ends the connection's subscriptions and closes it (see daemon.ts). */
  revoke: (connection: RevocableConnection, reason: RevocationReason) => void;
  /** Epoch milliseconds; default Date.now. */
  now?: () => number;
}

/** Node's timers take at most 2^31-1 ms; a later deadline is re-checked when the timer fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Tracked {
  readonly connection: RevocableConnection;
  readonly principalId: string;
  /** Latest `exp` (epoch seconds) of the tokens presented on the connection. */
  expiresAt: number;
  timer: NodeJS.Timeout | undefined;
}

/** True when a connection authorized until `expiresAt` (epoch seconds) has expired at `nowMs`. */
export function isExpired(expiresAt: number, nowMs: number): boolean {
  return nowMs >= expiresAt * 1000;
}

export class ConnectionAuthority {
  readonly #revoke: ConnectionAuthorityOptions['revoke'];
  readonly #now: () => number;
  readonly #tracked = new Map<string, Tracked>();
  #closed = false;

  constructor(options: ConnectionAuthorityOptions) {
    const { revoke } = options;
    this.#revoke = revoke;
    this.#now = options.now ?? Date.now;
  }

  /** Connections tracked now (tests, diagnostics). */
  get size(): number {
    return this.#tracked.size;
  }

  /**
   * A bearer of `principalId` valid until `expiresAt` (epoch seconds) authenticated a request on
   * `connection` (the dispatcher pinned the principal already).
   */
  authenticated(connection: RevocableConnection, principalId: string, expiresAt: number): void {
    if (this.#closed) return;
    let tracked = this.#tracked.get(connection.id);
    if (tracked === undefined) {
      tracked = { connection, principalId, expiresAt, timer: undefined };
      this.#tracked.set(connection.id, tracked);
      connection.onClose(() => this.#forget(connection.id));
    } else if (expiresAt <= tracked.expiresAt) return;
    tracked.expiresAt = expiresAt;
    this.#arm(tracked);
  }

  /** The principal was tombstoned: revoke every connection pinned to it. */
  revokePrincipal(principalId: string): void {
    for (const tracked of [...this.#tracked.values()])
      if (tracked.principalId === principalId) this.#end(tracked, 'principal_tombstoned');
  }

  /** Daemon shutdown: stop every timer. */
  close(): void {
    this.#closed = true;
    for (const tracked of this.#tracked.values()) clearTimeout(tracked.timer);
    this.#tracked.clear();
  }

  #arm(tracked: Tracked): void {
    clearTimeout(tracked.timer);
    const delay = tracked.expiresAt * 1000 - this.#now();
    if (delay <= 0) {
      this.#end(tracked, 'token_expired');
      return;
    }
    tracked.timer = setTimeout(
      () => {
        if (isExpired(tracked.expiresAt, this.#now())) this.#end(tracked, 'token_expired');
        else this.#arm(tracked);
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    tracked.timer.unref();
  }

  #end(tracked: Tracked, reason: RevocationReason): void {
    this.#forget(tracked.connection.id);
    this.#revoke(tracked.connection, reason);
  }

  #forget(connectionId: string): void {
    const tracked = this.#tracked.get(connectionId);
    if (tracked === undefined) return;
    clearTimeout(tracked.timer);
    this.#tracked.delete(connectionId);
  }
}
