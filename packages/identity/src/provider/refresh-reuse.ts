// The refresh-token reuse window (spec "Token lifetimes": `reuseInterval` 5m). Refresh tokens rotate
// on every use; each rotation is recorded here (old token → its successor). A rotated token
// presented again within the window resolves to the newest token of its chain, which the provider
// then answers with (no new refresh token, the grant stays). Outside the window the record is gone
// and the library's rule applies: reuse of a consumed refresh token revokes the whole grant.
// Values here are opaque refresh token ids, the same strings the adapter stores.

export const REFRESH_REUSE_MS = 5 * 60 * 1000;

interface Rotation {
  readonly successor: string;
  readonly at: number;
}

export class RefreshReuse {
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #rotations = new Map<string, Rotation>();

  constructor(now: () => number, windowMs: number) {
    this.#now = now;
    this.#windowMs = windowMs;
  }

  get size(): number {
    return this.#rotations.size;
  }

  #sweep(now: number): void {
    // Insertion order is rotation order: stop at the first record still inside the window.
    for (const [token, rotation] of this.#rotations) {
      if (now - rotation.at < this.#windowMs) break;
      this.#rotations.delete(token);
    }
  }

  record(rotated: string, successor: string): void {
    const now = this.#now();
    this.#sweep(now);
    this.#rotations.set(rotated, { successor, at: now });
  }

  /** The newest token of `token`'s chain when `token` was rotated within the window, else undefined. */
  current(token: string): string | undefined {
    const now = this.#now();
    this.#sweep(now);
    let rotation = this.#rotations.get(token);
    if (rotation === undefined || now - rotation.at >= this.#windowMs) return undefined;
    let newest = rotation.successor;
    for (let hops = 0; hops < 1000; hops += 1) {
      rotation = this.#rotations.get(newest);
      if (rotation === undefined) break;
      newest = rotation.successor;
    }
    return newest;
  }
}
