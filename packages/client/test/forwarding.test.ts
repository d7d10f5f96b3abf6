// The client through a real forwarding gateway: every call reaches the target named by
// `targetHost`, a run on the target is waited for through the gateway, and a target that dies
// mid-wait surfaces as the gateway's `__disconnected__` (a forwarded-route error) while the
// client's own transport to the gateway stays up.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestDaemon, startTestIssuer, type TestDaemon, type TestIssuer } from '@svc/testkit';
import { TransportDisconnectedError, connect, isPersistent, type SvcClient } from '../src/index.ts';

let issuer: TestIssuer;
let gateway: TestDaemon;
let target: TestDaemon;
let admin: string;

beforeAll(async () => {
  issuer = await startTestIssuer();
  target = await startTestDaemon({ issuer, env: { SVC_HOST_NAME: 'node-t' } });
  gateway = await startTestDaemon({
    issuer,
    tlsFrom: target,
    env: { SVC_HOST_NAME: 'node-g', SVC_FORWARD_TARGETS: `127.0.0.1:${target.tcpPort}` },
  });
  admin = await gateway.token('admin');
}, 60_000);
afterAll(async () => {
  await Promise.all([gateway?.close(), target?.close()]);
  await issuer?.close();
});

function open(kind: 'tcp' | 'wss', to: TestDaemon = target): Promise<SvcClient> {
  return connect({
    url: gateway.restUrl,
    transport: kind,
    tcpPort: gateway.tcpPort,
    ca: gateway.ca,
    token: admin,
    targetHost: `127.0.0.1:${to.tcpPort}`,
  });
}

describe.each([['tcp'], ['wss']] as const)('through a gateway over %s', (kind) => {
  it('registers on the target and waits for a run there', async () => {
    const client = await open(kind);
    try {
      await client.registerApplication(`fw-${kind}`, { command: 'sleep 600', shell: true });
      const names = (await target.rest().call('GET', '/svc/applications', { token: admin }))
        .json<{ name: string }[]>()
        .map((a) => a.name);
      expect(names).toContain(`fw-${kind}`);
      const run = await client.run({ command: 'echo hi; exit 3', shell: true });
      expect(await client.waitForAsyncRun(run, { timeoutMs: 30_000 })).toBe(3);
    } finally {
      await client.close();
    }
  });
});

it('a target killed during the run-wait gives a forwarded-route disconnect; the local transport stays up', async () => {
  await using doomed = await startTestDaemon({ issuer, tlsFrom: target, env: { SVC_HOST_NAME: 'node-d' } });
  const doomedAddress = `127.0.0.1:${doomed.tcpPort}`;
  const set = await gateway.rest().call('POST', '/svc/config', {
    token: admin,
    body: { REST: { ForwardTargets: [`127.0.0.1:${target.tcpPort}`, doomedAddress] } },
  });
  expect(set.status, set.text()).toBe(200);
  const client = await open('tcp', doomed);
  try {
    const run = await client.run({ command: 'sleep 300', shell: true });
    // Kill only once the wait is in place: subscribed and backfilled (no call left in flight).
    const original = client.getOutput.bind(client);
    const backfilled = new Promise<void>((resolve) => {
      vi.spyOn(client, 'getOutput').mockImplementation(async (...args) => {
        const chunk = await original(...args);
        resolve();
        return chunk;
      });
    });
    const wait = client.waitForAsyncRun(run, { timeoutMs: 60_000 }).catch((error: unknown) => error);
    await backfilled;
    await doomed.kill();
    const error = await wait;
    expect(error).toBeInstanceOf(TransportDisconnectedError);
    expect((error as Error).message).toMatch(/forwarded route disconnected/);
    expect((error as Error).message).toContain(doomedAddress);
    if (!isPersistent(client.transport)) throw new Error('not persistent');
    expect(client.transport.demux.stopped).toBe(false);
    // The gateway answers for the dead target with a clear error.
    await expect(client.getApplication('anything')).rejects.toMatchObject({ status: 502 });
  } finally {
    await client.close();
  }
});
