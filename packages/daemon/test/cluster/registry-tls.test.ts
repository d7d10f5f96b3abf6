// TLS to etcd: with an https:// registry URL and Registry.SSL {CaFile, CertFile, KeyFile}, nodes
// reach an etcd that serves TLS and requires client certificates; without the client certificate
// the node cannot register (etcd refuses it), and the daemon still runs and answers its API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { startCluster, type TestCluster } from './harness.ts';

describe('registry over TLS with client certificates', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ nodes: [{ host: 'tls-a' }, { host: 'tls-b' }], ttlSeconds: 3, tls: true });
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('registers every node and elects a leader through the TLS registry', async () => {
    expect(cluster.etcd.url).toMatch(/^https:\/\//);
    const reports = await cluster.waitForReports(['tls-a', 'tls-b']);
    expect(reports['tls-a']!.label['HOST_NAME']).toBe('tls-a');
    expect(['tls-a', 'tls-b']).toContain(await cluster.waitForLeader());
  });

  it('a node without the client certificate is refused by etcd and keeps serving its API', async () => {
    let daemon: TestDaemon | undefined;
    try {
      daemon = await startTestDaemon({
        issuer: cluster.issuer,
        // It trusts etcd's CA but has no client certificate.
        files: {
          'config/config.yaml': `Registry:\n  SessionTTL: 3\n  SSL:\n    CaFile: ${JSON.stringify(cluster.registryTls!.caFile)}\n`,
        },
        env: { SVC_HOST_NAME: 'tls-nocert', SVC_REGISTRY_URL: cluster.etcd.url },
      });
      const token = await daemon.token('viewer');
      const result = await daemon.rest().call('GET', '/svc/applications', { token });
      expect(result.status).toBe(200);
      expect(daemon.stderr()).toContain('registry unavailable at start');
      expect((await cluster.nodeReports())['tls-nocert']).toBeUndefined();
    } finally {
      await daemon?.close();
    }
  });
});
