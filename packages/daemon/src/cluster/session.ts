// The registry session (spec: "Cluster-mode behavior" 1): one etcd client per node and one lease
// with the configured TTL, kept alive; when the lease is lost (expiry, an etcd outage, a restart of
// etcd) a new one is granted and every key the node owns is written again on it. Keys owned by the
// session (node report, service records, the election key) disappear on their own when the node dies.
//
// The etcd3 client reports a lost lease only about 2 × TTL after the last keepalive. The session
// keeps its own, conservative estimate instead: the lease is valid until the send time of the last
// answered keepalive plus the TTL (etcd renews on receipt, later than the send). `alive()` turns
// false once a quarter of the TTL or less remains, so a leader stops acting before etcd can expire
// its lease and elect another; past the estimate the session drops the lease and grants a new one.
import type { Etcd3, IOptions, Lease } from 'etcd3';

export interface RegistryTls {
  /** PEM CA that signed etcd's certificate (default: the system's roots). */
  ca?: Buffer | undefined;
  /** PEM client certificate and key, when etcd requires client certificates. */
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
}

export interface RegistrySessionOptions {
  /** etcd endpoints, `http(s)://host:port` (SVC_REGISTRY_URL, comma-separated). */
  urls: readonly string[];
  ttlSeconds: number;
  tls?: RegistryTls | undefined;
  /** Diagnostics; never given secrets. */
  log?: (level: 'info' | 'warn', message: string) => void;
  /** Clock (ms), for tests. */
  now?: () => number;
}

export interface RegistrySession {
  readonly client: Etcd3;
  /**
   * A client of its own for one long-lived watch (closed with the session). etcd3 1.1.2 matches a
   * "created and cancelled" answer to the first pending watcher of its client, so several watchers
   * on one client (the session's) can get each other's answers, and a later one naming no watcher
   * throws on the gRPC stream and ends the process (registry-watch.ts).
   */
  watchClient(): Etcd3;
  readonly ttlSeconds: number;
  /** The current lease id (decimal string), or undefined while none is granted. */
  leaseId(): string | undefined;
  /**
   * True while a lease is granted and, by the session's own estimate, more than a quarter of its
   * TTL remains. A leader acts only while this holds.
   */
  alive(): boolean;
  /**
   * Writes `key` on the session's lease and keeps writing it on every new lease until deleted.
   * Never throws: while etcd is unreachable the write waits for the next keepalive or lease.
   */
  putOwned(key: string, value: string): Promise<void>;
  /**
   * Deletes an owned key and forgets it. Never throws: a failed delete is retried after the next
   * answered keepalive (and the key dies with the lease anyway).
   */
  deleteOwned(key: string): Promise<void>;
  /** Called with each newly granted lease id (after the owned keys were written on it). */
  onLease(listener: (leaseId: string) => void): () => void;
  /** Called when `alive()` turns false (the lease is about to expire, expired or was lost). */
  onDown(listener: () => void): () => void;
  /** Releases keepalives, revokes the lease (owned keys vanish at once) and closes the client. */
  close(): Promise<void>;
}

const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;
const GRANT_DEADLINE_MS = 5_000;
/** The lease counts as alive until this share of the TTL after the last answered keepalive. */
const ALIVE_SHARE = 0.75;

export function etcdClientOptions(urls: readonly string[], tls: RegistryTls | undefined): IOptions {
  const secure = urls.some((url) => url.startsWith('https://'));
  return {
    hosts: [...urls],
    dialTimeout: 3_000,
    ...(secure
      ? {
          credentials: {
            // grpc-js: null root certificates = the system's roots.
            rootCertificate: tls?.ca ?? (null as unknown as Buffer),
            ...(tls?.key === undefined ? {} : { privateKey: tls.key }),
            ...(tls?.cert === undefined ? {} : { certChain: tls.cert }),
          },
        }
      : {}),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export async function openRegistrySession(options: RegistrySessionOptions): Promise<RegistrySession> {
  // Loaded on demand: a stand-alone daemon never pays for gRPC.
  const { Etcd3 } = await import('etcd3');
  const session = new LeasedSession(options, () => new Etcd3(etcdClientOptions(options.urls, options.tls)));
  await session.start();
  return session;
}

class LeasedSession implements RegistrySession {
  readonly client: Etcd3;
  readonly ttlSeconds: number;
  readonly #newClient: () => Etcd3;
  readonly #watchClients = new Set<Etcd3>();
  readonly #log: (level: 'info' | 'warn', message: string) => void;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #retryMaxMs: number;
  readonly #owned = new Map<string, string>();
  /** Owned keys whose last write failed while the lease was still granted: written on the next keepalive. */
  readonly #dirty = new Set<string>();
  /** Keys given up whose delete failed (etcd unreachable): deleted again after the next keepalive. */
  readonly #undeleted = new Set<string>();
  readonly #leaseListeners = new Set<(leaseId: string) => void>();
  readonly #downListeners = new Set<() => void>();
  readonly #watchdog: NodeJS.Timeout;
  #lease: Lease | undefined;
  #leaseId: string | undefined;
  /** Estimated end of the current lease (ms), from the send time of the last answered keepalive. */
  #validUntil = 0;
  #wasAlive = false;
  #closed = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #delay = RETRY_MIN_MS;

  constructor(options: RegistrySessionOptions, newClient: () => Etcd3) {
    this.#newClient = newClient;
    this.client = newClient();
    this.ttlSeconds = options.ttlSeconds;
    this.#log = options.log ?? ((): void => undefined);
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlSeconds * 1000;
    // Retries stay well inside the TTL: after an etcd restart the old lease lives one TTL more, and
    // the node must be on a new one (its keys rewritten) before the old one takes the keys with it.
    this.#retryMaxMs = Math.max(RETRY_MIN_MS, Math.min(RETRY_MAX_MS, this.#ttlMs / 4));
    // The watchdog: notices when the estimate says "about to expire" (alive() turns false) and, past
    // the estimated expiry, gives the lease up at once instead of waiting for etcd3's 2 × TTL.
    this.#watchdog = setInterval(
      () => {
        this.#checkDown();
        if (this.#lease !== undefined && this.#now() > this.#validUntil) {
          this.#log(
            'warn',
            'registry lease expired by the session estimate (no keepalive answered); granting a new one',
          );
          this.#drop(this.#lease);
          this.#retry();
        }
      },
      Math.max(50, Math.min(500, this.#ttlMs / 12)),
    );
    this.#watchdog.unref();
  }

  /** The first lease; when etcd cannot grant it, the session retries in the background. */
  async start(): Promise<void> {
    try {
      await this.#grant();
    } catch (error) {
      this.#log('warn', `registry unavailable at start (${messageOf(error)}); retrying in the background`);
      if (this.#lease !== undefined) this.#drop(this.#lease);
      this.#retry();
    }
  }

  leaseId(): string | undefined {
    return this.#leaseId;
  }

  alive(): boolean {
    return this.#leaseId !== undefined && this.#now() < this.#validUntil - this.#ttlMs * (1 - ALIVE_SHARE);
  }

  async putOwned(key: string, value: string): Promise<void> {
    this.#owned.set(key, value);
    this.#undeleted.delete(key);
    const current = this.#lease;
    if (current === undefined) return; // written on the next lease
    if (!this.alive()) {
      // etcd is not answering: do not wait for it; written after the next answered keepalive.
      this.#dirty.add(key);
      return;
    }
    try {
      await current.put(key).value(value);
      this.#dirty.delete(key);
    } catch (error) {
      // Written again after the next answered keepalive, or on the next lease.
      this.#dirty.add(key);
      this.#log('warn', `registry write of ${key} failed (${messageOf(error)}); will retry`);
    }
  }

  async deleteOwned(key: string): Promise<void> {
    this.#owned.delete(key);
    this.#dirty.delete(key);
    if (!this.alive()) {
      this.#undeleted.add(key); // deleted after the next answered keepalive (or dies with the lease)
      return;
    }
    await this.#deleteKey(key);
  }

  onLease(listener: (leaseId: string) => void): () => void {
    this.#leaseListeners.add(listener);
    return () => this.#leaseListeners.delete(listener);
  }

  onDown(listener: () => void): () => void {
    this.#downListeners.add(listener);
    return () => this.#downListeners.delete(listener);
  }

  watchClient(): Etcd3 {
    const extra = this.#newClient();
    this.#watchClients.add(extra);
    return extra;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watchdog);
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    const current = this.#lease;
    this.#lease = undefined;
    this.#leaseId = undefined;
    if (current !== undefined) {
      // revoke() ends the keepalive loop first (etcd3: close() would leave it running).
      await current.revoke({ deadline: new Date(Date.now() + 2_000) }).catch(() => current.release());
    }
    for (const extra of this.#watchClients) extra.close();
    this.#watchClients.clear();
    this.client.close();
  }

  #checkDown(): void {
    const current = this.alive();
    if (this.#wasAlive && !current) for (const listener of this.#downListeners) listener();
    this.#wasAlive = current;
  }

  #drop(which: Lease): void {
    if (which !== this.#lease) return;
    this.#lease = undefined;
    this.#leaseId = undefined;
    which.release();
    this.#checkDown();
  }

  async #deleteKey(key: string): Promise<void> {
    try {
      await this.client.delete().key(key);
      this.#undeleted.delete(key);
    } catch (error) {
      this.#undeleted.add(key);
      this.#log('warn', `registry delete of ${key} failed (${messageOf(error)}); will retry`);
    }
  }

  async #writeDirty(which: Lease): Promise<void> {
    for (const key of [...this.#undeleted]) if (!this.#owned.has(key)) await this.#deleteKey(key);
    for (const key of [...this.#dirty]) {
      const value = this.#owned.get(key);
      this.#dirty.delete(key);
      if (value === undefined) continue;
      await which
        .put(key)
        .value(value)
        .catch(() => this.#dirty.add(key));
    }
  }

  async #grant(): Promise<void> {
    const ttlMs = this.#ttlMs;
    const next = this.client.lease(this.ttlSeconds, {
      deadline: new Date(this.#now() + Math.max(1_000, Math.min(GRANT_DEADLINE_MS, ttlMs / 2))),
    });
    const fired: number[] = [];
    next.on('lost', (error) => {
      if (next !== this.#lease || this.#closed) return;
      this.#log('warn', `registry lease lost (${error.message}); granting a new one`);
      this.#drop(next);
      this.#retry();
    });
    next.on('keepaliveEstablished', () => (fired.length = 0));
    next.on('keepaliveFired', () => fired.push(this.#now()));
    next.on('keepaliveSucceeded', () => {
      const sentAt = fired.shift();
      if (sentAt !== undefined && next === this.#lease) {
        this.#validUntil = Math.max(this.#validUntil, sentAt + ttlMs);
        this.#checkDown();
        if (this.#dirty.size + this.#undeleted.size > 0) void this.#writeDirty(next);
      }
    });
    const sentAt = this.#now();
    const id = await next.grant();
    if (this.#closed) {
      next.release();
      return;
    }
    this.#lease = next;
    this.#validUntil = sentAt + ttlMs;
    this.#dirty.clear();
    for (const [key, value] of this.#owned) await next.put(key).value(value);
    this.#leaseId = id;
    for (const key of [...this.#undeleted]) if (!this.#owned.has(key)) await this.#deleteKey(key);
    this.#delay = RETRY_MIN_MS;
    this.#checkDown();
    for (const listener of this.#leaseListeners) listener(id);
  }

  #attempt(): void {
    this.#grant().catch((error: unknown) => {
      this.#log('warn', `registry unavailable (${messageOf(error)})`);
      if (this.#lease !== undefined) this.#drop(this.#lease);
      this.#delay = Math.min(this.#delay * 2, this.#retryMaxMs);
      this.#retry();
    });
  }

  #retry(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#attempt();
    }, this.#delay);
    this.#retryTimer.unref();
  }
}
