// The cluster view against a real etcd and two real svcd nodes: node-a (builtin mode, the web UI's
// daemon, the only main node, so the leader) and node-b (a worker). A cluster application placed
// on both shows in the nodes table (leader, labels, resources), the topology by host and the
// cluster applications table, for every role allowed to read them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, startTestDaemon, waitFor, type TestDaemon, type TestEtcd } from '@svc/testkit';
import { startWebHarness, type WebHarness } from './harness.ts';

const TTL_SECONDS = 3;

function clusterConfig(options: { main: boolean; labels: Record<string, string> }): string {
  return [
    'Registry:',
    `  IsMainNode: ${options.main}`,
    '  IsWorkerNode: true',
    `  SessionTTL: ${TTL_SECONDS}`,
    // node-b runs in external auth mode: it keeps its own policy rather than node-a's.
    ...(options.main ? [] : ['  EnableRegistrySecurity: false']),
    'Labels:',
    ...Object.entries(options.labels).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`),
    '',
  ].join('\n');
}

let etcd: TestEtcd;
let web: WebHarness;
let nodeB: TestDaemon;

beforeAll(async () => {
  etcd = await startEtcd();
  web = await startWebHarness({
    env: { SVC_HOST_NAME: 'node-a', SVC_REGISTRY_URL: etcd.url },
    files: { 'config/config.yaml': clusterConfig({ main: true, labels: { zone: 'east' } }) },
  });
  nodeB = await startTestDaemon({
    env: { SVC_HOST_NAME: 'node-b', SVC_REGISTRY_URL: etcd.url },
    files: { 'config/config.yaml': clusterConfig({ main: false, labels: { zone: 'west' } }) },
  });
  const admin = web.api('svc-admin');
  await waitFor(
    async () => {
      const nodes = (await admin.call('GET', '/svc/cluster/nodes')).json<
        Record<string, { leader: boolean }>
      >();
      return nodes['node-a']?.leader === true && nodes['node-b'] !== undefined;
    },
    { what: 'node-a leading, node-b reported', timeoutMs: 60_000, intervalMs: 100 },
  );
  const put = await admin.call('PUT', '/svc/cluster/app/web', {
    body: { replication: 2, port: 0, memoryMB: 0, condition: {}, content: { command: 'sleep 600' } },
  });
  expect(put.status, put.text()).toBe(200);
  await waitFor(
    async () =>
      (await admin.call('GET', '/svc/cluster/app/web')).json<{ placements: unknown[] }>().placements
        .length === 2,
    { what: 'web placed on both nodes', timeoutMs: 60_000, intervalMs: 100 },
  );
}, 180_000);

afterAll(async () => {
  await web?.api('svc-admin').call('DELETE', '/svc/cluster/app/web');
  await nodeB?.close();
  await web?.close();
  await etcd?.close();
});

describe('cluster view', () => {
  for (const role of ['svc-admin', 'svc-viewer', 'svc-maintenance'] as const)
    it(`shows nodes, topology by host and cluster applications to ${role}`, async () => {
      const page = await web.newPage();
      await web.signIn(page, role);
      const nav = page.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Cluster' }).click();
      await page.getByRole('heading', { level: 1, name: 'Cluster' }).waitFor();

      const nodeA = page.locator('tr[data-node="node-a"]');
      await nodeA.getByText('leader').waitFor();
      await expect(nodeA.textContent()).resolves.toContain('zone=east');
      const cores = await nodeA.locator('td.num').first().textContent();
      expect(Number(cores)).toBeGreaterThan(0);
      const nodeBRow = page.locator('tr[data-node="node-b"]');
      await nodeBRow.getByText('member').waitFor();
      await expect(nodeBRow.textContent()).resolves.toContain('zone=west');

      for (const host of ['node-a', 'node-b'])
        await page.locator(`li[data-host="${host}"]`).getByText('web', { exact: true }).waitFor();

      const app = page.locator('tr[data-cluster-app="web"]');
      await app.getByText('2 / 2').waitFor();
      await expect(app.textContent()).resolves.toMatch(/node-a, node-b/);
      // Readable at 360 px: the tables scroll inside their boxes, the page does not.
      await page.setViewportSize({ width: 360, height: 740 });
      await nodeA.waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      expect(web.pageErrors(page)).toEqual([]);
      await page.context().close();
    });
});
