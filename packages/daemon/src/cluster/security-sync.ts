// Security in sync (spec "Cluster-mode behavior" 4; CONTRACT §9): in cluster mode the authorization
// policy lives in etcd and every node enforces the same one.
//
//   svc/security/version              changed by every write (its mod_revision is the lock)
//   svc/security/roles/<role>         ["app-view", …]            custom roles only
//   svc/security/principals/<id>      {"roles":[…],"status":"active"|"tombstoned","execution_user"?}
//
//   API write on node A ──► PolicyStore.#mutate ──► authority.update: read svc/security/ at rev R,
//        apply the change, txn If(version.mod == R's) Then put/delete changed records + version
//        (else read again and retry) ──► A enforces and caches the committed policy
//   node B: watch svc/security/ ──► re-list ──► PolicyStore.adopt ──► enforced, cached in policy.yaml
//
// Contracts:
// - The first node seeds etcd from its local policy file when etcd has no policy (create-if-absent
//   on the version key); every node then adds its own seed principals when absent (never
//   overriding a record) and from then on takes etcd's policy as its own.
// - Until the seeding is done, API writes wait for it (a short while), then fail `unavailable`;
//   a node keeps enforcing its cached policy while etcd is out of reach.
// - Every watch event, every (re)connection of the watch and a watch cancelled on a compacted
//   revision lead to a full re-list: a node that rejoins catches up; a periodic re-list covers the rest.
// - Records that fail validation (someone wrote etcd directly) are logged and left out; a principal
//   left out holds no permission.
import { setTimeout as delay } from 'node:timers/promises';
import { SvcError } from '@svc/protocol';
import type { Etcd3, IKeyValue, IOperation, Watcher } from 'etcd3';
import {
  checkPolicyRecords,
  type PolicyAuthority,
  type PolicyDocument,
  type PolicyStore,
} from '../auth/policy-store.ts';
import { KEYS } from './records.ts';

export interface SecuritySyncOptions {
  readonly client: Etcd3;
  /** The client the policy watch runs on (its own: session.watchClient()); default `client`. */
  watchClient?: Etcd3;
  readonly store: PolicyStore;
  /** This node's host name (written into the version key, for operators). */
  readonly node: string;
  readonly log?:
    ((level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void) | undefined;
  /** Full re-list period, a safety net behind the watch; default 30 s. */
  readonly relistMs?: number | undefined;
}

export interface SecuritySync {
  /** Resolves once etcd holds the policy and this node has adopted it. */
  ready(): Promise<void>;
  /** Re-reads the shared policy and adopts it (what every watch event triggers). */
  resync(): Promise<void>;
  close(): Promise<void>;
}

const REQUEST_TIMEOUT_MS = 3_000;
const READY_WAIT_MS = 2_000;
const MAX_ATTEMPTS = 12;
/** etcd's default --max-txn-ops is 128: every transaction stays below it. */
const SEED_BATCH = 100;
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 3_000;

interface SharedPolicy {
  readonly document: PolicyDocument;
  /** mod_revision of the version key, undefined while etcd holds no policy. */
  readonly version: string | undefined;
}

function unavailable(cause: unknown): SvcError {
  return new SvcError('unavailable', 'the cluster registry cannot be reached; the policy was not changed', {
    cause,
  });
}

/** Runs one etcd request; anything it throws becomes SvcError `unavailable`. */
async function registry<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw unavailable(error);
  }
}

const deadline = (): { deadline: number } => ({ deadline: Date.now() + REQUEST_TIMEOUT_MS });

function recordsOf(document: PolicyDocument): Map<string, string> {
  const records = new Map<string, string>();
  for (const [name, permissions] of Object.entries(document.roles)) {
    records.set(KEYS.securityRole(name), JSON.stringify(permissions));
  }
  for (const [id, record] of Object.entries(document.principals)) {
    records.set(KEYS.securityPrincipal(id), JSON.stringify(record));
  }
  return records;
}

/** The shared policy from one consistent range read of `svc/security/`. */
export function policyFromKeyValues(
  kvs: readonly IKeyValue[],
  onInvalid: (where: string, problem: string) => void,
): SharedPolicy {
  const roles: Record<string, unknown> = {};
  const principals: Record<string, unknown> = {};
  let version: string | undefined;
  for (const kv of kvs) {
    const key = kv.key.toString();
    if (key === KEYS.securityVersion) {
      version = kv.mod_revision;
      continue;
    }
    const [target, name] = key.startsWith(KEYS.securityRolesPrefix)
      ? [roles, key.slice(KEYS.securityRolesPrefix.length)]
      : key.startsWith(KEYS.securityPrincipalsPrefix)
        ? [principals, key.slice(KEYS.securityPrincipalsPrefix.length)]
        : [undefined, ''];
    if (target === undefined) continue;
    try {
      Object.defineProperty(target, name, { value: JSON.parse(kv.value.toString()), enumerable: true });
    } catch {
      onInvalid(key, 'not valid JSON');
    }
  }
  return { document: checkPolicyRecords(roles, principals, onInvalid), version };
}

type Log = (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;

/** The policy in etcd: consistent reads, guarded commits (the store's authority), the seeding. */
class RegistryPolicy implements PolicyAuthority {
  readonly #client: Etcd3;
  readonly #node: string;
  readonly #log: Log;
  /** Resolves once the sync is established (the wait of an early `update`). */
  readonly #ready: Promise<void>;
  readonly #stop: AbortSignal;
  #seeded = false;
  /** Records still to write after this node won the seeding (kept across retries). */
  #seedRest: [string, string][] | undefined;

  constructor(client: Etcd3, node: string, log: Log, ready: Promise<void>, stop: AbortSignal) {
    this.#client = client;
    this.#node = node;
    this.#log = log;
    this.#ready = ready;
    this.#stop = stop;
  }

  /** Whether etcd holds the policy (seeded by this node or found there). */
  get seeded(): boolean {
    return this.#seeded;
  }

  async read(): Promise<SharedPolicy> {
    const response = await registry(() =>
      this.#client.getAll().prefix(KEYS.securityPrefix).options(deadline()).exec(),
    );
    return policyFromKeyValues(response.kvs, (where, problem) =>
      this.#log('warn', 'invalid security record in the registry ignored', { key: where, problem }),
    );
  }

  async update(
    change: (current: PolicyDocument) => PolicyDocument | undefined,
  ): Promise<PolicyDocument | undefined> {
    if (!this.#seeded) {
      await Promise.race([
        this.#ready,
        delay(READY_WAIT_MS, undefined, { signal: this.#stop }).catch(() => undefined),
      ]);
      if (!this.#seeded) throw unavailable(new Error('the shared policy is not loaded yet'));
    }
    const client = this.#client;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const shared = await this.read();
      const next = change(shared.document);
      if (next === undefined) return undefined;
      const before = recordsOf(shared.document);
      const after = recordsOf(next);
      const ops = [
        ...[...after]
          .filter(([key, value]) => before.get(key) !== value)
          .map(([key, value]) => client.put(key).value(value)),
        ...[...before.keys()].filter((key) => !after.has(key)).map((key) => client.delete().key(key)),
      ];
      if (ops.length === 0) return next;
      if (await this.#commitInBatches(shared.version, ops)) return next;
      await delay(RETRY_MIN_MS * Math.random());
    }
    throw new SvcError('conflict', 'the shared policy kept changing during this change; try again');
  }

  /**
   * Writes `document` (this node's policy) into etcd unless etcd already has one; whether it did.
   * Once it resolves, etcd holds the policy (`seeded`).
   */
  async seed(document: () => PolicyDocument): Promise<boolean> {
    const client = this.#client;
    let won = this.#seedRest !== undefined && this.#seedRest.length > 0;
    if (this.#seedRest === undefined) {
      const records = [...recordsOf(document())];
      const first = records.slice(0, SEED_BATCH);
      const created = await registry(() =>
        client
          .if(KEYS.securityVersion, 'Create', '==', 0)
          .then(
            ...first.map(([key, value]) => client.put(key).value(value)),
            client.put(KEYS.securityVersion).value(this.#versionValue()),
          )
          .options(deadline())
          .commit(),
      );
      won = created.succeeded;
      this.#seedRest = won ? records.slice(SEED_BATCH) : [];
    }
    // The rest one by one, each only where no record exists yet (other nodes may write meanwhile).
    const rest = this.#seedRest;
    for (let next = rest[0]; next !== undefined; next = rest[0]) {
      const [key, value] = next;
      await registry(() =>
        client
          .if(key, 'Create', '==', 0)
          .then(client.put(key).value(value), client.put(KEYS.securityVersion).value(this.#versionValue()))
          .options(deadline())
          .commit(),
      );
      rest.shift();
    }
    this.#seeded = true;
    return won;
  }

  #versionValue(): string {
    return JSON.stringify({ node: this.#node, at: new Date().toISOString() });
  }

  /**
   * Commits `ops` guarded by the version key's mod_revision (`undefined` = no policy yet). More
   * operations than one transaction takes go in batches, each guarded by the revision the previous
   * one wrote; false when another writer came first (the caller re-reads and decides again, so a
   * broken-off sequence is completed from the newer policy).
   */
  async #commitInBatches(version: string | undefined, ops: readonly IOperation[]): Promise<boolean> {
    const client = this.#client;
    let guardRevision = version;
    for (let start = 0; start < ops.length; start += SEED_BATCH) {
      const guard =
        guardRevision === undefined
          ? client.if(KEYS.securityVersion, 'Create', '==', 0)
          : client.if(KEYS.securityVersion, 'Mod', '==', guardRevision);
      const batch = ops.slice(start, start + SEED_BATCH);
      const result = await registry(() =>
        guard
          .then(...batch, client.put(KEYS.securityVersion).value(this.#versionValue()))
          .options(deadline())
          .commit(),
      );
      if (!result.succeeded) return false;
      guardRevision = result.header.revision;
    }
    return true;
  }
}

/** Keeps the store on the shared policy: seeding, then re-lists on every watch event and periodically. */
class RegistrySecuritySync implements SecuritySync {
  readonly #options: SecuritySyncOptions;
  readonly #store: PolicyStore;
  readonly #log: Log;
  readonly #policy: RegistryPolicy;
  readonly #ready: Promise<void>;
  #resolveReady: () => void = () => undefined;
  readonly #stop = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #closed = false;
  #watcher: Watcher | undefined;
  #seedsAdded = false;
  // One re-list at a time; a request during one runs one more after it.
  #running: Promise<void> | undefined;
  #again = false;
  // One establishing loop at a time (a cancelled watch may ask for one while another runs).
  #establishing: Promise<void> | undefined;

  constructor(options: SecuritySyncOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#log = options.log ?? ((): void => undefined);
    this.#ready = new Promise<void>((resolve) => (this.#resolveReady = resolve));
    this.#policy = new RegistryPolicy(
      options.client,
      options.node,
      this.#log,
      this.#ready,
      this.#stop.signal,
    );
    this.#store.useAuthority(this.#policy, { warn: (message, fields) => this.#log('warn', message, fields) });
    void this.#start();
    this.#timer = setInterval(this.#resyncQuietly, options.relistMs ?? 30_000);
    this.#timer.unref();
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  resync(): Promise<void> {
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#store.adopt(async () => (await this.#policy.read()).document);
        } while (this.#again && !this.#closed);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#stop.abort();
    clearInterval(this.#timer);
    await this.#watcher?.cancel().catch(() => undefined);
    this.#watcher = undefined;
    await this.#running?.catch(() => undefined);
  }

  readonly #resyncQuietly = (): void => {
    if (this.#closed || !this.#policy.seeded) return;
    this.resync().catch((error: unknown) =>
      this.#log('warn', 'security re-list failed; retried on the next event', {
        error: (error as Error).message,
      }),
    );
  };

  async #watch(): Promise<void> {
    if (this.#watcher !== undefined) return;
    const client = this.#options.watchClient ?? this.#options.client;
    const created = await client.watch().prefix(KEYS.securityPrefix).create();
    if (this.#closed) {
      await created.cancel();
      return;
    }
    this.#watcher = created;
    created.on('data', this.#resyncQuietly);
    created.on('connected', this.#resyncQuietly);
    created.on('error', (error) => {
      // Cancelled by etcd (e.g. its revision was compacted): re-list and watch again.
      this.#log('warn', 'security watch cancelled; re-listing', { error: error.message });
      // etcd cancelled it already: never cancelled again (etcd3 1.1.2 throws on the gRPC stream).
      if (this.#watcher === created) this.#watcher = undefined;
      if (!this.#closed) void this.#start();
    });
  }

  #start(): Promise<void> {
    this.#establishing ??= this.#establish().finally(() => (this.#establishing = undefined));
    return this.#establishing;
  }

  async #establish(): Promise<void> {
    const node = this.#options.node;
    for (let wait = RETRY_MIN_MS; !this.#closed; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
      try {
        if (!this.#policy.seeded) {
          if (await this.#policy.seed(() => this.#store.document()))
            this.#log('info', 'registry security seeded from this node', { node });
        }
        if (!this.#seedsAdded) {
          await this.#store.addSeedPrincipals();
          this.#seedsAdded = true;
        }
        await this.resync();
        await this.#watch();
        // Changes between the re-list and the watch's start are caught by this second re-list.
        await this.resync();
        this.#resolveReady();
        return;
      } catch (error) {
        this.#log('warn', 'security sync not established; retrying', { error: (error as Error).message });
        await delay(wait, undefined, { signal: this.#stop.signal }).catch(() => undefined);
      }
    }
  }
}

export function startSecuritySync(options: SecuritySyncOptions): SecuritySync {
  return new RegistrySecuritySync(options);
}
