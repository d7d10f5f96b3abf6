// The registry session (spec: "Cluster-mode behavior" 1): one etcd client per node and one lease
// with the configured TTL, kept alive; when the lease is lost (expiry, an etcd outage, a restart of
// etcd) a new one is granted and every key the node owns is written again on it. Keys owned by the
// session (node report, service records) disappear on their own when the node dies.
import { Etcd3, type IOptions, type Lease } from 'etcd3';

export interface RegistryTls {
  /** PEM CA that signed etcd's certificate. */
  ca?: Buffer;
  /** PEM client certificate and key, when etcd requires client certificates. */
  cert?: Buffer;
  key?: Buffer;
}

export interface RegistrySessionOptions {
  /** etcd endpoints, `http(s)://host:port` (SVC_REGISTRY_URL, comma-separated). */
  urls: readonly string[];
  ttlSeconds: number;
  tls?: RegistryTls;
  /** Diagnostics; never given secrets. */
  log?: (level: 'info' | 'warn', message: string) => void;
}

export interface RegistrySession {
  readonly client: Etcd3;
  readonly ttlSeconds: number;
  /** The current lease id (decimal string), or undefined while none is granted. */
  leaseId(): string | undefined;
  /** Writes `key` on the session's lease and keeps writing it on every new lease until deleted. */
  putOwned(key: string, value: string): Promise<void>;
  /** Deletes an owned key and forgets it. */
  deleteOwned(key: string): Promise<void>;
  /** Called with each newly granted lease id (after the owned keys were written on it). */
  onLease(listener: (leaseId: string) => void): () => void;
  /** Revokes the lease (so owned keys vanish at once), stops keepalives and closes the client. */
  close(): Promise<void>;
}

const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;

export function etcdClientOptions(urls: readonly string[], tls: RegistryTls | undefined): IOptions {
  const secure = urls.some((url) => url.startsWith('https://'));
  return {
    hosts: [...urls],
    dialTimeout: 3_000,
    ...(secure
      ? {
          credentials: {
            rootCertificate: tls?.ca ?? Buffer.alloc(0),
            ...(tls?.key === undefined ? {} : { privateKey: tls.key }),
            ...(tls?.cert === undefined ? {} : { certChain: tls.cert }),
          },
        }
      : {}),
  };
}

export async function openRegistrySession(options: RegistrySessionOptions): Promise<RegistrySession> {
  const client = new Etcd3(etcdClientOptions(options.urls, options.tls));
  const log = options.log ?? ((): void => undefined);
  const owned = new Map<string, string>();
  const listeners = new Set<(leaseId: string) => void>();
  let lease: Lease | undefined;
  let leaseId: string | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = RETRY_MIN_MS;

  const grant = async (): Promise<void> => {
    const next = client.lease(options.ttlSeconds);
    next.on('lost', (error) => {
      if (next !== lease || closed) return;
      log('warn', `registry lease lost (${error.message}); granting a new one`);
      lease = undefined;
      leaseId = undefined;
      next.release();
      schedule();
    });
    const id = await next.grant();
    if (closed) {
      next.release();
      return;
    }
    lease = next;
    for (const [key, value] of owned) await next.put(key).value(value);
    leaseId = id;
    delay = RETRY_MIN_MS;
    for (const listener of listeners) listener(id);
  };

  const schedule = (): void => {
    if (closed || retryTimer !== undefined) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      grant().catch((error: unknown) => {
        log('warn', `registry unavailable (${error instanceof Error ? error.message : String(error)})`);
        lease?.release();
        lease = undefined;
        leaseId = undefined;
        delay = Math.min(delay * 2, RETRY_MAX_MS);
        schedule();
      });
    }, delay);
    retryTimer.unref();
  };

  await grant();
  return {
    client,
    ttlSeconds: options.ttlSeconds,
    leaseId: () => leaseId,
    async putOwned(key, value) {
      owned.set(key, value);
      if (lease !== undefined) await lease.put(key).value(value);
    },
    async deleteOwned(key) {
      owned.delete(key);
      await client.delete().key(key);
    },
    onLease(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      const current = lease;
      lease = undefined;
      leaseId = undefined;
      if (current !== undefined) {
        await current.revoke({ deadline: Date.now() + 2_000 }).catch(() => undefined);
        current.release();
      }
      client.close();
    },
  };
}
