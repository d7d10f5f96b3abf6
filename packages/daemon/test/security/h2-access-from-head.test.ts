// Issue 25 H2 against a real svcd: 40 × `POST /svc/app/syncrun` with 15 MiB bodies from a token
// without run permission. Before, the body was buffered before the permission check (RSS 81 → 699
// MB, kept). Must be: the access rule is decided from the head; a refused request reads no body.
// Each request here announces 15 MiB and streams it; svcd must answer 403 while the client is
// still sending, and its memory must not grow by the bodies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';
import { daemonConnections, rssKiB } from '../reliability/helpers.ts';
import { MiB, closed, rssSampler, stream, tlsPeer } from './helpers.ts';

const BODY = 15 * MiB;

let daemon: TestDaemon;
let admin: string;

beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
}, 60_000);
afterAll(async () => {
  await daemon?.close();
});

/**
 * Sends a request head announcing BODY bytes, then streams the body until the server answers or
 * closes. Resolves with the status and how much of the body had been written when it answered.
 */
async function announce(
  method: string,
  path: string,
  token: string,
): Promise<{ status: number | undefined; sentBeforeAnswer: number }> {
  const socket = await tlsPeer(daemon.restPort, daemon.ca);
  socket.on('error', () => undefined); // the server closes after its answer: EPIPE/ECONNRESET
  let sent = 0;
  let sentBeforeAnswer = -1;
  let text = '';
  socket.setEncoding('latin1');
  const answered = new Promise<number | undefined>((resolve) => {
    socket.on('data', (chunk: string) => {
      text += chunk;
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (match !== null && sentBeforeAnswer < 0) {
        sentBeforeAnswer = sent;
        resolve(Number(match[1]));
        socket.destroy();
      }
    });
    socket.once('close', () => resolve(undefined));
  });
  socket.write(
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${BODY}\r\n\r\n`,
  );
  void stream(socket, BODY, (n) => (sent = n));
  const status = await answered;
  await closed(socket);
  return { status, sentBeforeAnswer: sentBeforeAnswer < 0 ? sent : sentBeforeAnswer };
}

describe('H2: the access rule is decided from the head of a REST request', () => {
  it('answers 40 syncruns with 15 MiB bodies from a token without run permission 403 before their bodies, memory flat', async () => {
    const viewer = await daemon.token('viewer'); // svc-viewer: app-view-all, no app-run-sync
    const before = rssKiB(daemon.pid);
    const sampler = rssSampler(daemon.pid);
    const results = await Promise.all(
      Array.from({ length: 40 }, () => announce('POST', '/svc/app/syncrun', viewer)),
    );
    const peak = sampler.stop();
    await waitFor(() => daemonConnections(daemon) === 0, { what: 'the 40 peers to be gone', timeoutMs: 20_000 });
    const after = rssKiB(daemon.pid);
    const sent = results.map((r) => r.sentBeforeAnswer);
    console.log(
      `[security] H2: 40 × 15 MiB syncrun bodies without run permission: statuses ${[...new Set(results.map((r) => r.status))].join(',')}; ` +
        `at most ${Math.max(...sent) >> 20} MiB of a body sent before the 403; RSS ${before >> 10} MiB before, ${peak >> 10} MiB peak, ${after >> 10} MiB after`,
    );
    for (const result of results) expect(result.status).toBe(403);
    // Answered from the head: every client was still sending its body.
    for (const bytes of sent) expect(bytes).toBeLessThan(BODY);
    // Before the fix the bodies were buffered: +618 MB peak and kept. 40 heads and 40 TLS
    // sessions cost a few MiB; 64 MiB is less than five of the bodies.
    expect(peak - before).toBeLessThan(64 * 1024);
    expect(after - before).toBeLessThan(64 * 1024);
  }, 120_000);

  it('decides per-application rules from the path before the body (registering over another owner)', async () => {
    expect(
      (await daemon.rest().call('PUT', '/svc/app/owned', { token: admin, body: { command: 'sleep 600' } })).status,
    ).toBe(200);
    const developer = await daemon.token('developer'); // app-reg on its own apps only
    const refused = await announce('PUT', '/svc/app/owned', developer);
    expect(refused.status).toBe(403);
    expect(refused.sentBeforeAnswer).toBeLessThan(BODY);
    // A caller the rule allows still gets its body read and judged (a run with a small body).
    const run = await daemon.rest().call('POST', '/svc/app/syncrun', {
      token: admin,
      body: { command: 'echo from-head' },
    });
    expect(run.status).toBe(200);
    expect(run.text()).toContain('from-head');
  }, 60_000);
});
