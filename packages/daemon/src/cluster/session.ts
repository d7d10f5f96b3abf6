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
  const client = new Etcd3(etcdClientOptions(options.urls, options.tls));
  const watchClients = new Set<Etcd3>();
  const log = options.log ?? ((): void => undefined);
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlSeconds * 1000;
  // Retries stay well inside the TTL: after an etcd restart the old lease lives one TTL more, and
  // the node must be on a new one (its keys rewritten) before the old one takes the keys with it.
  const retryMaxMs = Math.max(RETRY_MIN_MS, Math.min(RETRY_MAX_MS, ttlMs / 4));
  const owned = new Map<string, string>();
  /** Owned keys whose last write failed while the lease was still granted: written on the next keepalive. */
  const dirty = new Set<string>();
  /** Keys given up whose delete failed (etcd unreachable): deleted again after the next keepalive. */
  const undeleted = new Set<string>();
  const leaseListeners = new Set<(leaseId: string) => void>();
  const downListeners = new Set<() => void>();
  let lease: Lease | undefined;
  let leaseId: string | undefined;
  /** Estimated end of the current lease (ms), from the send time of the last answered keepalive. */
  let validUntil = 0;
  let wasAlive = false;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = RETRY_MIN_MS;

  const alive = (): boolean => leaseId !== undefined && now() < validUntil - ttlMs * (1 - ALIVE_SHARE);

  const checkDown = (): void => {
    const current = alive();
    if (wasAlive && !current) for (const listener of downListeners) listener();
    wasAlive = current;
  };

  const drop = (which: Lease): void => {
    if (which !== lease) return;
    lease = undefined;
    leaseId = undefined;
    which.release();
    checkDown();
  };

  const deleteKey = async (key: string): Promise<void> => {
    try {
      await client.delete().key(key);
      undeleted.delete(key);
    } catch (error) {
      undeleted.add(key);
      log('warn', `registry delete of ${key} failed (${messageOf(error)}); will retry`);
    }
  };

  const writeDirty = async (which: Lease): Promise<void> => {
    for (const key of [...undeleted]) if (!owned.has(key)) await deleteKey(key);
    for (const key of [...dirty]) {
      const value = owned.get(key);
      dirty.delete(key);
      if (value === undefined) continue;
      await which
        .put(key)
        .value(value)
        .catch(() => dirty.add(key));
    }
  };

  const grant = async (): Promise<void> => {
    const next = client.lease(options.ttlSeconds, {
      deadline: new Date(now() + Math.max(1_000, Math.min(GRANT_DEADLINE_MS, ttlMs / 2))),
    });
    const fired: number[] = [];
    next.on('lost', (error) => {
      if (next !== lease || closed) return;
      log('warn', `registry lease lost (${error.message}); granting a new one`);
      drop(next);
      retry();
    });
    next.on('keepaliveEstablished', () => (fired.length = 0));
    next.on('keepaliveFired', () => fired.push(now()));
    next.on('keepaliveSucceeded', () => {
      const sentAt = fired.shift();
      if (sentAt !== undefined && next === lease) {
        validUntil = Math.max(validUntil, sentAt + ttlMs);
        checkDown();
        if (dirty.size + undeleted.size > 0) void writeDirty(next);
      }
    });
    const sentAt = now();
    const id = await next.grant();
    if (closed) {
      next.release();
      return;
    }
    lease = next;
    validUntil = sentAt + ttlMs;
    dirty.clear();
    for (const [key, value] of owned) await next.put(key).value(value);
    leaseId = id;
    for (const key of [...undeleted]) if (!owned.has(key)) await deleteKey(key);
    delay = RETRY_MIN_MS;
    checkDown();
    for (const listener of leaseListeners) listener(id);
  };

  const attempt = (): void => {
    grant().catch((error: unknown) => {
      log('warn', `registry unavailable (${messageOf(error)})`);
      if (lease !== undefined) drop(lease);
      delay = Math.min(delay * 2, retryMaxMs);
      retry();
    });
  };

  const retry = (): void => {
    if (closed || retryTimer !== undefined) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      attempt();
    }, delay);
    retryTimer.unref();
  };

  // The watchdog: notices when the estimate says "about to expire" (alive() turns false) and, past
  // the estimated expiry, gives the lease up at once instead of waiting for etcd3's 2 × TTL.
  const watchdog = setInterval(
    () => {
      checkDown();
      if (lease !== undefined && now() > validUntil) {
        log(
          'warn',
          'registry lease expired by the session estimate (no keepalive answered); granting a new one',
        );
        drop(lease);
        retry();
      }
    },
    Math.max(50, Math.min(500, ttlMs / 12)),
  );
  watchdog.unref();

  try {
    await grant();
  } catch (error) {
    log('warn', `registry unavailable at start (${messageOf(error)}); retrying in the background`);
    if (lease !== undefined) drop(lease);
    retry();
  }

  return {
    client,
    ttlSeconds: options.ttlSeconds,
    leaseId: () => leaseId,
    alive,
    async putOwned(key, value) {
      owned.set(key, value);
      undeleted.delete(key);
      const current = lease;
      if (current === undefined) return; // written on the next lease
      if (!alive()) {
        // etcd is not answering: do not wait for it; written after the next answered keepalive.
        dirty.add(key);
        return;
      }
      try {
        await current.put(key).value(value);
        dirty.delete(key);
      } catch (error) {
        // Written again after the next answered keepalive, or on the next lease.
        dirty.add(key);
        log('warn', `registry write of ${key} failed (${messageOf(error)}); will retry`);
      }
    },
    async deleteOwned(key) {
      owned.delete(key);
      dirty.delete(key);
      if (!alive()) {
        undeleted.add(key); // deleted after the next answered keepalive (or dies with the lease)
        return;
      }
      await deleteKey(key);
    },
    onLease(listener) {
      leaseListeners.add(listener);
      return () => leaseListeners.delete(listener);
    },
    onDown(listener) {
      downListeners.add(listener);
      return () => downListeners.delete(listener);
    },
    watchClient() {
      const extra = new Etcd3(etcdClientOptions(options.urls, options.tls));
      watchClients.add(extra);
      return extra;
    },
    async close() {
      closed = true;
      clearInterval(watchdog);
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      const current = lease;
      lease = undefined;
      leaseId = undefined;
      if (current !== undefined) {
        // revoke() ends the keepalive loop first (etcd3: close() would leave it running).
        await current.revoke({ deadline: new Date(Date.now() + 2_000) }).catch(() => current.release());
      }
      for (const extra of watchClients) extra.close();
      watchClients.clear();
      client.close();
    },
  };
}
