// Connection-flood protection shared by every listener (issue 25 H4): a global cap and a
// per-remote-address cap, counted from accept (before the TLS handshake). A connection starts
// *pending* and becomes *established* once it authenticates (a bearer, a process key, svc-agent's
// relay key). When a cap is full, a new connection takes the place of the oldest pending one under
// that cap (its address's when the address is full, anyone's when the global cap is), which is
// closed; only when every connection under the cap is established is the new one refused. So
// silent or anonymous peers can hold slots only until somebody else needs them, and one address —
// or a few — cannot lock everybody else out by opening connections and saying nothing. A slot can
// move to another address: a WSS session relayed by svc-agent is counted against the agent's client.

export interface ConnectionSlot {
  /** The address the connection is counted against now. */
  readonly address: string;
  /** Idempotent; call when the socket closes. */
  release(): void;
  /** Count the connection against `address` instead; false (and unchanged) when that address is full. */
  move(address: string): boolean;
  /** The connection authenticated: it is no longer closed to make room for others. Idempotent. */
  establish(): void;
}

interface Entry {
  address: string;
  pending: boolean;
  released: boolean;
  readonly evict: () => void;
}

export class ConnectionGuard {
  readonly #perAddress = new Map<string, number>();
  /** Pending connections by address, oldest first (Set keeps insertion order). */
  readonly #pendingByAddress = new Map<string, Set<Entry>>();
  /** Every pending connection, oldest first. */
  readonly #pending = new Set<Entry>();
  #total = 0;
  readonly #maxTotal: number;
  readonly #maxPerAddress: number;

  constructor(limits: { maxConnections: number; maxConnectionsPerIp: number }) {
    this.#maxTotal = limits.maxConnections;
    this.#maxPerAddress = limits.maxConnectionsPerIp;
  }

  /**
   * A slot, or undefined when the connection must be refused. `evict` closes the connection when
   * a newer one takes its place (the slot is released at that moment).
   */
  admit(address: string, evict: () => void = () => undefined): ConnectionSlot | undefined {
    if (!this.#hasRoom(address)) {
      const victim = first(this.#pendingByAddress.get(address));
      if (victim === undefined) return undefined;
      this.#evict(victim);
    }
    if (this.#total >= this.#maxTotal) {
      const victim = first(this.#pending);
      if (victim === undefined) return undefined;
      this.#evict(victim);
    }
    const entry: Entry = { address, pending: true, released: false, evict };
    this.#add(address);
    this.#markPending(entry);
    this.#total++;
    return {
      get address() {
        return entry.address;
      },
      release: () => this.#release(entry),
      move: (next) => {
        if (entry.released || next === entry.address) return !entry.released;
        if (!this.#hasRoom(next)) return false;
        this.#unmarkPending(entry);
        this.#remove(entry.address);
        entry.address = next;
        this.#add(next);
        if (entry.pending) this.#markPending(entry);
        return true;
      },
      establish: () => {
        if (entry.released || !entry.pending) return;
        this.#unmarkPending(entry);
        entry.pending = false;
      },
    };
  }

  get total(): number {
    return this.#total;
  }

  #evict(entry: Entry): void {
    this.#release(entry);
    entry.evict();
  }

  #release(entry: Entry): void {
    if (entry.released) return;
    entry.released = true;
    this.#unmarkPending(entry);
    this.#total--;
    this.#remove(entry.address);
  }

  #markPending(entry: Entry): void {
    if (!entry.pending) return;
    this.#pending.add(entry);
    let set = this.#pendingByAddress.get(entry.address);
    if (set === undefined) this.#pendingByAddress.set(entry.address, (set = new Set()));
    set.add(entry);
  }

  #unmarkPending(entry: Entry): void {
    this.#pending.delete(entry);
    const set = this.#pendingByAddress.get(entry.address);
    if (set === undefined) return;
    set.delete(entry);
    if (set.size === 0) this.#pendingByAddress.delete(entry.address);
  }

  #hasRoom(address: string): boolean {
    return (this.#perAddress.get(address) ?? 0) < this.#maxPerAddress;
  }

  #add(address: string): void {
    this.#perAddress.set(address, (this.#perAddress.get(address) ?? 0) + 1);
  }

  #remove(address: string): void {
    const left = (this.#perAddress.get(address) ?? 1) - 1;
    if (left <= 0) this.#perAddress.delete(address);
    else this.#perAddress.set(address, left);
  }
}

function first<T>(set: Set<T> | undefined): T | undefined {
  if (set === undefined) return undefined;
  for (const item of set) return item;
  return undefined;
}
