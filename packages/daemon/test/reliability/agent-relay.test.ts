// Issue 12 item 2 and the agent half of issue 11 §1, against a real svcd and svc-agent on loopback:
// connections svc-agent relays are counted against the agent's client (not against svcd's loopback,
// where admins and workers live), bearer-less sessions close when idle, an anonymous session serves
// one process's task RPC only, and a worker on this host reaches the task RPC through the agent
// while a relayed key from another address, or a forged relay, is refused.
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { decodeResponse, encodeRequest } from '@svc/protocol';
import { restClient, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';
import { daemonConnections } from './helpers.ts';

const PER_ADDRESS = 20;
const IDLE_MS = 3000;

let daemon: TestDaemon;
let agentUrl: string;
let admin: string;
const opened: WebSocket[] = [];

beforeAll(async () => {
  daemon = await startTestDaemon({
    agent: true,
    files: {
      'config/config.yaml': `limits:\n  max_connections_per_ip: ${PER_ADDRESS}\n  idle_timeout_ms: ${IDLE_MS}\n  headers_timeout_ms: 2000\n`,
    },
  });
  ({ agentUrl } = await daemon.agent());
  admin = await daemon.token('admin');
  for (const name of ['worker-a', 'worker-b'])
    expect(
      (await daemon.rest().call('PUT', `/svc/app/${name}`, { token: admin, body: { command: 'sleep 600' } }))
        .status,
    ).toBe(200);
}, 60_000);
afterAll(async () => {
  for (const ws of opened) ws.terminate();
  await daemon?.close();
});

/** SVC_PROCESS_KEY of an app's process (its environment; the test runs as the same user). */
async function keyOf(app: string): Promise<string> {
  const pid = await waitFor(
    async () =>
      (await daemon.rest().call('GET', `/svc/app/${app}`, { token: admin })).json<{ pid?: number }>().pid,
    { what: `a process of ${app}`, timeoutMs: 30_000 },
  );
  const entry = (await readFile(`/proc/${pid}/environ`, 'utf8'))
    .split('\0')
    .find((e) => e.startsWith('SVC_PROCESS_KEY='));
  if (entry === undefined) throw new Error(`no process key for ${app}`);
  return entry.slice('SVC_PROCESS_KEY='.length);
}

/** An anonymous (or bearer) WSS session from `localAddress`; rejects with the refusal status. */
function openWs(
  url: string,
  localAddress = '127.0.0.1',
  headers: Record<string, string> = {},
): Promise<WebSocket> {
  const ws = new WebSocket(url.replace(/^https:/, 'wss:'), ['svc-ws'], {
    ca: daemon.ca,
    localAddress,
    headers,
  });
  opened.push(ws);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error('refused'), { status: res.statusCode })),
    );
    ws.once('error', reject);
  });
}

function wsCall(
  ws: WebSocket,
  method: string,
  path: string,
  headers: Record<string, string>,
  query: Record<string, string> = {},
  body: Uint8Array = new Uint8Array(0),
) {
  const uuid = crypto.randomUUID();
  return new Promise<{ status: number; error: string | undefined }>((resolve, reject) => {
    const onMessage = (data: Buffer): void => {
      const response = decodeResponse(data);
      if (response.uuid !== uuid) return;
      ws.off('message', onMessage);
      const text = Buffer.from(response.body).toString('utf8');
      resolve({
        status: response.http_status,
        error: text.startsWith('{') ? (JSON.parse(text) as { error?: string }).error : undefined,
      });
    };
    ws.on('message', onMessage);
    ws.once('close', () => reject(new Error('closed')));
    ws.send(
      encodeRequest({
        uuid,
        request_uri: path,
        http_method: method,
        client_addr: '',
        headers,
        query,
        body,
      }),
    );
  });
}

/** A REST request straight to svcd with chosen headers (forged relays). */
function direct(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${daemon.restUrl}${path}`, { ca: daemon.ca, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('connections relayed by svc-agent', () => {
  it('count against the client, not svcd loopback: a flood through the agent leaves admins served, and idles out', async () => {
    // The attacker is 127.0.0.2 (another loopback address: it stands for any address but svcd's own).
    const flood: WebSocket[] = [];
    for (let i = 0; i < PER_ADDRESS; i++) flood.push(await openWs(agentUrl, '127.0.0.2'));
    const held = daemonConnections(daemon);
    // One more from the same client takes the place of its oldest anonymous session (by the
    // agent's guard or svcd's: both close the oldest pending connection of a full address).
    const newest = await openWs(agentUrl, '127.0.0.2');
    flood.push(newest);
    await waitFor(() => flood[0]!.readyState === WebSocket.CLOSED, {
      what: 'the oldest anonymous session to make room',
      timeoutMs: 10_000,
    });
    expect(flood.slice(1).filter((ws) => ws.readyState === WebSocket.CLOSED)).toHaveLength(0);
    // Admins and workers on svcd's loopback still get in, directly and through the agent.
    const self = await daemon.rest().call('GET', '/svc/self', { token: admin });
    expect(self.status).toBe(200);
    const viaAgent = await restClient(agentUrl, daemon.ca).call('GET', '/svc/self', { token: admin });
    expect(viaAgent.status).toBe(200);
    const extra = await Promise.all(Array.from({ length: PER_ADDRESS - 5 }, () => daemon.tcp()));
    for (const client of extra)
      expect((await client.call('GET', '/svc/self', { token: admin })).status).toBe(200);
    await Promise.all(extra.map((c) => c.close()));
    // Bearer-less sessions with nothing in flight are closed after limits.idle_timeout_ms.
    const started = Date.now();
    await waitFor(() => flood.every((ws) => ws.readyState === WebSocket.CLOSED), {
      what: 'the idle anonymous sessions to be closed',
      timeoutMs: IDLE_MS + 20_000,
    });
    const closedAfterMs = Date.now() - started;
    console.log(
      `[reliability] agent relay: ${PER_ADDRESS} anonymous WSS via agent held ${held} svcd connections; admins served; closed idle after ${closedAfterMs} ms`,
    );
  }, 60_000);

  it('pin an anonymous session to the process key it presented first', async () => {
    const [a, b] = [await keyOf('worker-a'), await keyOf('worker-b')];
    const ws = await openWs(agentUrl);
    const first = await wsCall(
      ws,
      'GET',
      '/svc/app/worker-a/task',
      { 'x-svc-process-key': a },
      { timeout: '0' },
    );
    expect(first.status).toBe(204);
    const other = await wsCall(
      ws,
      'GET',
      '/svc/app/worker-b/task',
      { 'x-svc-process-key': b },
      { timeout: '0' },
    );
    expect(other).toMatchObject({ status: 403, error: 'forbidden' });
    expect(
      (await wsCall(ws, 'GET', '/svc/app/worker-a/task', { 'x-svc-process-key': a }, { timeout: '0' }))
        .status,
    ).toBe(204);
    ws.terminate();
    // The same holds on a direct anonymous session.
    const d = await openWs(daemon.restUrl);
    expect(
      (await wsCall(d, 'GET', '/svc/app/worker-b/task', { 'x-svc-process-key': b }, { timeout: '0' })).status,
    ).toBe(204);
    expect(
      (await wsCall(d, 'GET', '/svc/app/worker-a/task', { 'x-svc-process-key': a }, { timeout: '0' })).status,
    ).toBe(403);
    // Its valid key lifted the 1 MiB cap of anonymous sessions: a 2 MiB frame is served.
    const large = await wsCall(
      d,
      'GET',
      '/svc/app/worker-b/task',
      { 'x-svc-process-key': b },
      { timeout: '0' },
      new Uint8Array(2 * 1024 * 1024),
    );
    expect(large.status).toBe(204);
    d.terminate();
  });
});

describe('svc-agent itself', () => {
  it('closes connections that never finish TLS or never send a request, and caps anonymous frames through it', async () => {
    const { agentPort } = await daemon.agent();
    const silent = await Promise.all(
      Array.from(
        { length: 6 },
        (_, i) =>
          new Promise<Socket>((resolve, reject) => {
            const socket =
              i % 2 === 0
                ? netConnect({ port: agentPort, host: '127.0.0.1' }, () => resolve(socket))
                : tlsConnect({ port: agentPort, host: '127.0.0.1', ca: daemon.ca }, () => resolve(socket));
            socket.on('error', reject);
          }),
      ),
    );
    const started = Date.now();
    await Promise.all(
      silent.map(
        (s) => new Promise((resolve) => (s.destroyed ? resolve(undefined) : s.once('close', resolve))),
      ),
    );
    console.log(
      `[reliability] agent: 6 silent connections (3 before TLS, 3 after) closed by the agent within ${Date.now() - started} ms`,
    );
    // An anonymous session through the agent sending a 2 MiB message is closed by svcd (1009).
    const ws = await openWs(agentUrl);
    const code = new Promise<number>((resolve) => ws.once('close', (c: number) => resolve(c)));
    ws.send(Buffer.alloc(2 * 1024 * 1024));
    expect(await code).toBe(1009);
  }, 60_000);
});

describe('a process key through svc-agent', () => {
  it('works for a loopback client over REST and WSS', async () => {
    const key = await keyOf('worker-a');
    const via = restClient(agentUrl, daemon.ca);
    const rest = await via.call('GET', '/svc/app/worker-a/task', {
      headers: { 'x-svc-process-key': key },
      query: { timeout: '0' },
    });
    expect(rest.status).toBe(204);
    const ws = await openWs(agentUrl);
    expect(
      (await wsCall(ws, 'GET', '/svc/app/worker-a/task', { 'x-svc-process-key': key }, { timeout: '0' }))
        .status,
    ).toBe(204);
    ws.terminate();
    // A client's own X-Svc-Agent-Key is replaced by the agent, never trusted: still the client's key decides.
    const wrong = await via.call('GET', '/svc/app/worker-a/task', {
      headers: { 'x-svc-process-key': 'not-the-key', 'x-svc-agent-key': 'forged' },
      query: { timeout: '0' },
    });
    expect(wrong.status).toBe(403);
  });

  it('is refused when svcd is told the client is not on this host, or when the relay is forged', async () => {
    const key = await keyOf('worker-a');
    const agentKey = await keyOf('agent');
    // The agent's proof with a client from another address: the key crossed a network, refused.
    const remote = await direct('/svc/app/worker-a/task?timeout=0', {
      'x-svc-process-key': key,
      'x-svc-agent-key': agentKey,
      'x-forwarded-for': '192.0.2.7',
    });
    expect(remote.status).toBe(403);
    expect(remote.body).toContain('process_key_transport');
    // A forged proof (any client can set headers): not a relay, and forwarded, so refused.
    const forged = await direct('/svc/app/worker-a/task?timeout=0', {
      'x-svc-process-key': key,
      'x-svc-agent-key': 'forged',
      'x-forwarded-for': '127.0.0.1',
    });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain('process_key_transport');
    // Another app's key is no proof either.
    const workerAsAgent = await direct('/svc/app/worker-a/task?timeout=0', {
      'x-svc-process-key': key,
      'x-svc-agent-key': key,
      'x-forwarded-for': '127.0.0.1',
    });
    expect(workerAsAgent.status).toBe(403);
    // The same over a forged WSS upgrade.
    const ws = await openWs(daemon.restUrl, '127.0.0.1', {
      'x-svc-agent-key': 'forged',
      'x-forwarded-for': '127.0.0.1',
    });
    expect(
      await wsCall(ws, 'GET', '/svc/app/worker-a/task', { 'x-svc-process-key': key }, { timeout: '0' }),
    ).toMatchObject({
      status: 403,
      error: 'process_key_transport',
    });
    ws.terminate();
  });
});
