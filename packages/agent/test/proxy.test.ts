// svc-agent in front of a real svcd (external auth mode, the testkit's issuer): everything through
// the agent answers as it does directly, bearers pass through untouched, the agent's own refusals use
// the registry's error body, a process key works through it only for a loopback client, and hostile input never hurts it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { EVENT_REQUEST_URI, decodeResponse } from '@svc/protocol';
import { restClient, startTestDaemon, wsClient, type ApiClient, type TestDaemon } from '@svc/testkit';
import { openWs, processOf, rawTls, waitFor, wsCall } from './helpers.ts';

let daemon: TestDaemon;
let agentUrl: string;
let agentPort: number;
let via: ApiClient;
let admin: string;
const sockets: WebSocket[] = [];

beforeAll(async () => {
  // The exporter on (SVC_METRICS_PORT), so that svcd serves GET /svc/metrics to the agent.
  daemon = await startTestDaemon({ agent: true, env: { SVC_METRICS_PORT: '0' } });
  ({ agentUrl, agentPort } = await daemon.agent());
  via = restClient(agentUrl, daemon.ca);
  admin = await daemon.token('admin');
});
afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await daemon?.close();
});

/** Headers that differ per response by nature. */
const VOLATILE = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
function stable(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([key]) => !VOLATILE.has(key)));
}

describe('REST through the agent', () => {
  it('answers like the daemon: status, body and headers (X-Output-Position)', async () => {
    const put = await via.call('PUT', '/svc/app/echoer', {
      token: admin,
      body: { command: "sh -c 'echo hello; echo world'", behavior: { exit: 'standby' } },
    });
    expect(put.status).toBe(200);
    await waitFor(
      async () => {
        const r = await via.call('GET', '/svc/app/echoer/output', { token: admin });
        return r.text().includes('world') ? r : undefined;
      },
      { what: 'the output of echoer' },
    );
    for (const [method, path, query] of [
      ['GET', '/svc/app/echoer/output', { stdout_position: '6' }],
      ['GET', '/svc/app/echoer', undefined],
      ['GET', '/svc/applications', undefined],
      ['GET', '/svc/app/nosuch', undefined],
      ['GET', '/svc/nosuch', undefined],
      ['GET', '/openapi.json', undefined],
      ['GET', '/svc/auth/config', undefined],
    ] as const) {
      const options = { token: admin, ...(query === undefined ? {} : { query }) };
      const direct = await daemon.rest().call(method, path, options);
      const proxied = await via.call(method, path, options);
      expect(proxied.status, path).toBe(direct.status);
      // The app list carries live cpu and memory figures, so its body (and length) may move.
      const moving = path === '/svc/applications';
      if (!moving) expect(proxied.text(), path).toBe(direct.text());
      const omit = (h: Record<string, string>): Record<string, string> => {
        const { 'content-length': _length, ...rest } = stable(h);
        return moving ? rest : stable(h);
      };
      expect(omit(proxied.headers), path).toEqual(omit(direct.headers));
    }
    const output = await via.call('GET', '/svc/app/echoer/output', {
      token: admin,
      query: { stdout_position: '6' },
    });
    expect(output.headers['x-output-position']).toBe('12');
    expect(output.text()).toBe('world\n');
  });

  it('refuses a subscription over plain HTTP with 405 when forwarded too', async () => {
    for (const path of ['/svc/app/echoer/subscribe', '/svc/subscribe']) {
      const r = await via.call('POST', path, { token: admin, query: { events: 'ALL' } });
      expect(r.status, path).toBe(405);
      expect(r.json()).toMatchObject({ error: 'persistent_connection_required' });
    }
  });

  it('keeps public paths public and protected ones protected (401 with the RFC 9728 challenge)', async () => {
    expect((await via.call('GET', '/svc/auth/config')).status).toBe(200);
    expect((await via.call('GET', '/openapi.json')).status).toBe(200);
    const denied = await via.call('GET', '/svc/applications');
    expect(denied.status).toBe(401);
    expect(denied.json()).toMatchObject({ error: 'unauthorized' });
    // RFC 9728 through the agent names the agent, the address the client can reach.
    expect(denied.headers['www-authenticate']).toContain(
      `resource_metadata="${agentUrl}/.well-known/oauth-protected-resource"`,
    );
    const metadata = await via.call('GET', '/.well-known/oauth-protected-resource');
    expect(metadata.status).toBe(200);
    expect(metadata.json()).toMatchObject({ resource: agentUrl });
    const direct = await daemon.rest().call('GET', '/.well-known/oauth-protected-resource');
    expect(direct.json()).toMatchObject({ resource: daemon.restUrl });
    expect((await daemon.rest().call('GET', '/svc/applications')).headers['www-authenticate']).toContain(
      `resource_metadata="${daemon.restUrl}/.well-known/oauth-protected-resource"`,
    );
    const viewer = await via.call('PUT', '/svc/app/x', {
      token: await daemon.token('viewer'),
      body: { command: 'true' },
    });
    expect(viewer.status).toBe(403);
  });

  it('answers /auth/* in external mode with a clear 404 naming the external provider', async () => {
    for (const path of ['/auth/token', '/auth/.well-known/openid-configuration', '/auth']) {
      const r = await via.call(path === '/auth/token' ? 'POST' : 'GET', path);
      expect(r.status).toBe(404);
      expect(r.json()).toMatchObject({ error: 'external_identity_provider' });
      expect(r.text()).toContain('external identity provider');
    }
  });

  it('serves the web UI built at install time at / (packages/web/dist), refuses traversal', async () => {
    // `npm ci` builds packages/web (the root's prepare script) and vitest's global setup rebuilds it
    // when stale; an agent without that folder answers 404 (web-files.test.ts).
    const root = await via.call('GET', '/');
    expect(root.status).toBe(200);
    expect(root.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(root.text()).toContain('<title>svc</title>');
    for (const path of [
      '/../../etc/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
      '/assets/..%2f..%2fpackage.json',
      '/.env',
    ]) {
      const r = await via.call('GET', path);
      expect(r.status, path).toBe(404);
      expect(r.json<{ error: string }>().error).toBe('not_found');
    }
    expect((await via.call('POST', '/index.html')).json()).toMatchObject({ error: 'method_not_allowed' });
  });
});

describe('WSS through the agent', () => {
  it('carries the Authorization header form with pushes', async () => {
    const client = await wsClient(agentUrl, daemon.ca, admin);
    try {
      const self = await client.call('GET', '/svc/self');
      expect(self.status).toBe(200);
      const reg = await client.call('PUT', '/svc/app/ws-pushed', {
        token: admin,
        query: { subscribe_events: 'START,EXIT' },
        body: { command: 'true', behavior: { exit: 'standby' } },
      });
      expect(reg.status).toBe(200);
      const subscription = reg.json<{ subscription_id: string }>().subscription_id;
      await waitFor(
        () => {
          const types = client.pushes
            .filter(
              (p) => p.request_uri === EVENT_REQUEST_URI && p.headers['X-Subscription-Id'] === subscription,
            )
            .map((p) => p.headers['X-Event-Type']);
          return types.includes('START') && types.includes('EXIT') ? types : undefined;
        },
        { what: 'START and EXIT pushed through the agent' },
      );
    } finally {
      await client.close();
    }
  });

  it('carries the browser sub-protocol form (svc-bearer.<token>) and selects only svc-ws', async () => {
    const { ws, selected } = await openWs(agentUrl, daemon.ca, ['svc-ws', `svc-bearer.${admin}`]);
    sockets.push(ws);
    expect(selected).toBe('svc-ws');
    const self = await wsCall(ws, 'GET', '/svc/self');
    expect(self.status).toBe(200);
    expect(JSON.parse(self.text)).toMatchObject({ principal_id: 'test-admin' });
    ws.close();
    // A bad bearer is refused at upgrade by the daemon, through the agent.
    await expect(openWs(agentUrl, daemon.ca, ['svc-ws', 'svc-bearer.not-a-token'])).rejects.toMatchObject({
      status: 401,
    });
    // The offered entries are never logged (neither by svcd nor by the agent, whose stdout is the
    // agent app's output file).
    const agentLog = await via.call('GET', '/svc/app/agent/output', { token: admin });
    expect(agentLog.status).toBe(200);
    expect(agentLog.text()).not.toContain(admin);
    expect(daemon.stderr()).not.toContain(admin);
  });
});

describe('process keys through the agent', () => {
  it('are relayed for a loopback client (worker task RPC), and a client cannot forge the relay', async () => {
    await via.call('PUT', '/svc/app/worker', { token: admin, body: { command: 'sleep 600' } });
    const worker = await processOf(daemon, 'worker');
    const viaTask = await via.call('GET', '/svc/app/worker/task', {
      headers: { 'x-svc-process-key': worker.key },
      query: { timeout: '0' },
    });
    expect(viaTask.status).toBe(204);
    const directTask = await daemon.rest().call('GET', '/svc/app/worker/task', {
      headers: { 'x-svc-process-key': worker.key },
      query: { timeout: '0' },
    });
    expect(directTask.status).toBe(204);
    // A client cannot spoof its way around svcd's checks: X-Forwarded-For without the agent's
    // proof is a forwarded request, refused.
    const spoofed = await daemon.rest().call('GET', '/svc/app/worker/task', {
      headers: { 'x-svc-process-key': worker.key, 'x-forwarded-for': '127.0.0.1' },
      query: { timeout: '0' },
    });
    expect(spoofed.json()).toMatchObject({ error: 'process_key_transport' });
  });

  it('are relayed on an anonymous WSS task session through the agent', async () => {
    const worker = await processOf(daemon, 'worker');
    const { ws } = await openWs(agentUrl, daemon.ca, ['svc-ws']);
    sockets.push(ws);
    const r = await wsCall(ws, 'GET', '/svc/app/worker/task', {
      headers: { 'x-svc-process-key': worker.key },
      query: { timeout: '0' },
    });
    expect(r.status).toBe(204);
    ws.close();
  });
});

describe('GET /svc/metrics authorization', () => {
  it('serves host-resource-view bearers and the agent process key on a direct loopback connection', async () => {
    const agent = await processOf(daemon, 'agent');
    const worker = await processOf(daemon, 'worker');
    const direct = daemon.rest();
    const ok = await direct.call('GET', '/svc/metrics', { headers: { 'x-svc-process-key': agent.key } });
    expect(ok.status).toBe(200);
    expect(ok.contentType).toContain('text/plain');
    expect(ok.text()).toContain('svc_requests_total');
    for (const role of ['admin', 'viewer', 'maintenance'] as const) {
      const r = await direct.call('GET', '/svc/metrics', { token: await daemon.token(role) });
      expect(r.status, role).toBe(200);
      expect(r.text(), role).toContain('svc_requests_total');
    }
    for (const role of ['developer', 'nobody'] as const) {
      const r = await direct.call('GET', '/svc/metrics', { token: await daemon.token(role) });
      expect(r.status, role).toBe(403);
      expect(r.json(), role).toMatchObject({ error: 'forbidden' });
    }
    const anonymous = await direct.call('GET', '/svc/metrics');
    expect(anonymous.status).toBe(401);
    // A process key is never combined with a bearer: the wrong key is refused even with an admin token.
    const keyAndBearer = await direct.call('GET', '/svc/metrics', {
      token: await daemon.token('admin'),
      headers: { 'x-svc-process-key': 'x'.repeat(64) },
    });
    expect(keyAndBearer.status).toBe(403);
    // Another app's valid key, and a made-up key: refused.
    const other = await direct.call('GET', '/svc/metrics', { headers: { 'x-svc-process-key': worker.key } });
    expect(other.status).toBe(403);
    const wrong = await direct.call('GET', '/svc/metrics', {
      headers: { 'x-svc-process-key': 'x'.repeat(64) },
    });
    expect(wrong.status).toBe(403);
    // Labels are route templates, never raw paths.
    expect(ok.text()).toContain('route="/svc/app/{name}/task"');
    expect(ok.text()).not.toContain('/svc/app/worker/task');
  });
});

describe('hostile input', () => {
  it('survives oversized headers and bodies, malformed requests, slow and vanishing clients', async () => {
    const huge = await rawTls(
      agentPort,
      daemon.ca,
      `GET /svc/applications HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`,
    );
    expect(huge).toMatch(/^HTTP\/1\.1 431/);
    // A declared body above the bound is refused before a byte of it is forwarded.
    const tooLong = await rawTls(
      agentPort,
      daemon.ca,
      `PUT /svc/app/big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\nConnection: close\r\n\r\n{`,
    );
    expect(tooLong).toMatch(/^HTTP\/1\.1 413/);
    expect(tooLong).toContain('"error":"payload_too_large"');
    expect(await rawTls(agentPort, daemon.ca, 'NOT HTTP AT ALL\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    // A client that sends half a request and hangs up, and one that upgrades and vanishes.
    await rawTls(agentPort, daemon.ca, 'GET /svc/applications HTTP/1.1\r\nHost: x\r\n', {
      endAfterWrite: true,
    });
    await rawTls(
      agentPort,
      daemon.ca,
      'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: svc-ws\r\n\r\n',
      { endAfterWrite: true },
    );
    // A raw /svc path with dot-segments reaches the daemon unnormalised: its 404, not a file.
    const dots = await via.call('GET', '/svc/../../etc/passwd', { token: admin });
    expect(dots.status).toBe(404);
    expect(dots.json<{ error: string }>().error).toBe('route_not_found');
    // Still serving, and still the same process.
    const agentBefore = await processOf(daemon, 'agent');
    expect((await via.call('GET', '/svc/self', { token: admin })).status).toBe(200);
    expect((await processOf(daemon, 'agent')).pid).toBe(agentBefore.pid);
  });

  it('bounds a slow client by the header timeout (the connection is closed, the agent keeps serving)', async () => {
    const started = Date.now();
    const answer = await rawTls(agentPort, daemon.ca, 'GET /svc/self HTTP/1.1\r\nHost: x\r\n');
    // Node's headersTimeout (10 s default here) closes it with 408; a generous bound, not a timing test.
    expect(answer, answer).toMatch(/^$|^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(45_000);
    expect((await via.call('GET', '/svc/self', { token: admin })).status).toBe(200);
  });
});

describe('the agent as a system application', () => {
  it('is listed to svc-admin only and refused by every edit', async () => {
    const list = await via.call('GET', '/svc/applications', { token: admin });
    expect(list.json<{ name: string }[]>().map((a) => a.name)).toContain('agent');
    const viewer = await via.call('GET', '/svc/applications', { token: await daemon.token('viewer') });
    expect(viewer.json<{ name: string }[]>().map((a) => a.name)).not.toContain('agent');
    expect((await via.call('DELETE', '/svc/app/agent', { token: admin })).status).toBeGreaterThanOrEqual(400);
  });

  it('pushes a decodable Response for every frame it relays (binary frames untouched)', async () => {
    const { ws } = await openWs(agentUrl, daemon.ca, ['svc-ws'], { authorization: `Bearer ${admin}` });
    sockets.push(ws);
    const frames: Buffer[] = [];
    ws.on('message', (data: Buffer) => frames.push(data));
    const r = await wsCall(ws, 'GET', '/svc/self');
    expect(r.status).toBe(200);
    expect(frames.length).toBe(1);
    expect(decodeResponse(frames[0]!).http_status).toBe(200);
    ws.close();
  });
});
