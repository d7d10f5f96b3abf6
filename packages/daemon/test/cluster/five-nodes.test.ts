// Five real svcd nodes: the leader is killed twice in a row; each time exactly one new leader takes
// over, and at no moment (every topology read while it happens) are more replicas placed than the
// task's replication.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostTopologySchema, KEYS, parseRecord, type ClusterTask } from '../../src/cluster/records.ts';
import { startCluster, type TestCluster } from './harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

const task: ClusterTask = {
  replication: 3,
  port: 0,
  memoryMB: 1,
  condition: {},
  content: { name: 'r3', command: 'sleep 300' },
};

describe('five nodes, two leader kills', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({
      nodes: ['f1', 'f2', 'f3', 'f4', 'f5'].map((host) => ({ host })),
      ttlSeconds: 3,
    });
    await cluster.waitForReports(['f1', 'f2', 'f3', 'f4', 'f5'], 60_000);
  }, 180_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('one new leader each time; never more replicas than replication', async () => {
    const placed = async (): Promise<string[]> => {
      const hosts: string[] = [];
      for (const [key, value] of Object.entries(await cluster.list(KEYS.topologyPrefix)))
        if (parseRecord(HostTopologySchema, value)?.some((entry) => entry.app === 'r3'))
          hosts.push(key.slice(KEYS.topologyPrefix.length));
      return hosts;
    };
    let most = 0;
    let watching = true;
    // Every topology state while the faults happen (one revision per read).
    const watcher = (async () => {
      while (watching) {
        most = Math.max(most, (await placed()).length);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      await cluster.registry.put(KEYS.task('r3')).value(JSON.stringify(task));
      const killed: string[] = [];
      for (let round = 0; round < 2; round++) {
        const leader = await cluster.waitForLeader({ timeoutMs: 30_000 });
        await waitFor(
          async () => {
            const hosts = await placed();
            return hosts.length === 3 && hosts.every((host) => !killed.includes(host));
          },
          { timeoutMs: 30_000, intervalMs: 50, what: `r3 x3 on live nodes (round ${round})` },
        );
        await cluster.node(leader).kill();
        killed.push(leader);
        const next = await cluster.waitForLeader({ not: leader, timeoutMs: 30_000 });
        expect(killed).not.toContain(next);
        const claims = Object.entries(await cluster.nodeReports()).filter(([, report]) => report.leader);
        expect(claims.map(([host]) => host)).toEqual([next]);
      }
      const settled = await waitFor(
        async () => {
          const hosts = await placed();
          return hosts.length === 3 && hosts.every((host) => !killed.includes(host)) ? hosts : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 50, what: 'r3 x3 on the three live nodes' },
      );
      expect(settled.sort()).toEqual(['f1', 'f2', 'f3', 'f4', 'f5'].filter((host) => !killed.includes(host)));
    } finally {
      watching = false;
      await watcher;
    }
    expect(most).toBe(3);
  }, 150_000);
});
