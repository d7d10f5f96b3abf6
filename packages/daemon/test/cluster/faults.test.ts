// Registry faults with real svcd nodes and a real etcd: a leader partitioned from etcd (through a
// TCP proxy) stops acting as leader before another node is elected; etcd killed with -9 for longer
// than the session TTL and restarted: every node re-registers on a new lease, one leader again,
// tasks and topology intact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostTopologySchema, KEYS, parseRecord, type ClusterTask } from '../../src/cluster/records.ts';
import { startCluster, type TestCluster } from './harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

const task = (name: string, replication: number): ClusterTask => ({
  replication,
  port: 0,
  memoryMB: 1,
  condition: {},
  content: { name, command: 'sleep 300' },
});

/** Times (ms) of the node's log lines with this message (svcd logs JSON lines to stderr in tests). */
function logTimes(stderr: string, message: string): number[] {
  const times: number[] = [];
  for (const line of stderr.split('\n')) {
    if (!line.includes(message)) continue;
    try {
      const parsed = JSON.parse(line) as { time?: string; msg?: string };
      if (parsed.msg === message && parsed.time !== undefined) times.push(Date.parse(parsed.time));
    } catch {
      // not a log line
    }
  }
  return times;
}

async function placedHosts(cluster: TestCluster, app: string): Promise<string[]> {
  const hosts: string[] = [];
  for (const [key, value] of Object.entries(await cluster.list(KEYS.topologyPrefix)))
    if (parseRecord(HostTopologySchema, value)?.some((entry) => entry.app === app))
      hosts.push(key.slice(KEYS.topologyPrefix.length));
  return hosts.sort();
}

async function leaseOf(cluster: TestCluster, key: string): Promise<string | undefined> {
  return (await cluster.registry.get(key).exec()).kvs[0]?.lease;
}

describe('a leader partitioned from etcd', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    // part-a starts first (alone), so it campaigns first and leads.
    cluster = await startCluster({
      nodes: [{ host: 'part-a', viaProxy: true }, { host: 'part-b' }, { host: 'part-c' }],
      ttlSeconds: 3,
    });
    await cluster.waitForReports(['part-a', 'part-b', 'part-c']);
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('stops acting as leader before a new leader is elected, and rejoins as a follower', async () => {
    expect(await cluster.waitForLeader()).toBe('part-a');
    await cluster.registry.put(KEYS.task('p1')).value(JSON.stringify(task('p1', 2)));
    await waitFor(async () => (await placedHosts(cluster, 'p1')).length === 2, {
      timeoutMs: 20_000,
      intervalMs: 50,
      what: 'p1 placed by part-a',
    });

    const cutAt = Date.now();
    cluster.proxy('part-a').cut();
    const next = await cluster.waitForLeader({ not: 'part-a', timeoutMs: 30_000 });
    const steppedDown = await waitFor(
      () =>
        logTimes(cluster.node('part-a').daemon.stderr(), 'stepped down as cluster leader').find(
          (time) => time >= cutAt,
        ),
      { timeoutMs: 10_000, what: 'part-a logging its step-down' },
    );
    const elected = logTimes(cluster.node(next).daemon.stderr(), 'elected cluster leader').find(
      (time) => time >= cutAt,
    )!;
    expect(elected).toBeGreaterThan(0);
    expect(steppedDown).toBeLessThan(elected);

    // The new leader schedules: a new task is placed while part-a is still cut off.
    await cluster.registry.put(KEYS.task('p2')).value(JSON.stringify(task('p2', 1)));
    await waitFor(async () => (await placedHosts(cluster, 'p2')).length === 1, {
      timeoutMs: 20_000,
      intervalMs: 50,
      what: 'p2 placed by the new leader',
    });

    cluster.proxy('part-a').heal();
    await cluster.waitForReports(['part-a'], 30_000);
    expect(await cluster.waitForLeader()).toBe(next);
    const reports = await cluster.nodeReports();
    expect(reports['part-a']!.leader).toBe(false);
  }, 90_000);
});

describe('etcd killed and restarted', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({
      nodes: [{ host: 'reg-a' }, { host: 'reg-b' }, { host: 'reg-c', main: false }],
      ttlSeconds: 3,
    });
    await cluster.waitForReports(['reg-a', 'reg-b', 'reg-c']);
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('every node re-registers on a new lease; one leader; tasks and topology intact', async () => {
    await cluster.waitForLeader();
    await cluster.registry.put(KEYS.task('keep')).value(JSON.stringify(task('keep', 2)));
    const before = await waitFor(
      async () => {
        const hosts = await placedHosts(cluster, 'keep');
        return hosts.length === 2 ? hosts : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50, what: 'keep placed' },
    );
    const hosts = ['reg-a', 'reg-b', 'reg-c'];
    const leases = new Map<string, string | undefined>();
    for (const host of hosts) leases.set(host, await leaseOf(cluster, KEYS.node(host)));

    await cluster.stopEtcd('SIGKILL');
    // Down for longer than the TTL as each node sees it: every session gives its lease up.
    await waitFor(
      () =>
        hosts.every(
          (host) =>
            logTimes(
              cluster.node(host).daemon.stderr(),
              'registry lease expired by the session estimate (no keepalive answered); granting a new one',
            ).length > 0,
        ),
      { timeoutMs: 30_000, intervalMs: 50, what: 'every node noticing its lease expired' },
    );
    await cluster.startEtcd();

    await waitFor(
      async () => {
        for (const host of hosts) {
          const lease = await leaseOf(cluster, KEYS.node(host));
          if (lease === undefined || lease === leases.get(host)) return false;
        }
        return true;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'every node report on a new lease' },
    );
    await cluster.waitForLeader({ timeoutMs: 30_000 });
    expect(JSON.parse((await cluster.get(KEYS.task('keep')))!)).toEqual(task('keep', 2));
    expect(await placedHosts(cluster, 'keep')).toEqual(before);
  }, 120_000);
});
