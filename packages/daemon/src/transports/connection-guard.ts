// Connection-flood protection shared by every listener: a global cap and a per-remote-address cap.
// A connection over either cap is closed before any byte of it is parsed.

export class ConnectionGuard {
  readonly #perAddress = new Map<string, number>();
  #total = 0;
  readonly #maxTotal: number;
  readonly #maxPerAddress: number;

  constructor(limits: { maxConnections: number; maxConnectionsPerIp: number }) {
    this.#maxTotal = limits.maxConnections;
    this.#maxPerAddress = limits.maxConnectionsPerIp;
  }

  /** Returns a release function, or undefined when the connection must be refused. */
  admit(address: string): (() => void) | undefined {
    const current = this.#perAddress.get(address) ?? 0;
    if (this.#total >= this.#maxTotal || current >= this.#maxPerAddress) return undefined;
    this.#perAddress.set(address, current + 1);
    this.#total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total--;
      const left = (this.#perAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.#perAddress.delete(address);
      else this.#perAddress.set(address, left);
    };
  }

  get total(): number {
    return this.#total;
  }
}
