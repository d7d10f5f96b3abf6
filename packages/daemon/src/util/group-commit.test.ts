import { describe, expect, it } from 'vitest';
import { GroupCommitter, type GroupCommitIo } from './group-commit.ts';

interface Deferred {
  resolve(): void;
  reject(error: Error): void;
}

/** Fake I/O: every apply and sync waits until the test settles it; calls are logged in order. */
function fakeIo() {
  const log: string[] = [];
  const applies: { key: string; value: string; done: Deferred }[] = [];
  const syncs: Deferred[] = [];
  const deferred = (): { promise: Promise<void>; done: Deferred } => {
    let done!: Deferred;
    const promise = new Promise<void>((resolve, reject) => (done = { resolve, reject }));
    return { promise, done };
  };
  const io: GroupCommitIo<string> = {
    apply(key, value) {
      log.push(`apply ${key}=${value}`);
      const { promise, done } = deferred();
      applies.push({ key, value, done });
      return promise;
    },
    sync() {
      log.push('sync');
      const { promise, done } = deferred();
      syncs.push(done);
      return promise;
    },
  };
  return { io, log, applies, syncs };
}

/** Let promise callbacks run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** Tracks the outcome of a commit without awaiting it. */
function track(promise: Promise<void>): { state: () => string } {
  let state = 'pending';
  promise.then(
    () => (state = 'durable'),
    (error: Error) => (state = `failed: ${error.message}`),
  );
  return { state: () => state };
}

describe('GroupCommitter', () => {
  it('a lone write applies at once (synchronously) and is durable after one sync', async () => {
    const f = fakeIo();
    const c = new GroupCommitter(f.io);
    const a = track(c.commit('a', '1'));
    expect(f.log).toEqual(['apply a=1']); // issued before commit returned
    f.applies[0]!.done.resolve();
    await settle();
    expect(f.log).toEqual(['apply a=1', 'sync']);
    expect(a.state()).toBe('pending'); // applied is not durable
    f.syncs[0]!.resolve();
    await settle();
    expect(a.state()).toBe('durable');
  });

  it('writes whose applies end while a sync runs share the next sync', async () => {
    const f = fakeIo();
    const c = new GroupCommitter(f.io);
    const a = track(c.commit('a', '1'));
    f.applies[0]!.done.resolve();
    await settle();
    const others = ['b', 'c', 'd'].map((k) => track(c.commit(k, '1')));
    for (const x of f.applies.slice(1)) x.done.resolve();
    await settle();
    // One sync running (started before b, c, d were applied), one more queued for all three.
    expect(f.log.filter((l) => l === 'sync')).toHaveLength(1);
    f.syncs[0]!.resolve();
    await settle();
    expect(a.state()).toBe('durable');
    expect(others.map((o) => o.state())).toEqual(['pending', 'pending', 'pending']);
    expect(f.log.filter((l) => l === 'sync')).toHaveLength(2);
    f.syncs[1]!.resolve();
    await settle();
    expect(others.map((o) => o.state())).toEqual(['durable', 'durable', 'durable']);
    expect(f.syncs).toHaveLength(2); // 4 writes, 2 directory syncs
  });

  it('a write is never answered by a sync that started before its apply ended', async () => {
    const f = fakeIo();
    const c = new GroupCommitter(f.io);
    track(c.commit('a', '1'));
    f.applies[0]!.done.resolve();
    await settle(); // sync #1 running
    const b = track(c.commit('b', '1'));
    f.syncs[0]!.resolve(); // sync #1 ends while b is still applying
    await settle();
    f.applies[1]!.done.resolve();
    await settle();
    expect(b.state()).toBe('pending');
    expect(f.syncs).toHaveLength(2);
    f.syncs[1]!.resolve();
    await settle();
    expect(b.state()).toBe('durable');
  });

  it('coalesces writes of one key: last value wins, every caller answered by its durable write', async () => {
    const f = fakeIo();
    const c = new GroupCommitter(f.io);
    const v1 = track(c.commit('a', '1'));
    const v2 = track(c.commit('a', '2'));
    const v3 = track(c.commit('a', '3'));
    expect(f.log).toEqual(['apply a=1']); // one apply per key at a time
    f.applies[0]!.done.resolve();
    await settle();
    expect(f.log).toEqual(['apply a=1', 'apply a=3', 'sync']); // 2 was replaced by 3
    f.syncs[0]!.resolve();
    await settle();
    expect(v1.state()).toBe('durable');
    expect([v2.state(), v3.state()]).toEqual(['pending', 'pending']); // 3 applied after sync #1 started
    f.applies[1]!.done.resolve();
    await settle();
    f.syncs[1]!.resolve();
    await settle();
    expect([v2.state(), v3.state()]).toEqual(['durable', 'durable']);
  });

  it('an apply error goes to the callers of that write alone; the key stays usable', async () => {
    const f = fakeIo();
    const c = new GroupCommitter(f.io);
    const a1 = track(c.commit('a', '1'));
    const b = track(c.commit('b', '1'));
    const a2 = track(c.commit('a', '2'));
    f.applies[0]!.done.reject(new Error('EIO a=1'));
    f.applies[1]!.done.resolve();
    await settle();
    expect(a1.state()).toBe('failed: EIO a=1');
    expect(f.log).toEqual(['apply a=1', 'apply b=1', 'apply a=2', 'sync']);
    f.applies[2]!.done.resolve();
    await settle();
    f.syncs[0]!.resolve();
    await settle();
    expect(b.state()).toBe('durable');
    f.syncs[1]!.resolve();
    await settle();
    expect(a2.state()).toBe('durable');
  });

  it('a sync error goes to every write it covered, and the next sync still runs', async () => {
    const f = fakeIo();
    const c = new GroupCommitter(f.io);
    const a = track(c.commit('a', '1'));
    const b = track(c.commit('b', '1'));
    f.applies[0]!.done.resolve();
    f.applies[1]!.done.resolve();
    await settle();
    expect(f.syncs).toHaveLength(1); // a started it, b queued one behind it
    f.syncs[0]!.reject(new Error('EIO sync'));
    await settle();
    expect(a.state()).toBe('failed: EIO sync');
    expect(b.state()).toBe('pending');
    f.syncs[1]!.resolve();
    await settle();
    expect(b.state()).toBe('durable');
    const later = track(c.commit('c', '1'));
    f.applies[2]!.done.resolve();
    await settle();
    f.syncs[2]!.resolve();
    await settle();
    expect(later.state()).toBe('durable');
  });

  it('an apply or sync that throws synchronously fails its writes instead of the caller', async () => {
    let throwApply = true;
    const c = new GroupCommitter<string>({
      apply() {
        if (throwApply) throw new Error('bad apply');
        return Promise.resolve();
      },
      sync() {
        throw new Error('bad sync');
      },
    });
    await expect(c.commit('a', '1')).rejects.toThrow('bad apply');
    throwApply = false;
    await expect(c.commit('a', '2')).rejects.toThrow('bad sync');
  });

  it('many concurrent writes of many keys: every one answered, syncs far fewer than writes', async () => {
    let syncs = 0;
    const state = new Map<string, string>();
    const durable = new Map<string, string>();
    const c = new GroupCommitter<string>({
      async apply(key, value) {
        await new Promise((r) => setImmediate(r));
        state.set(key, value);
      },
      async sync() {
        syncs++;
        const seen = new Map(state);
        await new Promise((r) => setImmediate(r));
        for (const [k, v] of seen) durable.set(k, v);
      },
    });
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) {
      const key = `k${i % 20}`;
      const value = String(i);
      writes.push(
        c.commit(key, value).then(() => expect(Number(durable.get(key))).toBeGreaterThanOrEqual(i)),
      );
    }
    await Promise.all(writes);
    for (let k = 0; k < 20; k++) expect(durable.get(`k${k}`)).toBe(String(180 + k));
    expect(syncs).toBeLessThan(50);
  });
});
