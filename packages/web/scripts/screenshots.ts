// Takes the screenshots of docs/screenshots/ against the browser test harness: a real etcd, a
// builtin-mode svcd in cluster mode (node-a, the leader) with a second node (node-b), a few real
// applications, the Debian Chromium. PNGs are re-deflated at the highest level (lossless).
//
//   npx node packages/web/scripts/screenshots.ts [output dir, default docs/screenshots]
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { crc32, deflateSync, inflateSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { startEtcd, startTestDaemon, waitFor } from '@svc/testkit';
import { startWebHarness } from '../test/harness.ts';
import { REPO_ROOT } from '../test/web-build.ts';

const OUT = resolve(process.argv[2] ?? join(REPO_ROOT, 'docs', 'screenshots'));
const WIDE = { width: 1280, height: 760 };
const NARROW = { width: 360, height: 740 };

/** The same PNG with its image data deflated at level 9 in one IDAT chunk. */
export function recompressPng(png: Buffer): Buffer {
  const chunks: { type: string; data: Buffer }[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    chunks.push({
      type: png.toString('latin1', at + 4, at + 8),
      data: png.subarray(at + 8, at + 8 + length),
    });
    at += 12 + length;
  }
  const image = inflateSync(Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data)));
  const idat = deflateSync(image, { level: 9, memLevel: 9 });
  const out: Buffer[] = [png.subarray(0, 8)];
  let wroteData = false;
  for (const chunk of chunks) {
    if (chunk.type === 'IDAT') {
      if (wroteData) continue;
      wroteData = true;
      chunk.data = idat;
    }
    const head = Buffer.alloc(8);
    head.writeUInt32BE(chunk.data.length, 0);
    head.write(chunk.type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), chunk.data])) >>> 0, 0);
    out.push(head, chunk.data, crc);
  }
  const result = Buffer.concat(out);
  return result.length < png.length ? result : png;
}

function clusterConfig(main: boolean, zone: string): string {
  return `Registry:\n  IsMainNode: ${main}\n  IsWorkerNode: true\n  SessionTTL: 3\n${
    main ? '' : '  EnableRegistrySecurity: false\n'
  }Labels:\n  zone: ${zone}\n`;
}

const APPS = [
  {
    name: 'web',
    description: 'static site',
    command: `sh -c 'i=0; while true; do i=$((i+1)); echo "GET /index.html 200 $((i*7 % 90 + 3)) ms"; sleep 1; done'`,
  },
  { name: 'queue-worker', description: 'consumes the job queue', command: 'sleep 86400' },
  { name: 'metrics-agent', description: 'pushes host metrics', command: 'sleep 86400' },
  {
    name: 'nightly-report',
    description: 'exits with an error',
    command: `sh -c 'echo report failed >&2; exit 3'`,
  },
  { name: 'backup', description: 'disabled until the weekend', command: 'sleep 86400', enabled: false },
];

async function shoot(page: Page, file: string, theme: 'light' | 'dark'): Promise<void> {
  await page.emulateMedia({ colorScheme: theme });
  await page.evaluate(() => document.fonts.ready);
  const png = recompressPng(await page.screenshot({ animations: 'disabled' }));
  await writeFile(join(OUT, file), png);
  console.log(`${file}  ${(png.length / 1024).toFixed(0)} KB`);
}

async function go(page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate((h) => (window.location.hash = h), hash);
  await page.locator(ready).first().waitFor();
}

await mkdir(OUT, { recursive: true });
const etcd = await startEtcd();
const web = await startWebHarness({
  env: { SVC_HOST_NAME: 'node-a', SVC_REGISTRY_URL: etcd.url },
  files: { 'config/config.yaml': clusterConfig(true, 'east') },
});
const nodeB = await startTestDaemon({
  env: { SVC_HOST_NAME: 'node-b', SVC_REGISTRY_URL: etcd.url },
  files: { 'config/config.yaml': clusterConfig(false, 'west') },
});
try {
  const admin = web.api('svc-admin');
  for (const app of APPS) await admin.call('PUT', `/svc/app/${app.name}`, { body: app });
  await admin.call('POST', '/svc/role/operator', { body: ['app-view-all', 'app-control', 'label-view'] });
  await admin.call('POST', '/svc/principal/client:ci-deployer', { body: { roles: ['operator'] } });
  await admin.call('PUT', '/svc/label/rack', { query: { value: 'r12' } });
  await waitFor(
    async () => Object.keys((await admin.call('GET', '/svc/cluster/nodes')).json<object>()).length === 2,
    { what: 'two cluster nodes', timeoutMs: 60_000 },
  );
  await admin.call('PUT', '/svc/cluster/app/edge-proxy', {
    body: { replication: 2, port: 0, memoryMB: 64, condition: {}, content: { command: 'sleep 86400' } },
  });
  await admin.call('PUT', '/svc/cluster/app/east-cache', {
    body: {
      replication: 1,
      port: 0,
      memoryMB: 0,
      condition: { zone: 'east' },
      content: { command: 'sleep 86400' },
    },
  });
  await waitFor(
    async () =>
      (await admin.call('GET', '/svc/cluster/app/edge-proxy')).json<{ placements: unknown[] }>().placements
        .length === 2,
    { what: 'edge-proxy placed', timeoutMs: 60_000 },
  );

  const page = await web.newPage({ viewport: WIDE });
  await web.signIn(page, 'svc-admin');
  await go(page, '/apps', 'tr[data-app="web"]');
  await page.locator('tr[data-app="nightly-report"]').getByText('failed').waitFor();
  await shoot(page, 'apps-light.png', 'light');
  await shoot(page, 'apps-dark.png', 'dark');
  await go(page, '/app/web', 'pre.output');
  await page.waitForFunction(
    () => (document.querySelector('pre.output')?.textContent ?? '').split('\n').length > 6,
  );
  await shoot(page, 'app-detail-light.png', 'light');
  await go(page, '/register', 'form');
  await shoot(page, 'register-light.png', 'light');
  await go(page, '/admin/principals', 'tr[data-principal="client:ci-deployer"]');
  await shoot(page, 'admin-principals-light.png', 'light');
  await go(page, '/admin/config', '[data-path="BaseConfig.LogLevel"]');
  await shoot(page, 'admin-config-dark.png', 'dark');
  await go(page, '/cluster', 'tr[data-cluster-app="edge-proxy"]');
  await page.locator('tr[data-cluster-app="east-cache"]').getByText('1 / 1').waitFor();
  await shoot(page, 'cluster-light.png', 'light');
  await shoot(page, 'cluster-dark.png', 'dark');
  await page.setViewportSize(NARROW);
  await go(page, '/apps', 'tr[data-app="web"]');
  await shoot(page, 'apps-360-light.png', 'light');
} finally {
  await nodeB.close();
  await web.close();
  await etcd.close();
}
