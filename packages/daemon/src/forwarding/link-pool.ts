// Shared links for stateless forwarded requests. A target pins the principal of a connection on its
// first authenticated request (spec: client token contract), so links are pooled per target AND
// principal: every request on a link has the same principal (or none, for public routes).
// Bounded: a few links per key, a global cap, idle links closed.
import { SvcError, type Request as WireRequest, type Response as WireResponse } from '@svc/protocol';
import type { ResolvedTarget } from './targets.ts';
import type { UpstreamLink } from './upstream-link.ts';

export interface LinkPoolOptions {
  /** Opens one link (UpstreamLink.connect with this daemon's CAs); `onClose` must be honoured. */
  connect(target: ResolvedTarget, onClose: () => void): Promise<UpstreamLink>;
  /** Links per (target, principal); default 4. */
  maxLinksPerKey?: number;
  /** Links of the whole pool; default 256. */
  maxLinks?: number;
  /** A link with fewer requests in flight than this is reused before another is opened; default 32. */
  busyThreshold?: number;
  /** Close links idle this long; default 30 s. */
  idleMs?: number;
}

interface Entry {
  links: UpstreamLink[];
  /** One connect at a time per key: concurrent callers wait for it instead of opening more. */
  connecting: Promise<UpstreamLink> | undefined;
}

export class LinkPool {
  readonly #options: Required<Omit<LinkPoolOptions, 'connect'>> & Pick<LinkPoolOptions, 'connect'>;
  readonly #entries = new Map<string, Entry>();
  readonly #sweeper: NodeJS.Timeout;
  #total = 0;

  constructor(options: LinkPoolOptions) {
    this.#options = {
      maxLinksPerKey: 4,
      maxLinks: 256,
      busyThreshold: 32,
      idleMs: 30_000,
      ...options,
    };
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(1_000, this.#options.idleMs / 2));
    this.#sweeper.unref();
  }

  /** Open links (for tests and metrics). */
  get size(): number {
    return this.#total;
  }

  send(target: ResolvedTarget, principalKey: string, request: WireRequest): Promise<WireResponse> {
    const key = `${target.key}\u0000${principalKey}`;
    // The usual case, an open link with room, without a promise of its own.
    const ready = this.#pick(this.#entries.get(key));
    if (ready !== undefined) return ready.send(request);
    return this.#acquire(target, key).then((link) => link.send(request));
  }

  /** The entry's least busy link when it is to be used as it is (no other link may or need be opened). */
  #pick(entry: Entry | undefined): UpstreamLink | undefined {
    if (entry === undefined) return undefined;
    let best: UpstreamLink | undefined;
    for (const link of entry.links) if (best === undefined || link.inFlight < best.inFlight) best = link;
    const { maxLinksPerKey, maxLinks, busyThreshold } = this.#options;
    const mayOpen = entry.links.length < maxLinksPerKey && this.#total < maxLinks;
    return best !== undefined && (best.inFlight < busyThreshold || !mayOpen) ? best : undefined;
  }

  close(): void {
    clearInterval(this.#sweeper);
    for (const entry of this.#entries.values()) for (const link of entry.links) link.close();
    this.#entries.clear();
  }

  async #acquire(target: ResolvedTarget, key: string): Promise<UpstreamLink> {
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { links: [], connecting: undefined };
      this.#entries.set(key, entry);
    }
    const best = this.#pick(entry);
    if (best !== undefined) return best;
    if (entry.connecting !== undefined) return entry.connecting;
    const { maxLinksPerKey, maxLinks } = this.#options;
    const mayOpen = entry.links.length < maxLinksPerKey && this.#total < maxLinks;
    if (!mayOpen) {
      if (this.#total >= maxLinks && !this.#evictIdle())
        throw new SvcError('unavailable', 'too many open forward links; retry later');
    }
    const connecting = this.#open(target, key, entry);
    entry.connecting = connecting;
    try {
      return await connecting;
    } finally {
      entry.connecting = undefined;
      if (entry.links.length === 0 && this.#entries.get(key) === entry) this.#entries.delete(key);
    }
  }

  async #open(target: ResolvedTarget, key: string, entry: Entry): Promise<UpstreamLink> {
    this.#total++;
    let link!: UpstreamLink;
    try {
      link = await this.#options.connect(target, () => this.#forget(key, entry, link));
    } catch (error) {
      this.#total--;
      throw error;
    }
    entry.links.push(link);
    return link;
  }

  #forget(key: string, entry: Entry, link: UpstreamLink): void {
    const index = entry.links.indexOf(link);
    if (index === -1) return;
    entry.links.splice(index, 1);
    this.#total--;
    if (entry.links.length === 0 && entry.connecting === undefined && this.#entries.get(key) === entry)
      this.#entries.delete(key);
  }

  /** Closes one idle link to make room; false when every link is busy. */
  #evictIdle(): boolean {
    for (const entry of this.#entries.values())
      for (const link of entry.links)
        if (link.inFlight === 0) {
          link.close();
          return true;
        }
    return false;
  }

  #sweep(): void {
    const cutoff = Date.now() - this.#options.idleMs;
    for (const entry of [...this.#entries.values()])
      for (const link of [...entry.links]) if (link.inFlight === 0 && link.lastUsed < cutoff) link.close();
  }
}
