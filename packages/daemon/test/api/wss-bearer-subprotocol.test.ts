// The bearer offered at WSS upgrade as a sub-protocol entry `svc-bearer.<token>` next to `svc-ws`
// (browsers cannot set an Authorization header on a WebSocket): verified like the header, pins the
// principal, the server selects only `svc-ws`, and the token is never echoed or logged.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { decodeResponse, encodeRequest } from '@svc/protocol';
import {
  openWebSocket,
  startTestDaemon,
  TEST_PRINCIPALS,
  type TestDaemon,
  type UpgradedWebSocket,
} from '@svc/testkit';

let daemon: TestDaemon;
let admin: string;
const sockets: WebSocket[] = [];

beforeAll(async () => {
  daemon = await startTestDaemon({ env: {}, files: { 'config/config.yaml': 'log_level: debug\n' } });
  admin = await daemon.token('admin');
});
afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await daemon?.close();
});

/** Opens a WSS connection offering `protocols`; resolves with the socket or rejects with the refusal. */
async function open(protocols: string[], headers: Record<string, string> = {}): Promise<UpgradedWebSocket> {
  const upgraded = await openWebSocket(daemon.restUrl, daemon.ca, protocols, headers);
  sockets.push(upgraded.ws);
  return upgraded;
}

async function call(
  ws: WebSocket,
  path: string,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const uuid = crypto.randomUUID();
  const answer = new Promise<{ status: number; body: Record<string, unknown> }>((resolve) => {
    const onMessage = (data: Buffer): void => {
      const response = decodeResponse(data);
      if (response.uuid !== uuid) return;
      ws.off('message', onMessage);
      resolve({
        status: response.http_status,
        body: JSON.parse(Buffer.from(response.body).toString('utf8')) as Record<string, unknown>,
      });
    };
    ws.on('message', onMessage);
  });
  ws.send(
    encodeRequest({
      uuid,
      request_uri: path,
      http_method: 'GET',
      client_addr: '',
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      query: {},
      body: new Uint8Array(0),
    }),
  );
  return answer;
}

describe('WSS bearer as sub-protocol svc-bearer.<token>', () => {
  it('authenticates the session, selects only svc-ws and serves frames without a bearer', async () => {
    const { ws, selected } = await open(['svc-ws', `svc-bearer.${admin}`]);
    expect(selected).toBe('svc-ws');
    expect(ws.protocol).toBe('svc-ws');
    const self = await call(ws, '/svc/self');
    expect(self.status).toBe(200);
    expect(JSON.stringify(self.body)).toContain(TEST_PRINCIPALS.admin.sub);
    // Frames may also carry the same bearer.
    expect((await call(ws, '/svc/self', admin)).status).toBe(200);
  });

  it('works in either order of the offered entries', async () => {
    const { ws, selected } = await open([`svc-bearer.${admin}`, 'svc-ws']);
    expect(selected).toBe('svc-ws');
    expect((await call(ws, '/svc/applications')).status).toBe(200);
  });

  it('pins the principal: a frame with another principal is refused', async () => {
    const { ws } = await open(['svc-ws', `svc-bearer.${admin}`]);
    const other = await call(ws, '/svc/self', await daemon.token('viewer'));
    expect(other.status).toBe(401);
    expect(other.body['error']).toBe('invalid_token');
    expect((await call(ws, '/svc/self')).status).toBe(200);
  });

  it('refuses a bad token with 401 at upgrade without echoing it', async () => {
    const bad = 'not-a-valid-token-7f3a9c';
    const error = (await open(['svc-ws', `svc-bearer.${bad}`]).catch((e: unknown) => e)) as {
      message: string;
      headers: Record<string, unknown>;
      body: string;
    };
    expect(error.message).toMatch(/401/);
    expect(JSON.stringify(error.headers)).not.toContain(bad);
    expect(error.body).not.toContain(bad);
    // An empty bearer entry is a bad bearer too.
    await expect(open(['svc-ws', 'svc-bearer.'])).rejects.toThrow(/401/);
  });

  it('refuses two bearers (two entries, or an entry and the header) and an entry without svc-ws', async () => {
    await expect(open(['svc-ws', `svc-bearer.${admin}`, `svc-bearer.${admin}x`])).rejects.toThrow(/400/);
    await expect(
      open(['svc-ws', `svc-bearer.${admin}`], { authorization: `Bearer ${admin}` }),
    ).rejects.toThrow(/400/);
    await expect(open([`svc-bearer.${admin}`])).rejects.toThrow(/400/);
  });

  it('never logs the offered token', async () => {
    const marker = 'never-log-this-token-4b1d';
    await open(['svc-ws', `svc-bearer.${marker}`]).catch(() => undefined);
    const { ws } = await open(['svc-ws', `svc-bearer.${admin}`]);
    expect((await call(ws, '/svc/self')).status).toBe(200);
    const log = await readFile(join(daemon.workDir, 'server.log'), 'utf8').catch(() => '');
    for (const text of [log, daemon.stderr()]) {
      expect(text).not.toContain(marker);
      expect(text).not.toContain(admin);
    }
  });
});
