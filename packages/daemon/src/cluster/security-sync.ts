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

export function startSecuritySync(options: SecuritySyncOptions): SecuritySync {
  const { client, store, node } = options;
  const log = options.log ?? ((): void => undefined);
  let closed = false;
  let watcher: Watcher | undefined;
  let resolveReady: () => void = () => undefined;
  const readyPromise = new Promise<void>((resolve) => (resolveReady = resolve));
  let seeded = false;
  let seedsAdded = false;
  const stop = new AbortController();

  const read = async (): Promise<SharedPolicy> => {
    const response = await registry(() =>
      client.getAll().prefix(KEYS.securityPrefix).options(deadline()).exec(),
    );
    return policyFromKeyValues(response.kvs, (where, problem) =>
      log('warn', 'invalid security record in the registry ignored', { key: where, problem }),
    );
  };

  const versionValue = (): string => JSON.stringify({ node, at: new Date().toISOString() });

  /**
   * Commits `ops` guarded by the version key's mod_revision (`undefined` = no policy yet). More
   * operations than one transaction takes go in batches, each guarded by the revision the previous
   * one wrote; false when another writer came first (the caller re-reads and decides again, so a
   * broken-off sequence is completed from the newer policy).
   */
  const commitInBatches = async (
    version: string | undefined,
    ops: readonly IOperation[],
  ): Promise<boolean> => {
    let guardRevision = version;
    for (let start = 0; start < ops.length; start += SEED_BATCH) {
      const guard =
        guardRevision === undefined
          ? client.if(KEYS.securityVersion, 'Create', '==', 0)
          : client.if(KEYS.securityVersion, 'Mod', '==', guardRevision);
      const batch = ops.slice(start, start + SEED_BATCH);
      const result = await registry(() =>
        guard
          .then(...batch, client.put(KEYS.securityVersion).value(versionValue()))
          .options(deadline())
          .commit(),
      );
      if (!result.succeeded) return false;
      guardRevision = result.header.revision;
    }
    return true;
  };

  const authority: PolicyAuthority = {
    async update(change) {
      if (!seeded) {
        await Promise.race([
          readyPromise,
          delay(READY_WAIT_MS, undefined, { signal: stop.signal }).catch(() => undefined),
        ]);
        if (!seeded) throw unavailable(new Error('the shared policy is not loaded yet'));
      }
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const shared = await read();
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
        if (await commitInBatches(shared.version, ops)) return next;
        await delay(RETRY_MIN_MS * Math.random());
      }
      throw new SvcError('conflict', 'the shared policy kept changing during this change; try again');
    },
  };

  /** Records still to write after this node won the seeding (kept across retries). */
  let seedRest: [string, string][] | undefined;
  /** Writes this node's policy into etcd unless etcd already has one; whether it did. */
  const seed = async (): Promise<boolean> => {
    let won = seedRest !== undefined && seedRest.length > 0;
    if (seedRest === undefined) {
      const records = [...recordsOf(store.document())];
      const first = records.slice(0, SEED_BATCH);
      const created = await registry(() =>
        client
          .if(KEYS.securityVersion, 'Create', '==', 0)
          .then(
            ...first.map(([key, value]) => client.put(key).value(value)),
            client.put(KEYS.securityVersion).value(versionValue()),
          )
          .options(deadline())
          .commit(),
      );
      won = created.succeeded;
      seedRest = won ? records.slice(SEED_BATCH) : [];
    }
    // The rest one by one, each only where no record exists yet (other nodes may write meanwhile).
    for (let next = seedRest[0]; next !== undefined; next = seedRest[0]) {
      const [key, value] = next;
      await registry(() =>
        client
          .if(key, 'Create', '==', 0)
          .then(client.put(key).value(value), client.put(KEYS.securityVersion).value(versionValue()))
          .options(deadline())
          .commit(),
      );
      seedRest.shift();
    }
    return won;
  };

  // One re-list at a time; a request during one runs one more after it.
  let running: Promise<void> | undefined;
  let again = false;
  const relistOnce = (): Promise<void> => store.adopt(async () => (await read()).document);
  const resync = (): Promise<void> => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await relistOnce();
        } while (again && !closed);
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  const resyncQuietly = (): void => {
    if (closed || !seeded) return;
    resync().catch((error: unknown) =>
      log('warn', 'security re-list failed; retried on the next event', { error: (error as Error).message }),
    );
  };

  const watch = async (): Promise<void> => {
    if (watcher !== undefined) return;
    const created = await (options.watchClient ?? client).watch().prefix(KEYS.securityPrefix).create();
    if (closed) {
      await created.cancel();
      return;
    }
    watcher = created;
    created.on('data', resyncQuietly);
    created.on('connected', resyncQuietly);
    created.on('error', (error) => {
      // Cancelled by etcd (e.g. its revision was compacted): re-list and watch again.
      log('warn', 'security watch cancelled; re-listing', { error: error.message });
      // etcd cancelled it already: never cancelled again (etcd3 1.1.2 throws on the gRPC stream).
      if (watcher === created) watcher = undefined;
      if (!closed) void start();
    });
  };

  // One establishing loop at a time (a cancelled watch may ask for one while another runs).
  let establishing: Promise<void> | undefined;
  const start = (): Promise<void> => {
    establishing ??= establish().finally(() => (establishing = undefined));
    return establishing;
  };
  const establish = async (): Promise<void> => {
    for (let wait = RETRY_MIN_MS; !closed; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
      try {
        if (!seeded) {
          if (await seed()) log('info', 'registry security seeded from this node', { node });
          seeded = true;
        }
        if (!seedsAdded) {
          await store.addSeedPrincipals();
          seedsAdded = true;
        }
        await resync();
        await watch();
        // Changes between the re-list and the watch's start are caught by this second re-list.
        await resync();
        resolveReady();
        return;
      } catch (error) {
        log('warn', 'security sync not established; retrying', { error: (error as Error).message });
        await delay(wait, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    }
  };

  store.useAuthority(authority, { warn: (message, fields) => log('warn', message, fields) });
  void start();
  const timer = setInterval(resyncQuietly, options.relistMs ?? 30_000);
  timer.unref();

  return {
    ready: () => readyPromise,
    resync,
    async close() {
      closed = true;
      stop.abort();
      clearInterval(timer);
      await watcher?.cancel().catch(() => undefined);
      watcher = undefined;
      await running?.catch(() => undefined);
    },
  };
}
