// `-F` and the bearer on the wire: svcd has no forwarding gateway yet, so a local HTTP server
// records what svc sends (X-Target-Host and Authorization) and answers like the API.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { svcEnv, type SvcEnv } from './helpers.ts';

const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
const server = createServer((req, res) => {
  seen.push({ url: req.url ?? '', headers: req.headers });
  res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
});
let svc: SvcEnv;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  svc = await svcEnv({ SVC_BEARER_TOKEN: 'opaque-test-token' });
});
afterAll(async () => {
  await svc.cleanup();
  await new Promise((resolve) => server.close(resolve));
});

it('-F sends X-Target-Host and the bearer on every request', async () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const r = await svc.run(['-H', url, '-F', 'node-b:6059', 'ls', '-o', 'json']);
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual([]);
  expect(seen).toHaveLength(1);
  expect(seen[0]!.url).toBe('/svc/applications');
  expect(seen[0]!.headers['x-target-host']).toBe('node-b:6059');
  expect(seen[0]!.headers['authorization']).toBe('Bearer opaque-test-token');
  expect(r.stdout + r.stderr).not.toContain('opaque-test-token');
});
