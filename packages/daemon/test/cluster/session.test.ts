// The registry session against a real etcd: owned keys live on the session's lease, vanish when it
// is revoked, and are written again on a new lease after etcd loses the old one.
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type TestEtcd } from '@svc/testkit';
import { openRegistrySession } from '../../src/cluster/session.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('registry session', () => {
  let etcd: TestEtcd;
  let reader: Etcd3;
  beforeAll(async () => {
    etcd = await startEtcd();
    reader = new Etcd3({ hosts: etcd.url });
  });
  afterAll(async () => {
    reader.close();
    await etcd.close();
  });

  it('writes owned keys on its lease and removes them when closed', async () => {
    const session = await openRegistrySession({ urls: [etcd.url], ttlSeconds: 5 });
    await session.putOwned('svc/test/a', 'one');
    expect(await reader.get('svc/test/a').string()).toBe('one');
    const lease = session.leaseId();
    expect(lease).toMatch(/^\d+$/);
    await session.close();
    expect(await reader.get('svc/test/a').string()).toBeNull();
  });

  it('re-writes owned keys on a new lease after the old one is revoked behind its back', async () => {
    const session = await openRegistrySession({ urls: [etcd.url], ttlSeconds: 2 });
    try {
      await session.putOwned('svc/test/b', 'two');
      const first = session.leaseId()!;
      const renewed = new Promise<string>((resolve) => session.onLease(resolve));
      // Revoke the session's lease on etcd's side (as an expiry would), through etcd's HTTP gateway.
      const revoked = await fetch(`${etcd.url}/v3/lease/revoke`, {
        method: 'POST',
        body: JSON.stringify({ ID: first }),
      });
      expect(revoked.status).toBe(200);
      expect(await reader.get('svc/test/b').string()).toBeNull();
      const second = await renewed;
      expect(second).not.toBe(first);
      await waitFor(async () => (await reader.get('svc/test/b').string()) === 'two', { timeoutMs: 15_000 });
    } finally {
      await session.close();
    }
  }, 30_000);

  it('never throws on writes or deletes while etcd is down, and applies them when it is back', async () => {
    const own = await startEtcd();
    const ownReader = new Etcd3({ hosts: own.url });
    const session = await openRegistrySession({ urls: [own.url], ttlSeconds: 3 });
    try {
      await session.putOwned('svc/test/gone', 'soon');
      await own.stop('SIGKILL');
      await expect(session.putOwned('svc/test/late', 'written')).resolves.toBeUndefined();
      await expect(session.deleteOwned('svc/test/gone')).resolves.toBeUndefined();
      await own.start();
      await waitFor(
        async () =>
          (await ownReader.get('svc/test/late').string()) === 'written' &&
          (await ownReader.get('svc/test/gone').string()) === null,
        { timeoutMs: 20_000, intervalMs: 50, what: 'the late write and the delete applied' },
      );
    } finally {
      await session.close();
      ownReader.close();
      await own.close();
    }
  }, 40_000);
});
