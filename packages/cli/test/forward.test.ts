// `-F`: first on the wire (a local HTTP server records what svc sends: X-Target-Host and
// Authorization), then end to end through a real gateway svcd to a real target svcd.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestDaemon, startTestIssuer } from '@svc/testkit';
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

it('svc -F <target> reaches the target through a real gateway', async () => {
  const issuer = await startTestIssuer();
  try {
    await using target = await startTestDaemon({ issuer, env: { SVC_HOST_NAME: 'node-t' } });
    const targetAddress = `127.0.0.1:${target.tcpPort}`;
    await using gateway = await startTestDaemon({
      issuer,
      tlsFrom: target,
      env: { SVC_HOST_NAME: 'node-g', SVC_FORWARD_TARGETS: targetAddress },
    });
    const token = await gateway.token('admin');
    const put = await target
      .rest()
      .call('PUT', '/svc/app/on-target', { token, body: { command: 'sleep 600' } });
    expect(put.status, put.text()).toBe(200);
    const cli = await svcEnv({ SVC_HOME: gateway.home, SVC_BEARER_TOKEN: token });
    try {
      const forwarded = await cli.run(['-H', gateway.restUrl, '-F', targetAddress, 'ls', '-o', 'json']);
      expect(forwarded.code, forwarded.stderr).toBe(0);
      expect((JSON.parse(forwarded.stdout) as { name: string }[]).map((a) => a.name)).toContain('on-target');
      const local = await cli.run(['-H', gateway.restUrl, 'ls', '-o', 'json']);
      expect((JSON.parse(local.stdout) as { name: string }[]).map((a) => a.name)).not.toContain('on-target');
      const refused = await cli.run(['-H', gateway.restUrl, '-F', 'node-x', 'ls']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/not an allowed forward target/);
      expect(forwarded.stdout + forwarded.stderr + refused.stderr).not.toContain(token);
    } finally {
      await cli.cleanup();
    }
  } finally {
    await issuer.close();
  }
});
