// Connection-flood protection shared by every listener: a global cap and a per-remote-address cap.
// A connection is counted from accept (before its TLS handshake) and a connection over either cap
// is closed before any byte of it is parsed. A slot can move to another address: a WSS session
// relayed by svc-agent is counted against the agent's client, not against the agent's loopback.

export interface ConnectionSlot {
  /** The address the connection is counted against now. */
  readonly address: string;
  /** Idempotent; call when the socket closes. */
  release(): void;
  /** Count the connection against `address` instead; false (and unchanged) when that address is full. */
  move(address: string): boolean;
}

export class ConnectionGuard {
  readonly #perAddress = new Map<string, number>();
  #total = 0;
  readonly #maxTotal: number;
  readonly #maxPerAddress: number;

  constructor(limits: { maxConnections: number; maxConnectionsPerIp: number }) {
    this.#maxTotal = limits.maxConnections;
    this.#maxPerAddress = limits.maxConnectionsPerIp;
  }

  /** A slot, or undefined when the connection must be refused. */
  admit(address: string): ConnectionSlot | undefined {
    if (this.#total >= this.#maxTotal || !this.#hasRoom(address)) return undefined;
    this.#add(address);
    this.#total++;
    let current = address;
    let released = false;
    return {
      get address() {
        return current;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#total--;
        this.#remove(current);
      },
      move: (next) => {
        if (released || next === current) return !released;
        if (!this.#hasRoom(next)) return false;
        this.#remove(current);
        this.#add(next);
        current = next;
        return true;
      },
    };
  }

  get total(): number {
    return this.#total;
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
