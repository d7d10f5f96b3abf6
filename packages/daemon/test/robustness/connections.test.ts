// Connection floods and slow clients against the real daemon: the per-address cap (shared by the
// REST and TCP listeners) closes surplus connections at once and frees a slot when one closes; a
// peer that stalls mid-frame is cut off after limits.request_timeout_ms; a peer that pipelines
// thousands of requests without reading gets back-pressure, not a crash, and others are served.
import { connect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLIENT_MAX_BODY_BYTES,
  FrameDecoder,
  decodeResponse,
  encodeFrame,
  encodeFrameHeader,
  encodeRequest,
  type Response,
} from '@svc/protocol';
import { startTestDaemon, type PersistentClient, type TestDaemon } from '@svc/testkit';
import { ok, processAlive, serverLog, waitFor, within } from './helpers.ts';

/** GET /svc/self on a persistent connection: its status, or 'closed' if the server closed it. */
async function selfOn(client: PersistentClient, token: string): Promise<number | 'closed'> {
  return Promise.race([
    client.call('GET', '/svc/self', { token }).then(
      (r) => r.status,
      () => 'closed' as const,
    ),
    client.closed.then(() => 'closed' as const),
  ]);
}

describe('connection flood: limits.max_connections_per_ip = 5', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon({
      files: { 'config/config.yaml': 'limits:\n  max_connections_per_ip: 5\n' },
    });
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('closes the 6th connection at once, counts REST too, and admits again after one closes', async () => {
    const token = await daemon.token('admin');
    const held: PersistentClient[] = [];
    for (let i = 0; i < 5; i++) {
      const client = await daemon.tcp();
      expect(await selfOn(client, token), `connection ${i + 1} is served`).toBe(200);
      held.push(client);
    }

    // The 6th completes its TLS handshake on our side, then the server closes it unparsed.
    const sixth = await daemon.tcp().catch(() => undefined);
    if (sixth !== undefined) {
      await within(sixth.closed, 5000, 'the server to close the 6th connection');
      expect(await selfOn(sixth, token)).toBe('closed');
    }
    // The cap is per address across listeners: a REST connection is refused as well.
    await expect(daemon.rest().call('GET', '/svc/self', { token })).rejects.toThrow();
    // The log line can land just after the client saw the refusal: wait for both lines.
    await waitFor(
      async () => {
        const log = await serverLog(daemon);
        return (
          /connection refused: too many connections[^\n]*"listener":"tcp"/.test(log) &&
          /connection refused: too many connections[^\n]*"listener":"rest"/.test(log)
        );
      },
      { what: 'both refusals (tcp and rest) in server.log' },
    );
    // The five held connections were not disturbed by the refusals.
    for (const client of held) expect(await selfOn(client, token)).toBe(200);

    // One closes: a new connection is admitted (the server notices the close a moment later).
    await held.pop()!.close();
    const replacement = await waitFor(
      async () => {
        const client = await daemon.tcp().catch(() => undefined);
        return client !== undefined && (await selfOn(client, token)) === 200 ? client : undefined;
      },
      { timeoutMs: 10_000, what: 'a new TCP connection to be admitted', intervalMs: 20 },
    );
    held.push(replacement);

    // Free one more slot: REST is served again.
    await held.pop()!.close();
    const self = await waitFor(
      async () => {
        const r = await daemon.rest().call('GET', '/svc/self', { token });
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 10_000, what: 'REST to be served again', intervalMs: 20 },
    );
    expect(self.json<{ principal_id: string }>().principal_id).toBe('test-admin');
    for (const client of held) expect(await selfOn(client, token)).toBe(200);
    for (const client of held) await client.close();
  });
});

describe('slow clients: limits.request_timeout_ms = 1000', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon({
      files: { 'config/config.yaml': 'limits:\n  request_timeout_ms: 1000\n' },
    });
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('drops a TCP peer that stalls mid-frame, and only that one', async () => {
    const token = await daemon.token('admin');
    const idle = await daemon.tcp();
    expect(await selfOn(idle, token)).toBe(200);
    const halfHeader = await daemon.tcp();
    const halfBody = await daemon.tcp();
    const started = Date.now();
    halfHeader.sendRaw(encodeFrameHeader(100).subarray(0, 4));
    halfBody.sendRaw(Buffer.concat([encodeFrameHeader(100), Buffer.alloc(10, 0x90)]));
    await within(
      Promise.all([halfHeader.closed, halfBody.closed]),
      10_000,
      'the stalled peers to be dropped',
    );
    expect(Date.now() - started, 'dropped after the request timeout, not at once').toBeGreaterThanOrEqual(
      900,
    );
    await waitFor(async () => /closing connection stalled mid-frame/.test(await serverLog(daemon)), {
      what: 'the stalled-peer line in server.log',
    });
    // A connection that is merely idle between frames is not a stalled one.
    expect(await selfOn(idle, token)).toBe(200);
  });

  it('survives a peer pipelining 2000 requests without reading, serves others, then answers all 2000', async () => {
    const token = await daemon.token('admin');
    const socket: TLSSocket = connect({ host: '127.0.0.1', port: daemon.tcpPort, ca: daemon.ca });
    socket.on('error', () => {});
    await within(
      new Promise<void>((resolve) => socket.once('secureConnect', () => resolve())),
      5000,
      'TLS handshake',
    );
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    try {
      // A role table per response: megabytes left unread, more than the socket buffers hold.
      const frames = Array.from({ length: 2000 }, (_, i) =>
        encodeFrame(
          encodeRequest({
            uuid: `pipelined-${i}`,
            request_uri: '/svc/roles',
            http_method: 'GET',
            client_addr: '',
            headers: { authorization: `Bearer ${token}` },
            query: {},
            body: new Uint8Array(),
          }),
        ),
      );
      socket.write(Buffer.concat(frames)); // and read nothing (the socket stays paused)

      // Others keep being served meanwhile, on both listeners.
      const other = await daemon.tcp();
      const rest = daemon.rest();
      for (let i = 0; i < 20; i++) {
        expect(await selfOn(other, token)).toBe(200);
        ok(await rest.call('GET', '/svc/self', { token }), 'REST during the flood');
      }
      expect(processAlive(daemon.pid)).toBe(true);

      // Back-pressure, not loss: once the peer reads, every response arrives, each exactly once.
      const decoder = new FrameDecoder({ maxBodyBytes: CLIENT_MAX_BODY_BYTES });
      const responses: Response[] = [];
      socket.on('data', (chunk: Buffer) => {
        for (const body of decoder.push(chunk)) responses.push(decodeResponse(body));
      });
      await waitFor(() => responses.length >= 2000 || undefined, {
        timeoutMs: 30_000,
        what: '2000 pipelined responses',
        intervalMs: 20,
      });
      expect(responses.length).toBe(2000);
      expect(new Set(responses.map((r) => r.uuid)).size).toBe(2000);
      expect(responses.every((r) => r.http_status === 200)).toBe(true);
      expect(socket.destroyed).toBe(false);
    } finally {
      socket.destroy();
      await closed;
    }
    expect(await selfOn(await daemon.tcp(), token)).toBe(200);
  });
});
