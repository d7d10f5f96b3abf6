// The MCP session table's admission and expiry decisions (pure: the clock is passed in).
//
// Contracts (docs/mcp.md "Sessions", docs/security.md "MCP"):
// - A principal holds at most `perPrincipal` sessions. At its cap, a new `initialize` closes that
//   principal's least recently used idle session; when every one of them has a request in flight,
//   the new one is refused (429). A principal can only ever displace its own sessions this way.
// - The table holds at most `maxSessions`. When it is full, the session closed is the least
//   recently used one (idle first) of the principal holding the most sessions, the newcomer's
//   included (counting the session it asks for): a crowd of principals cannot lock anyone out, and
//   whoever holds fewer sessions than the largest holder always gets one.
// - A session is idle when no request of it is in flight (an open event stream is a request); an
//   idle session is closed `idleMs` after its last request ended.

export interface SessionLimits {
  maxSessions: number;
  perPrincipal: number;
  idleMs: number;
}

/** What the table knows of a session. */
export interface TableEntry {
  readonly id: string;
  readonly principal: string;
  /** When its last request started or ended (epoch ms). */
  lastSeen: number;
  /** Orders sessions by use: larger = used more recently (a counter, so two uses never tie). */
  used: number;
  /** Requests in flight, event streams included. */
  busy: number;
}

export type Admission<S extends TableEntry> =
  | { readonly admit: true; readonly evict: S | undefined }
  | { readonly admit: false; readonly status: 429; readonly message: string };

/** Idle first, then least recently seen. */
function lessRecent(a: TableEntry, b: TableEntry): boolean {
  if ((a.busy === 0) !== (b.busy === 0)) return a.busy === 0;
  return a.used < b.used;
}

export class SessionTable<S extends TableEntry> {
  readonly limits: SessionLimits;
  readonly #sessions = new Map<string, S>();
  readonly #byPrincipal = new Map<string, Set<S>>();

  constructor(limits: SessionLimits) {
    this.limits = limits;
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(id: string): S | undefined {
    return this.#sessions.get(id);
  }

  values(): IterableIterator<S> {
    return this.#sessions.values();
  }

  countOf(principal: string): number {
    return this.#byPrincipal.get(principal)?.size ?? 0;
  }

  ofPrincipal(principal: string): S[] {
    return [...(this.#byPrincipal.get(principal) ?? [])];
  }

  add(session: S): void {
    this.#sessions.set(session.id, session);
    let set = this.#byPrincipal.get(session.principal);
    if (set === undefined) this.#byPrincipal.set(session.principal, (set = new Set()));
    set.add(session);
  }

  /** Removes the session; false when it was not (or no longer) in the table. */
  remove(session: S): boolean {
    if (this.#sessions.get(session.id) !== session) return false;
    this.#sessions.delete(session.id);
    const set = this.#byPrincipal.get(session.principal);
    set?.delete(session);
    if (set?.size === 0) this.#byPrincipal.delete(session.principal);
    return true;
  }

  /** Whether `principal` may open one more session now, and which session must close first. */
  admit(principal: string): Admission<S> {
    const own = this.countOf(principal);
    if (own >= this.limits.perPrincipal) {
      const victim = this.#leastRecent(principal);
      if (victim === undefined || victim.busy > 0)
        return {
          admit: false,
          status: 429,
          message: `at most ${this.limits.perPrincipal} MCP sessions per principal, and every one of yours has a request in flight`,
        };
      return { admit: true, evict: victim };
    }
    if (this.#sessions.size < this.limits.maxSessions) return { admit: true, evict: undefined };
    // Full: the largest holder (the newcomer counted with the session it asks for) gives one up;
    // between equal holders, the one whose least recently used session is older.
    let victim = this.#leastRecent(principal);
    let largestCount = own + 1;
    for (const [holder, set] of this.#byPrincipal) {
      if (holder === principal || set.size < largestCount) continue;
      const candidate = this.#leastRecent(holder)!;
      if (set.size > largestCount || victim === undefined || lessRecent(candidate, victim)) {
        victim = candidate;
        largestCount = set.size;
      }
    }
    // Only with maxSessions < 1 (no session anywhere to give up).
    if (victim === undefined)
      return { admit: false, status: 429, message: `at most ${this.limits.maxSessions} MCP sessions` };
    return { admit: true, evict: victim };
  }

  /** Sessions idle for longer than `idleMs` at `now`. */
  expired(now: number): S[] {
    return [...this.#sessions.values()].filter((s) => s.busy === 0 && now - s.lastSeen > this.limits.idleMs);
  }

  #leastRecent(principal: string): S | undefined {
    let found: S | undefined;
    for (const session of this.#byPrincipal.get(principal) ?? [])
      if (found === undefined || lessRecent(session, found)) found = session;
    return found;
  }
}
