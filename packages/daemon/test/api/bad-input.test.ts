// Hostile and malformed input on every transport: each is refused with a clear error or a closed
// connection, is logged, and never disturbs the daemon or other clients.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAGIC, encodeFrame, encodeFrameHeader, encodeRequest } from '@svc/protocol';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon({ env: {} });
  admin = await daemon.token('admin');
});
afterAll(async () => {
  await daemon?.close();
});

async function stillServing(): Promise<void> {
  const r = await daemon.rest().call('GET', '/svc/self', { token: admin });
  expect(r.status).toBe(200);
}

async function logged(pattern: RegExp): Promise<void> {
  await waitFor(async () => pattern.test(await readFile(join(daemon.workDir, 'server.log'), 'utf8')), {
    timeoutMs: 5000,
    what: `server.log to match ${pattern}`,
  });
}

describe('TCP frames', () => {
  it('closes the connection on a bad magic, logs it, and keeps serving others', async () => {
    const bystander = await daemon.tcp();
    const attacker = await daemon.tcp();
    const frame = Buffer.alloc(8);
    frame.writeUInt32BE(0xdeadbeef, 0);
    frame.writeUInt32BE(4, 4);
    attacker.sendRaw(Buffer.concat([frame, Buffer.from('abcd')]));
    await attacker.closed;
    await logged(/rejected TCP frame.*bad_magic/);
    const r = await bystander.call('GET', '/svc/self', { token: admin });
    expect(r.status).toBe(200);
  });

  it('rejects a length above 256 MiB from the header alone', async () => {
    const attacker = await daemon.tcp();
    const header = Buffer.alloc(8);
    header.writeUInt32BE(MAGIC, 0);
    header.writeUInt32BE(256 * 1024 * 1024 + 1, 4);
    attacker.sendRaw(header);
    await attacker.closed;
    await logged(/rejected TCP frame.*too_large/);
    await stillServing();
  });

  it('closes on undecodable msgpack and on a message missing required fields', async () => {
    for (const body of [
      Buffer.from([0xc1, 0xc1, 0xc1]),
      Buffer.from([0x93, 0x01, 0x02, 0x03]),
      Buffer.from([0x81, 0xa1, 0x61, 0x01]),
    ]) {
      const attacker = await daemon.tcp();
      attacker.sendRaw(encodeFrame(body));
      await attacker.closed;
    }
    await logged(/rejected undecodable message/);
    await stillServing();
  });

  it('survives a frame split into single bytes and many coalesced frames', async () => {
    const client = await daemon.tcp();
    const frames = Array.from({ length: 20 }, (_, i) =>
      encodeFrame(
        encodeRequest({
          uuid: `u-${i}`,
          request_uri: '/svc/self',
          http_method: 'GET',
          client_addr: '',
          headers: { authorization: `Bearer ${admin}` },
          query: {},
          body: new Uint8Array(),
        }),
      ),
    );
    const all = Buffer.concat(frames);
    // first frame byte by byte, the other 19 in one write
    for (const byte of frames[0]!) client.sendRaw(Buffer.from([byte]));
    client.sendRaw(all.subarray(frames[0]!.length));
    await waitFor(() => client.pushes.length === 20, { timeoutMs: 10_000, what: '20 responses' });
    expect(new Set(client.pushes.map((p) => p.uuid)).size).toBe(20);
    expect(client.pushes.every((p) => p.http_status === 200)).toBe(true);
  });

  it('drops a TLS peer that never completes a handshake without affecting others', async () => {
    const raw = connect({ host: '127.0.0.1', port: daemon.tcpPort, rejectUnauthorized: false });
    raw.on('error', () => {});
    raw.destroy();
    await stillServing();
  });
});

describe('REST bodies and queries', () => {
  it('answers 413 for a body above the limit without buffering it', async () => {
    const r = await daemon
      .rest()
      .call('PUT', '/svc/app/big', { token: admin, rawBody: Buffer.alloc(17 * 1024 * 1024, 0x20) });
    expect(r.status).toBe(413);
    expect(r.json<{ error: string }>().error).toBe('payload_too_large');
  });

  it('rejects hostile bodies with invalid_json / invalid_app and precise messages', async () => {
    const rest = daemon.rest();
    const cases: [string | Buffer, string][] = [
      ['', 'invalid_json'],
      ['null', 'invalid_app'],
      ['[1,2]', 'invalid_app'],
      ['"str"', 'invalid_app'],
      [Buffer.from([0xff, 0xfe, 0x00]), 'invalid_json'],
      ['{"command": "x", "__proto__": {"admin": true}}', 'invalid_app'],
      [`{"command": "${'a'.repeat(70 * 1024)}"}`, 'invalid_app'],
      ['{"command": "x", "env": {"A B": "1"}}', 'invalid_app'],
      ['{"command": "x", "name": "other"}', 'invalid_app'],
      [`${'['.repeat(100_000)}`, 'invalid_json'],
    ];
    for (const [body, code] of cases) {
      const r = await rest.call('PUT', '/svc/app/hostile', {
        token: admin,
        rawBody: body,
        headers: { 'content-type': 'application/json' },
      });
      expect({
        body: String(body).slice(0, 40),
        status: r.status,
        error: r.json<{ error: string }>().error,
      }).toEqual({
        body: String(body).slice(0, 40),
        status: 400,
        error: code,
      });
      expect(r.json<{ message: string }>().message.length).toBeGreaterThan(5);
    }
    const gone = await rest.call('GET', '/svc/app/hostile', { token: admin });
    expect(gone.status).toBe(404);
  });

  it('makes path traversal in app names impossible', async () => {
    const rest = daemon.rest();
    for (const path of [
      '/svc/app/..',
      '/svc/app/%2e%2e',
      '/svc/app/..%2Fetc',
      '/svc/app/a%00b',
      '/svc/app/' + 'x'.repeat(129),
    ]) {
      const r = await rest.call('PUT', path, { token: admin, body: { command: 'true' } });
      expect({ path, status: r.status }).toEqual({ path, status: 400 });
    }
    const r = await rest.call('PUT', '/svc/app/../../etc/passwd', {
      token: admin,
      body: { command: 'true' },
    });
    expect(r.status).toBe(404);
  });

  it('rejects repeated and malformed query parameters', async () => {
    const rest = daemon.rest();
    const r1 = await rest.call('GET', '/svc/app/x/output?stdout_position=1&stdout_position=2', {
      token: admin,
    });
    expect(r1.status).toBe(400);
    const r2 = await rest.call('GET', '/svc/applications', { token: admin, query: { timeout: 'P1Q' } });
    expect(r2.status).toBe(200); // unknown query on an op that ignores it is harmless
  });
});

describe('WSS', () => {
  it('refuses an upgrade without the svc-ws sub-protocol and with a bad bearer', async () => {
    await expect(daemon.wss('not-a-token')).rejects.toThrow(/401/);
  });

  it('closes on a text frame and on garbage, keeps serving', async () => {
    const ws = await daemon.wss(admin);
    ws.sendRaw(Buffer.from([0xc1]));
    await ws.closed;
    await stillServing();
  });

  it('limits a session without a bearer to the task RPC', async () => {
    const ws = await daemon.wss();
    const r = await ws.call('GET', '/svc/self', { token: admin });
    expect(r.status).toBe(401);
  });
});

describe('connection pinning', () => {
  it('refuses a second principal on a TCP connection', async () => {
    const tcp = await daemon.tcp();
    expect((await tcp.call('GET', '/svc/self', { token: admin })).status).toBe(200);
    const r = await tcp.call('GET', '/svc/self', { token: await daemon.token('viewer') });
    expect(r.status).toBe(401);
    expect(r.json<{ error: string }>().error).toBe('invalid_token');
  });
});

describe('frame header helper', () => {
  it('encodes the spec header', () => {
    expect(encodeFrameHeader(5).toString('hex')).toBe('07c707f800000005');
  });
});
