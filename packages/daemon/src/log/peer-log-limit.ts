// Per-peer rate limit of log lines (pure; clock passed in). A peer (the `remote` field of a line)
// may write `perWindow` lines per window; the rest of that window is counted, not written, and the
// count is reported once in a summary line ("suppressed N log lines") when the peer's next window
// starts or when `sweep()` finds its window over. Peers beyond `maxPeers` share one bucket.

export interface PeerLogLimitOptions {
  perWindow: number;
  windowMs: number;
  maxPeers: number;
  now: () => number;
}

export interface Suppressed {
  peer: string;
  count: number;
}

interface Window {
  start: number;
  written: number;
  suppressed: number;
}

/** Bucket of peers that arrive while `maxPeers` windows are open. */
export const OVERFLOW_PEER = 'other-peers';

export class PeerLogLimit {
  readonly #options: PeerLogLimitOptions;
  readonly #windows = new Map<string, Window>();

  constructor(options: PeerLogLimitOptions) {
    this.#options = options;
  }

  /**
   * Whether a line of `peer` is written now, and the summary of its previous window to write
   * first (when lines were suppressed in it).
   */
  admit(peer: string): { write: boolean; summary: Suppressed | undefined } {
    const now = this.#options.now();
    const key = this.#windows.has(peer) || this.#windows.size < this.#options.maxPeers ? peer : OVERFLOW_PEER;
    let window = this.#windows.get(key);
    let summary: Suppressed | undefined;
    if (window !== undefined && now - window.start >= this.#options.windowMs) {
      if (window.suppressed > 0) summary = { peer: key, count: window.suppressed };
      window = undefined;
    }
    if (window === undefined) {
      window = { start: now, written: 0, suppressed: 0 };
      this.#windows.set(key, window);
    }
    if (window.written < this.#options.perWindow) {
      window.written++;
      return { write: true, summary };
    }
    window.suppressed++;
    return { write: false, summary };
  }

  /** Ends every window that is over: their summaries, and the peers are forgotten. */
  sweep(): Suppressed[] {
    const now = this.#options.now();
    const summaries: Suppressed[] = [];
    for (const [peer, window] of this.#windows) {
      if (now - window.start < this.#options.windowMs) continue;
      if (window.suppressed > 0) summaries.push({ peer, count: window.suppressed });
      this.#windows.delete(peer);
    }
    return summaries;
  }

  get peers(): number {
    return this.#windows.size;
  }
}
