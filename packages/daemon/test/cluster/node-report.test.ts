// The node report of an in-process cluster member against a real etcd: exactly the spec's fields,
// system labels override configured ones, and a change of resources or labels is written again
// (only when something changed).
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type TestEtcd } from '@svc/testkit';
import { startCluster } from '../../src/cluster/cluster.ts';
import type { HostFacts } from '../../src/cluster/node-report.ts';
import { KEYS, NodeReportSchema, parseRecord } from '../../src/cluster/records.ts';
import { createLogger } from '../../src/log/logger.ts';
import { waitFor } from '../helpers/wait-for.ts';

describe('node report refresh', () => {
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

  it('rewrites the report when resources or labels change, and only then', async () => {
    let facts: HostFacts = {
      arch: 'x86_64',
      osVersion: 'Test OS 1',
      cpuCores: 2,
      memTotalBytes: 4 * 1024 ** 3,
    };
    let labels: Record<string, string> = { zone: 'a', HOST_NAME: 'spoofed', WORKER: 'spoofed' };
    const node = await startCluster({
      config: {
        urls: [etcd.url],
        isMainNode: false,
        isWorkerNode: true,
        sessionTtlSeconds: 3,
        enableRegistrySecurity: false,
        svcProxyUrl: undefined,
        tls: undefined,
      },
      hostName: 'rep-1',
      svcUrl: () => 'https://127.0.0.1:7001',
      labels: () => labels,
      logger: createLogger({ level: 'error' }),
      resourceIntervalMs: 50,
      facts: () => facts,
    });
    const read = async () => parseRecord(NodeReportSchema, await reader.get(KEYS.node('rep-1')).string());
    const modRevision = async () => (await reader.get(KEYS.node('rep-1')).exec()).kvs[0]?.mod_revision;
    try {
      expect(await read()).toEqual({
        svc: 'https://127.0.0.1:7001',
        label: { zone: 'a', HOST_NAME: 'rep-1', WORKER: 'true', arch: 'x86_64', os_version: 'Test OS 1' },
        leader: false,
        resource: { cpu_cores: 2, mem_total_bytes: 4 * 1024 ** 3 },
      });
      const unchanged = await modRevision();
      // Several resource reads with nothing changed: no write.
      await node.refreshReport();
      expect(await modRevision()).toBe(unchanged);

      facts = { ...facts, cpuCores: 4, memTotalBytes: 8 * 1024 ** 3 };
      await waitFor(async () => (await read())?.resource.cpu_cores === 4, { what: 'the new resources' });
      expect((await read())!.resource.mem_total_bytes).toBe(8 * 1024 ** 3);

      labels = { zone: 'b' };
      await node.refreshReport();
      expect((await read())!.label['zone']).toBe('b');
      expect(node.status()).toMatchObject({
        host: 'rep-1',
        main: false,
        worker: true,
        leader: false,
        connected: true,
      });
    } finally {
      await node.close();
    }
    expect(await reader.get(KEYS.node('rep-1')).string()).toBeNull();
  });
});
