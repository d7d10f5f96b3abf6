// Election and the leader's scheduling loop with real svcd nodes and a real etcd: exactly one main
// node leads (and only its report says so), tasks written to the registry are placed by the leader
// in the topology, and after a kill -9 of the leader exactly one new leader takes over and never
// more replicas than `replication` are placed once settled.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HostTopologySchema,
  KEYS,
  parseRecord,
  type ClusterTask,
  type Topology,
} from '../../src/cluster/records.ts';
import { startCluster, type TestCluster } from './harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

function task(name: string, replication: number, condition: Record<string, string> = {}): ClusterTask {
  return { replication, port: 0, memoryMB: 1, condition, content: { name, command: 'sleep 300' } };
}

async function topology(cluster: TestCluster): Promise<Topology> {
  const out: Topology = {};
  for (const [key, value] of Object.entries(await cluster.list(KEYS.topologyPrefix))) {
    const entries = parseRecord(HostTopologySchema, value);
    if (entries !== undefined) out[key.slice(KEYS.topologyPrefix.length)] = entries;
  }
  return out;
}

function replicas(topo: Topology, app: string): string[] {
  return Object.entries(topo)
    .filter(([, entries]) => entries.some((entry) => entry.app === app))
    .map(([host]) => host)
    .sort();
}

describe('cluster leader', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({
      nodes: [
        { host: 'lead-a', labels: { zone: 'east' } },
        { host: 'lead-b', labels: { zone: 'west' } },
        { host: 'lead-c', labels: { zone: 'east' } },
        // A worker that never leads.
        { host: 'work-d', main: false, labels: { zone: 'west' } },
      ],
      ttlSeconds: 3,
    });
    await cluster.waitForReports(['lead-a', 'lead-b', 'lead-c', 'work-d']);
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('elects exactly one leader among the main nodes', async () => {
    const leader = await cluster.waitForLeader();
    expect(['lead-a', 'lead-b', 'lead-c']).toContain(leader);
    const reports = await cluster.nodeReports();
    expect(Object.values(reports).filter((report) => report.leader)).toHaveLength(1);
    expect(reports['work-d']!.leader).toBe(false);
    // Every main node campaigns on its session lease; the worker-only node does not.
    const campaigns = await cluster.list(`${KEYS.leader}/`);
    expect(Object.values(campaigns).sort()).toEqual(['lead-a', 'lead-b', 'lead-c']);
  });

  it('places tasks written to the registry: replication kept, conditions honoured', async () => {
    await cluster.registry.put(KEYS.task('web')).value(JSON.stringify(task('web', 2)));
    await cluster.registry
      .put(KEYS.task('east-only'))
      .value(JSON.stringify(task('east-only', 5, { zone: 'east' })));
    const topo = await waitFor(
      async () => {
        const t = await topology(cluster);
        return replicas(t, 'web').length === 2 && replicas(t, 'east-only').length === 2 ? t : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50, what: 'web x2 and east-only x2 placed' },
    );
    expect(replicas(topo, 'east-only')).toEqual(['lead-a', 'lead-c']);
    for (const entries of Object.values(topo))
      for (const entry of entries)
        expect(entry.schedule_time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00$/);
    // replication 0: the task stays defined, nothing placed.
    await cluster.registry.put(KEYS.task('web')).value(JSON.stringify(task('web', 0)));
    await waitFor(async () => replicas(await topology(cluster), 'web').length === 0, {
      timeoutMs: 20_000,
      intervalMs: 50,
      what: 'web removed from the topology',
    });
    expect(await cluster.get(KEYS.task('web'))).toBeDefined();
  });

  it('ignores malformed, oversized and hostile registry values and keeps scheduling', async () => {
    const hostile: [string, string][] = [
      [KEYS.task('not-json'), '{"replication": 1,'],
      [KEYS.task('wrong-shape'), JSON.stringify({ replication: 'many', content: {} })],
      [KEYS.task('negative'), JSON.stringify({ ...task('negative', 1), replication: -1 })],
      [
        KEYS.task('huge'),
        JSON.stringify({ ...task('huge', 1), content: { name: 'huge', pad: 'x'.repeat(1_000_000) } }),
      ],
      [`${KEYS.tasksPrefix}nested/key`, JSON.stringify(task('nested', 1))],
      [KEYS.task('__proto__'), JSON.stringify(task('__proto__', 1))],
      [KEYS.node('ghost'), '<html>'],
      [KEYS.node('liar'), JSON.stringify({ svc: 1, label: [], leader: 'yes', resource: {} })],
      // An unreadable topology key of a host that gets nothing: deleted by the next write.
      [KEYS.topology('garbage-host'), 'not a topology'],
    ];
    for (const [key, value] of hostile) await cluster.registry.put(key).value(value);
    await cluster.registry.put(KEYS.task('after-garbage')).value(JSON.stringify(task('after-garbage', 1)));
    const topo = await waitFor(
      async () => {
        const t = await topology(cluster);
        return replicas(t, 'after-garbage').length === 1 &&
          (await cluster.get(KEYS.topology('garbage-host'))) === undefined
          ? t
          : undefined;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 50,
        what: 'after-garbage placed and the garbage topology key removed',
      },
    );
    const placedApps = new Set(Object.values(topo).flatMap((entries) => entries.map((entry) => entry.app)));
    for (const bad of ['not-json', 'wrong-shape', 'negative', 'nested'])
      expect(placedApps.has(bad)).toBe(false);
    // `__proto__` is a valid app name: placed like any other.
    expect(placedApps.has('__proto__')).toBe(true);
    expect(Object.keys(topo)).not.toContain('ghost');
    expect(Object.keys(topo)).not.toContain('liar');
    // Every node still runs (nothing crashed on the values).
    for (const node of cluster.nodes) expect(node.running()).toBe(true);
    for (const [key] of hostile) await cluster.registry.delete().key(key);
  });

  it('after a kill -9 of the leader, exactly one new leader takes over and keeps replication', async () => {
    await cluster.registry.put(KEYS.task('svc-r3')).value(JSON.stringify(task('svc-r3', 3)));
    await waitFor(async () => replicas(await topology(cluster), 'svc-r3').length === 3, {
      timeoutMs: 20_000,
      intervalMs: 50,
      what: 'svc-r3 x3 placed',
    });
    const old = await cluster.waitForLeader();
    const killedAt = Date.now();
    await cluster.node(old).kill();
    const next = await cluster.waitForLeader({ not: old, timeoutMs: 30_000 });
    const failoverMs = Date.now() - killedAt;
    expect(next).not.toBe(old);
    // Not before the old lease could expire, and within TTL plus a generous margin.
    expect(failoverMs).toBeLessThan(cluster.ttlSeconds * 1000 + 10_000);
    // The dead node's replicas move away; never more than `replication` once settled.
    const settled = await waitFor(
      async () => {
        const t = await topology(cluster);
        const hosts = replicas(t, 'svc-r3');
        // Nothing left on the dead node (it may have held other apps, not svc-r3).
        return hosts.length === 3 && t[old] === undefined ? t : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: `svc-r3 x3 placed and nothing on ${old}` },
    );
    expect(replicas(settled, 'svc-r3')).toHaveLength(3);
    expect(settled[old]).toBeUndefined();
    const reports = await cluster.nodeReports();
    expect(reports[old]).toBeUndefined();
    expect(
      Object.entries(reports)
        .filter(([, r]) => r.leader)
        .map(([h]) => h),
    ).toEqual([next]);
    // The old leader comes back as a follower: the new one keeps leading.
    await cluster.node(old).restart();
    await cluster.waitForReports([old]);
    expect(await cluster.waitForLeader()).toBe(next);
  }, 90_000);
});
