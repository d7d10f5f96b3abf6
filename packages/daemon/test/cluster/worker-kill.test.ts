// A worker killed with -9: once its lease runs out its node report vanishes, the leader places its
// replicas on another fitting worker within SessionTTL + 2 s of the kill, the surviving replica is
// not moved, and the new replica runs there as a cluster app. Real etcd, real svcd nodes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostTopologySchema, KEYS, parseRecord } from '../../src/cluster/records.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startCluster, type TestCluster } from './harness.ts';

const TTL_SECONDS = 3;

async function placedHosts(cluster: TestCluster, app: string): Promise<string[]> {
  const hosts: string[] = [];
  for (const [key, value] of Object.entries(await cluster.list(KEYS.topologyPrefix)))
    if (parseRecord(HostTopologySchema, value)?.some((entry) => entry.app === app))
      hosts.push(key.slice(KEYS.topologyPrefix.length));
  return hosts.sort();
}

describe('a worker killed with -9', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({
      nodes: [
        { host: 'lead', worker: false },
        { host: 'wk-1', main: false },
        { host: 'wk-2', main: false },
        { host: 'wk-3', main: false },
      ],
      ttlSeconds: TTL_SECONDS,
    });
    await cluster.waitForReports(['lead', 'wk-1', 'wk-2', 'wk-3']);
    await cluster.waitForLeader();
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  const running = async (host: string, app: string): Promise<boolean> => {
    const daemon = cluster.node(host).daemon;
    const r = await daemon.rest().call('GET', `/svc/app/${app}`, { token: await daemon.token('admin') });
    return r.status === 200 && r.json<{ state?: string; cluster?: boolean }>().state === 'running';
  };

  it('has its replicas placed elsewhere within SessionTTL + 2 s, the others left in place', async () => {
    const token = await cluster.node('lead').daemon.token('admin');
    const put = await cluster
      .node('lead')
      .daemon.rest()
      .call('PUT', '/svc/cluster/app/kept', {
        token,
        body: { replication: 2, port: 0, memoryMB: 0, condition: {}, content: { command: 'sleep 600' } },
      });
    expect(put.status, put.text()).toBe(200);
    const before = await waitFor(
      async () => {
        const hosts = await placedHosts(cluster, 'kept');
        return hosts.length === 2 ? hosts : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'two replicas placed' },
    );
    for (const host of before)
      await waitFor(() => running(host, 'kept'), { timeoutMs: 30_000, what: `kept running on ${host}` });

    const [victim, survivor] = before as [string, string];
    const spare = ['wk-1', 'wk-2', 'wk-3'].find((host) => !before.includes(host))!;
    const killedAt = Date.now();
    await cluster.node(victim).kill();
    const after = await waitFor(
      async () => {
        const hosts = await placedHosts(cluster, 'kept');
        return hosts.includes(spare) && !hosts.includes(victim) ? hosts : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 25, what: `kept placed away from ${victim}` },
    );
    const placedMs = Date.now() - killedAt;
    expect(placedMs, `placed elsewhere after ${placedMs} ms`).toBeLessThanOrEqual(TTL_SECONDS * 1000 + 2000);
    expect(after).toEqual([spare, survivor].sort());
    await waitFor(() => running(spare, 'kept'), { timeoutMs: 30_000, what: `kept running on ${spare}` });
    // The survivor's process was never replaced (stable placement).
    expect(await running(survivor, 'kept')).toBe(true);
    // Never more replicas than asked for once settled.
    expect((await placedHosts(cluster, 'kept')).length).toBe(2);
    console.info(`worker kill -9 -> replica placed elsewhere in ${placedMs} ms (TTL ${TTL_SECONDS} s)`);
  });
});
