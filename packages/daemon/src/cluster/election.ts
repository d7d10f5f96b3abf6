// The leader election among IsMainNode nodes (spec "Cluster-mode behavior" 3; CONTRACT §9), etcd's
// own election algorithm (the Go client's concurrency.Election) run on the node's registry session
// lease, so that leadership, the node report and the service records live and die together:
//
//   1. put `svc/cluster/leader/<lease id hex>` = host name on the session lease, if absent;
//      its create_revision is this campaign's revision;
//   2. the leader is the key with the lowest create_revision: wait until every key created
//      before ours is deleted (a watch per predecessor);
//   3. elected. Every topology write of the leader is fenced by `fence()`: a transaction that
//      compares our key's create_revision, so a deposed leader can never write.
//
// The leader steps down (and campaigns again) when the session says its lease is about to expire
// (`session.alive()` false: keepalives unanswered for ¾ of the TTL, before etcd can expire the
// lease and elect someone else), when the session's lease changes, or when a fenced write fails.
// etcd3's own `Election` is not used: it grants a second lease per campaign and observes the
// leader unreliably.
import type { Watcher } from 'etcd3';
import { KEYS } from './records.ts';
import type { RegistrySession } from './session.ts';

export interface Fence {
  /** Our election key. */
  key: string;
  /** Its create_revision (decimal). */
  createRevision: string;
}

export interface ElectionOptions {
  session: RegistrySession;
  /** The campaign value: this node's host name. */
  value: string;
  log: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  /** Called once per term when this node becomes the leader. */
  onElected: (fence: Fence) => void;
  /** Called once per term when this node stops being the leader (for whatever reason). */
  onDeposed: (reason: string) => void;
  /** Retry delay after an error (default 500 ms). */
  retryMs?: number;
}

export interface Election {
  /** The fence of the current term, or undefined when not leading. */
  fence(): Fence | undefined;
  leading(): boolean;
  /** The leader's fenced write failed (another node leads): step down and campaign again. */
  deposed(reason: string): void;
  /** Steps down and resigns (deletes the election key), for a clean stop. */
  stop(): Promise<void>;
}

/** The election key of a lease: `svc/cluster/leader/<lease id in hex>`, as etcd's Go client names it. */
export function electionKey(leaseId: string): string {
  return `${KEYS.leader}/${BigInt(leaseId).toString(16)}`;
}

class Cancelled extends Error {}

export function startElection(options: ElectionOptions): Election {
  const { session, log } = options;
  const client = session.client;
  /** The election's watches run on a client of their own (session.watchClient()). */
  const watchClient = session.watchClient();
  const retryMs = options.retryMs ?? 500;
  let term: Fence | undefined;
  let stopped = false;
  /** Bumped on every reason to start over; an attempt of an older generation gives up. */
  let generation = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  const watchers = new Set<Watcher>();
  /** Rejections of the pending predecessor waits, called when the attempt is abandoned. */
  const waits = new Set<(error: Error) => void>();

  const abandonWaits = (): void => {
    for (const reject of waits) reject(new Cancelled());
    waits.clear();
    for (const watcher of watchers) void watcher.cancel().catch(() => undefined);
    watchers.clear();
  };

  const stepDown = (reason: string): void => {
    if (term === undefined) return;
    term = undefined;
    log('warn', 'stepped down as cluster leader', { reason });
    options.onDeposed(reason);
  };

  const restart = (reason: string): void => {
    generation++;
    stepDown(reason);
    abandonWaits();
    scheduleCampaign(0);
  };

  const scheduleCampaign = (delayMs: number): void => {
    if (stopped) return;
    if (retryTimer !== undefined) clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void campaign(generation);
    }, delayMs);
    retryTimer.unref();
  };

  const check = (mine: number): void => {
    if (stopped || mine !== generation) throw new Cancelled();
  };

  /** Resolves when `key` is deleted (watched from `fromRevision` on), or rejects when cancelled. */
  const waitForDelete = async (key: string, fromRevision: string, mine: number): Promise<void> => {
    const watcher = await watchClient.watch().key(key).startRevision(fromRevision).only('delete').create();
    watchers.add(watcher);
    // A watcher etcd cancelled (an error) is never cancelled again: etcd3 1.1.2 throws on its gRPC
    // stream for the answer to a cancel of a watcher it no longer knows.
    let failed = false;
    try {
      check(mine);
      await new Promise<void>((resolve, reject) => {
        waits.add(reject);
        watcher.once('delete', () => resolve());
        watcher.once('error', (error: Error) => {
          failed = true;
          reject(error);
        });
        watcher.once('end', () => reject(new Cancelled()));
      });
    } finally {
      watchers.delete(watcher);
      if (!failed) await watcher.cancel().catch(() => undefined);
    }
  };

  const campaign = async (mine: number): Promise<void> => {
    try {
      const leaseId = session.leaseId();
      if (leaseId === undefined || !session.alive()) {
        scheduleCampaign(retryMs); // the session is (re)connecting
        return;
      }
      const key = electionKey(leaseId);
      const result = await client
        .if(key, 'Create', '==', 0)
        .then(client.put(key).value(options.value).lease(leaseId))
        .else(client.get(key))
        .commit();
      check(mine);
      const createRevision = result.succeeded
        ? result.header.revision
        : result.responses[0]?.response_range.kvs[0]?.create_revision;
      if (createRevision === undefined) throw new Error('the election key vanished');
      for (;;) {
        const before = await client
          .getAll()
          .prefix(`${KEYS.leader}/`)
          .maxCreateRevision(String(BigInt(createRevision) - 1n))
          .sort('Create', 'Descend')
          .limit(1)
          .exec();
        check(mine);
        const predecessor = before.kvs[0];
        if (predecessor === undefined) break;
        await waitForDelete(predecessor.key.toString(), String(BigInt(before.header.revision) + 1n), mine);
        check(mine);
      }
      // Our own key may have gone while we waited (lease lost): never lead without it.
      const own = await client.get(key).exec();
      check(mine);
      if (own.kvs[0]?.create_revision !== createRevision || !session.alive()) {
        scheduleCampaign(retryMs);
        return;
      }
      term = { key, createRevision };
      log('info', 'elected cluster leader', { key, revision: createRevision });
      options.onElected(term);
    } catch (error) {
      if (error instanceof Cancelled) return;
      if (mine !== generation || stopped) return;
      log('warn', 'cluster election attempt failed; retrying', {
        error: error instanceof Error ? error.message : String(error),
      });
      scheduleCampaign(retryMs);
    }
  };

  const offDown = session.onDown(() =>
    restart('the registry lease is about to expire (keepalives unanswered)'),
  );
  const offLease = session.onLease(() => restart('the registry session has a new lease'));
  scheduleCampaign(0);

  return {
    fence: () => term,
    leading: () => term !== undefined,
    deposed: (reason) => restart(reason),
    async stop() {
      stopped = true;
      generation++;
      offDown();
      offLease();
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      const last = term;
      stepDown('stopping');
      abandonWaits();
      if (last !== undefined)
        await client
          .delete()
          .key(last.key)
          .catch(() => undefined);
    },
  };
}
