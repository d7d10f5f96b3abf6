// The session's lease estimate, the election and the fence against a real etcd, in process (no
// svcd): one leader among candidates, the next one takes over when the leader's lease is revoked,
// a deposed leader's fenced topology write fails and ends its loop, and the session reports
// "down" within ¾ TTL of etcd going away (before etcd could expire the lease).
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type TestEtcd } from '@svc/testkit';
import { startElection, type Election, type Fence } from '../../src/cluster/election.ts';
import { startLeaderLoop } from '../../src/cluster/leader.ts';
import { KEYS } from '../../src/cluster/records.ts';
import { openRegistrySession, type RegistrySession } from '../../src/cluster/session.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startTcpProxy } from './tcp-proxy.ts';

const quiet = (): void => undefined;

interface Candidate {
  host: string;
  session: RegistrySession;
  election: Election;
  terms: Fence[];
  deposed: string[];
}

async function candidate(etcd: TestEtcd, host: string, ttlSeconds = 3): Promise<Candidate> {
  const session = await openRegistrySession({ urls: [etcd.url], ttlSeconds });
  const terms: Fence[] = [];
  const deposed: string[] = [];
  const election = startElection({
    session,
    value: host,
    log: quiet,
    onElected: (fence) => terms.push(fence),
    onDeposed: (reason) => deposed.push(reason),
    retryMs: 100,
  });
  return { host, session, election, terms, deposed };
}

async function revoke(etcd: TestEtcd, leaseId: string): Promise<void> {
  const response = await fetch(`${etcd.url}/v3/lease/revoke`, {
    method: 'POST',
    body: JSON.stringify({ ID: leaseId }),
  });
  expect(response.status).toBe(200);
}

describe('election and fencing', () => {
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

  it('elects one of several candidates; the next in line takes over when the leader lease is revoked', async () => {
    const all = [await candidate(etcd, 'c1'), await candidate(etcd, 'c2'), await candidate(etcd, 'c3')];
    try {
      const leader = await waitFor(() => all.find((c) => c.election.leading()), { what: 'a leader' });
      expect(all.filter((c) => c.election.leading())).toHaveLength(1);
      expect(leader.host).toBe('c1'); // the first campaign has the lowest create revision
      await revoke(etcd, leader.session.leaseId()!);
      const next = await waitFor(() => all.find((c) => c !== leader && c.election.leading()), {
        timeoutMs: 10_000,
        what: 'the next leader',
      });
      expect(next.host).toBe('c2');
      // The old leader noticed (its session got a new lease) and is a candidate again, not a leader.
      await waitFor(() => leader.deposed.length > 0, { timeoutMs: 10_000, what: 'c1 deposed' });
      expect(leader.election.leading()).toBe(false);
      expect(all.filter((c) => c.election.leading())).toHaveLength(1);
    } finally {
      for (const c of all) {
        await c.election.stop();
        await c.session.close();
      }
    }
  }, 30_000);

  it('a leader whose election key is gone cannot write the topology: the fenced pass fails and ends the term', async () => {
    const a = await candidate(etcd, 'fence-a');
    try {
      await waitFor(() => a.election.leading(), { what: 'fence-a leading' });
      const fence = a.election.fence()!;
      // Depose it behind its back: delete its election key (as an expiry would).
      await reader.delete().key(fence.key);
      const deposed: string[] = [];
      await reader.put(KEYS.task('fenced')).value(
        JSON.stringify({
          replication: 1,
          port: 0,
          memoryMB: 0,
          condition: {},
          content: { name: 'fenced' },
        }),
      );
      await reader.put(KEYS.node('w1')).value(
        JSON.stringify({
          svc: 'https://127.0.0.1:1',
          label: { HOST_NAME: 'w1', arch: 'x86_64', os_version: 't', WORKER: 'true' },
          leader: false,
          resource: { cpu_cores: 1, mem_total_bytes: 1024 ** 3 },
        }),
      );
      const loop = startLeaderLoop({
        client: a.session.client,
        fence,
        log: quiet,
        onDeposed: (reason) => {
          deposed.push(reason);
          a.election.deposed(reason); // as cluster.ts does: end the term, campaign again
        },
      });
      try {
        await loop.pass();
        expect(deposed).toHaveLength(1);
        expect(await reader.get(KEYS.topology('w1')).string()).toBeNull();
      } finally {
        await loop.stop();
      }
      // Campaigning again gives a new key and a new term; with that fence the same pass writes.
      const live = await waitFor(
        () => a.election.fence()?.createRevision !== fence.createRevision && a.election.fence(),
        {
          timeoutMs: 10_000,
          what: 'a new term',
        },
      );
      expect(a.deposed).toHaveLength(1);
      const written = startLeaderLoop({
        client: a.session.client,
        fence: live,
        log: quiet,
        onDeposed: quiet,
      });
      await written.pass();
      await written.stop();
      expect(JSON.parse((await reader.get(KEYS.topology('w1')).string())!)).toEqual([
        { app: 'fenced', schedule_time: expect.stringMatching(/\+00$/) as unknown },
      ]);
    } finally {
      await reader.delete().prefix('svc/cluster/');
      await a.election.stop();
      await a.session.close();
    }
  }, 30_000);

  it('the session says down within ¾ TTL of losing etcd, before etcd could expire the lease', async () => {
    const own = await startEtcd();
    const session = await openRegistrySession({ urls: [own.url], ttlSeconds: 2 });
    try {
      expect(session.alive()).toBe(true);
      const down = new Promise<number>((resolve) => session.onDown(() => resolve(Date.now())));
      const killedAt = Date.now();
      await own.stop('SIGKILL');
      const downAt = await down;
      expect(session.alive()).toBe(false);
      expect(downAt - killedAt).toBeLessThan(2_000 * 0.75 + 250);
    } finally {
      await session.close();
      await own.close();
    }
  }, 30_000);

  // The watch resumes from a compacted revision: etcd cancels it, the loop watches again and
  // re-lists ("cluster watch ended; watching again"). Asserted by the outcome only: with no periodic
  // pass, the task written while the leader was cut off is placed only if the loop recovered.
  it('a change made while the leader was cut off and compacted away is placed when it reconnects', async () => {
    const proxy = await startTcpProxy(etcd.clientPort);
    const session = await openRegistrySession({ urls: [proxy.url], ttlSeconds: 10 });
    const messages: string[] = [];
    const election = startElection({
      session,
      value: 'compact-a',
      log: quiet,
      onElected: quiet,
      onDeposed: quiet,
    });
    const node = (host: string): string =>
      JSON.stringify({
        svc: 'https://127.0.0.1:1',
        label: { HOST_NAME: host, arch: 'x86_64', os_version: 't', WORKER: 'true' },
        leader: false,
        resource: { cpu_cores: 1, mem_total_bytes: 1024 ** 3 },
      });
    const task = (name: string): string =>
      JSON.stringify({ replication: 1, port: 0, memoryMB: 0, condition: {}, content: { name } });
    try {
      await waitFor(() => election.leading(), { what: 'compact-a leading' });
      await reader.put(KEYS.node('cw1')).value(node('cw1'));
      const loop = startLeaderLoop({
        client: session.client,
        fence: election.fence()!,
        log: (_level, message) => messages.push(message),
        onDeposed: quiet,
        debounceMs: 10,
        periodicMs: 3_600_000, // no periodic pass: only the watch can trigger one
      });
      try {
        await reader.put(KEYS.task('before-cut')).value(task('before-cut'));
        await waitFor(async () => (await reader.get(KEYS.topology('cw1')).string())?.includes('before-cut'), {
          what: 'before-cut placed through the watch',
        });
        proxy.cut();
        // While the leader is cut off: changes, then a compaction past them.
        await reader.put(KEYS.task('during-cut')).value(task('during-cut'));
        for (let i = 0; i < 5; i++) await reader.put('svc/cluster/noise').value(String(i));
        const head = (await reader.get('svc/cluster/noise').exec()).header.revision;
        await reader.kv.compact({ revision: head, physical: true });
        proxy.heal();
        await waitFor(async () => (await reader.get(KEYS.topology('cw1')).string())?.includes('during-cut'), {
          timeoutMs: 30_000,
          intervalMs: 50,
          what: 'during-cut placed after the compacted watch was replaced',
        });
        expect(messages).toContain('topology written');
      } finally {
        await loop.stop();
      }
    } finally {
      await reader.delete().prefix('svc/cluster/');
      await election.stop();
      await session.close();
      await proxy.close();
    }
  }, 60_000);

  it('a new term leaves placements on hosts without a report alone for its grace, then moves them', async () => {
    const a = await candidate(etcd, 'grace-a');
    const report = (host: string): string =>
      JSON.stringify({
        svc: 'https://127.0.0.1:1',
        label: { HOST_NAME: host, arch: 'x86_64', os_version: 't', WORKER: 'true' },
        leader: false,
        resource: { cpu_cores: 1, mem_total_bytes: 1024 ** 3 },
      });
    try {
      await waitFor(() => a.election.leading(), { what: 'grace-a leading' });
      await reader
        .put(KEYS.task('kept'))
        .value(
          JSON.stringify({ replication: 1, port: 0, memoryMB: 0, condition: {}, content: { name: 'kept' } }),
        );
      await reader.put(KEYS.node('gw1')).value(report('gw1'));
      // Placed on a host that has not (re-)registered yet.
      const entries = JSON.stringify([{ app: 'kept', schedule_time: '2026-01-01 00:00:00+00' }]);
      await reader.put(KEYS.topology('slow-host')).value(entries);
      const startedAt = Date.now();
      const loop = startLeaderLoop({
        client: a.session.client,
        fence: a.election.fence()!,
        log: quiet,
        onDeposed: quiet,
        graceMs: 1_500,
        periodicMs: 3_600_000,
      });
      try {
        await loop.pass();
        expect(await reader.get(KEYS.topology('slow-host')).string()).toBe(entries);
        expect(await reader.get(KEYS.topology('gw1')).string()).toBeNull();
        await waitFor(async () => (await reader.get(KEYS.topology('gw1')).string())?.includes('kept'), {
          timeoutMs: 10_000,
          intervalMs: 20,
          what: 'kept moved to gw1 after the grace',
        });
        expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_500);
        expect(await reader.get(KEYS.topology('slow-host')).string()).toBeNull();
      } finally {
        await loop.stop();
      }
    } finally {
      await reader.delete().prefix('svc/cluster/');
      await a.election.stop();
      await a.session.close();
    }
  }, 30_000);
});
