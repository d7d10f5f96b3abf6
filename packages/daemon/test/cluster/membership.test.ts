// Cluster membership with real svcd nodes and a real etcd: every node writes its node report (the
// spec's fields exactly) on its lease, refreshes it when its labels change, re-registers after etcd
// was killed and restarted, and its report vanishes when it stops cleanly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type TestCluster } from './harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('cluster membership', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({
      nodes: [
        { host: 'node-a', labels: { zone: 'east' } },
        { host: 'node-b', main: false },
        { host: 'node-c', worker: false, svcProxyUrl: 'https://node-c.example:8443' },
      ],
      // 6 s, not the 3 s of the other cluster files: the etcd-restart case asserts that no report
      // ever disappears, and on a loaded 2-core machine a keepalive stream can take more than 3 s
      // to reconnect after etcd comes back (a margin for the machine, not for svc: the session
      // retries at TTL/4 whatever the TTL).
      ttlSeconds: 6,
    });
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('writes a node report with exactly the spec fields on each node lease', async () => {
    const reports = await cluster.waitForReports(['node-a', 'node-b', 'node-c']);
    const a = reports['node-a']!;
    expect(Object.keys(a).sort()).toEqual(['label', 'leader', 'resource', 'svc']);
    expect(a.svc).toBe(cluster.node('node-a').daemon.restUrl);
    expect(a.label).toMatchObject({ HOST_NAME: 'node-a', zone: 'east', WORKER: 'true' });
    expect(a.label['arch']).toMatch(/\S/);
    expect(a.label['os_version']).toMatch(/\S/);
    expect(Object.keys(a.resource).sort()).toEqual(['cpu_cores', 'mem_total_bytes']);
    expect(a.resource.cpu_cores).toBeGreaterThan(0);
    expect(a.resource.mem_total_bytes).toBeGreaterThan(0);
    expect(reports['node-c']!.label['WORKER']).toBe('false');
    // Registry.SvcProxyUrl replaces the listen address in the report.
    expect(reports['node-c']!.svc).toBe('https://node-c.example:8443');
    // On the node's lease: the key carries a lease id.
    const raw = await cluster.registry.get('svc/cluster/nodes/node-b').exec();
    expect(raw.kvs[0]!.lease).not.toBe('0');
  });

  it('refreshes the report when a label is set or deleted through the API', async () => {
    const rest = cluster.node('node-b').daemon.rest();
    const token = await cluster.node('node-b').daemon.token('admin');
    const put = await rest.call('PUT', '/svc/label/rack?value=r7', { token });
    expect(put.status).toBe(200);
    await waitFor(async () => (await cluster.nodeReports())['node-b']?.label['rack'] === 'r7', {
      what: 'label rack in the report',
    });
    const del = await rest.call('DELETE', '/svc/label/rack', { token });
    expect(del.status).toBe(200);
    await waitFor(async () => (await cluster.nodeReports())['node-b']?.label['rack'] === undefined, {
      what: 'label rack gone from the report',
    });
  });

  it('keeps every node registered across a quick etcd kill -9 and restart (keepalives resume)', async () => {
    await cluster.stopEtcd('SIGKILL');
    await cluster.startEtcd();
    const restartedAt = Date.now();
    // etcd restores the leases with a fresh TTL: the reports outlive it only if keepalives resumed.
    // Every poll must see all three reports until more than one TTL has passed.
    const absent: string[] = [];
    await waitFor(
      async () => {
        const reports = await cluster.nodeReports();
        for (const host of ['node-a', 'node-b', 'node-c']) if (reports[host] === undefined) absent.push(host);
        return Date.now() - restartedAt > cluster.ttlSeconds * 1000 * 1.5;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: '1.5 TTL after the restart' },
    );
    expect(absent).toEqual([]);
    expect((await cluster.nodeReports())['node-a']!.label['zone']).toBe('east');
  }, 60_000);

  it('removes the report of a node that stops cleanly, and writes it again when it restarts', async () => {
    const node = cluster.node('node-c');
    await node.stop();
    await waitFor(async () => (await cluster.nodeReports())['node-c'] === undefined, {
      timeoutMs: 10_000,
      what: 'the report of node-c gone',
    });
    await node.restart();
    await cluster.waitForReports(['node-c']);
  }, 60_000);
});
