// Issue 25 row M1 against a real builtin svcd + svc-identity + svc-agent: `resources/subscribe` to
// the output of an application whose process has exited made the agent re-poll svcd's output long
// poll in a loop (it answers at once after the exit): about 2,400 requests a second and ~40% of a
// core for 32 subscriptions. Now such a subscription waits for the application's START event (the
// administrator, who may subscribe to events) or a doubling timer (a viewer, who may not), and
// still tells its client when a new process writes.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { fetch as undiciFetch } from 'undici';
import { startServedDaemon, waitFor, type ApiClient, type ServeInfo, type TestDaemon } from '@svc/testkit';
import { RawMcp } from './mcp-raw.ts';

const APPS = 4;
const ADMIN_SESSIONS = 8; // × APPS = 32 subscriptions, the per-session maximum's worth
const VIEWER_SESSIONS = 2;

let daemon: TestDaemon;
let info: ServeInfo;
let rest: ApiClient;
let mcp: RawMcp;
let client: Client | undefined;

/** svcd's count of answered GET /svc/app/{name}/output requests (its Prometheus text). */
async function outputRequests(): Promise<number> {
  const text = (await rest.call('GET', '/svc/metrics', { token: info.tokens['svc-admin'] })).text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('svc_requests_total{') && line.includes('route="/svc/app/{name}/output"'))
      total += Number(line.split(' ').at(-1));
  return total;
}

async function subscribeAll(token: string, sessions: number): Promise<number> {
  let subscribed = 0;
  for (let s = 0; s < sessions; s += 1) {
    const session = await mcp.open(token);
    expect(session.status).toBe(200);
    for (let a = 0; a < APPS; a += 1) {
      const answer = await mcp.request(token, session.sessionId!, 'resources/subscribe', {
        uri: `svc://app/m1-exited-${a}/output`,
      });
      expect(answer.message?.error).toBeUndefined();
      subscribed += 1;
    }
  }
  return subscribed;
}

beforeAll(async () => {
  ({ daemon, info } = await startServedDaemon({ agent: true, builtin: true, tokenTtlSeconds: 900 }));
  rest = daemon.rest();
  mcp = new RawMcp(`${info.agent!}/mcp`, readFileSync(info.ca, 'utf8'));
  for (let a = 0; a < APPS; a += 1) {
    // Shared for reading (permission 21): the viewer may read and subscribe to its output.
    const put = await rest.call('PUT', `/svc/app/m1-exited-${a}`, {
      token: info.tokens['svc-admin'],
      body: { command: 'echo done', behavior: { exit: 'standby' }, permission: 21 },
    });
    expect(put.status, put.text()).toBe(200);
  }
  for (let a = 0; a < APPS; a += 1)
    await waitFor(
      async () =>
        (await rest.call('GET', `/svc/app/m1-exited-${a}/output`, { token: info.tokens['svc-admin'] }))
          .headers['x-exit-code'] !== undefined,
      { what: `m1-exited-${a} to exit`, timeoutMs: 30_000, intervalMs: 50 },
    );
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await mcp?.close();
  await daemon?.close();
});

describe('M1: MCP subscriptions to the output of an application that has exited', () => {
  it('cost svcd no output requests while nothing happens', async () => {
    const subscribed =
      (await subscribeAll(info.tokens['svc-admin'], ADMIN_SESSIONS)) +
      (await subscribeAll(info.tokens['svc-viewer'], VIEWER_SESSIONS));
    const viewerSubscriptions = VIEWER_SESSIONS * APPS;
    const before = await outputRequests();
    const began = Date.now();
    // The measured window: what idle subscriptions ask of svcd in it is the figure.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const seconds = (Date.now() - began) / 1000;
    const requests = (await outputRequests()) - before;
    // Allowed: each subscription's one look once it is subscribed to events (or the first look of
    // its timer, 2 s), and the viewer's timer looks (2, 4, 8 … s apart): at most 40 + 8 × 4 in 5 s
    // on any machine. The loop this replaces made about 2,400 a second (12,000 in this window).
    const bound = subscribed + viewerSubscriptions * Math.ceil(Math.log2(seconds / 2 + 1) + 1);
    expect(requests).toBeLessThanOrEqual(bound);
  }, 120_000);

  it("still tells a subscriber when the application's next process writes", async () => {
    const token = info.tokens['svc-admin'];
    const caFetch = ((url: string | URL, init?: RequestInit) =>
      undiciFetch(url, { ...(init as object), dispatcher: mcp.dispatcher })) as unknown as typeof fetch;
    client = new Client({ name: 'm1-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(mcp.url), {
        fetch: caFetch,
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    const uri = 'svc://app/m1-exited-0/output';
    let updates = 0;
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
      if (note.params.uri === uri) updates += 1;
    });
    await client.subscribeResource({ uri });
    // A new process (disable, then enable starts it): its START event wakes the subscription.
    for (const action of ['disable', 'enable'])
      expect((await rest.call('POST', `/svc/app/m1-exited-0/${action}`, { token })).status).toBe(200);
    await waitFor(() => updates > 0, {
      what: 'notifications/resources/updated',
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    const read = await client.readResource({ uri });
    expect((read.contents[0] as { text: string }).text).toContain('done');
  }, 60_000);
});
