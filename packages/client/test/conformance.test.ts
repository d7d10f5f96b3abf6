// Conformance scenarios S1–S8 (spec "Named conformance scenarios"; spec/conformance.md) against a
// real svcd from @svc/testkit, over TCP and over WSS. The timing-sensitive transport-level halves
// are also proven against a scripted server in demux-fake-server.test.ts.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import {
  AppRemovedError,
  API_ERRORS,
  connect,
  isPersistent,
  TransportDisconnectedError,
  type PersistentTransport,
  type SubscriptionEvent,
  type SvcClient,
} from '../src/index.ts';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
});
afterAll(async () => {
  await daemon?.close();
});

type Kind = 'tcp' | 'wss';

function open(kind: Kind, target: TestDaemon = daemon, token: string = admin): Promise<SvcClient> {
  return connect({ url: target.restUrl, transport: kind, tcpPort: target.tcpPort, ca: target.ca, token });
}

function persistent(client: SvcClient): PersistentTransport {
  if (!isPersistent(client.transport)) throw new Error('not persistent');
  return client.transport;
}

/** Resolves once waitForAsyncRun's subscription is in place (its subscribe call answered). */
function onSubscribed(client: SvcClient): Promise<void> {
  const original = client.subscribe.bind(client);
  return new Promise<void>((resolve) => {
    vi.spyOn(client, 'subscribe').mockImplementation(async (...args) => {
      const info = await original(...args);
      resolve();
      return info;
    });
  });
}

describe.each([['tcp'], ['wss']] as const)('conformance over %s', (kind) => {
  it('S1: a demultiplexed request slower than the receive timeout completes, no spurious timeout', async () => {
    const client = await open(kind);
    try {
      await client.registerApplication(`s1-${kind}`, { command: 'sleep 300', shell: true });
      vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] });
      // The daemon holds this long poll ~2 s; meanwhile two minutes pass on every client-side timer.
      const poll = client.getOutput(`s1-${kind}`, { position: 0, timeoutSeconds: 2 });
      await vi.advanceTimersByTimeAsync(120_000);
      vi.useRealTimers();
      const chunk = await poll;
      expect(chunk.bytes).toBe(0);
      expect(chunk.exitCode).toBeUndefined();
    } finally {
      vi.useRealTimers();
      await client.deleteApplication(`s1-${kind}`).catch(() => undefined);
      await client.close();
    }
  });

  it('S3: a caller timeout during the wait returns null and unsubscribes (no delete)', async () => {
    const client = await open(kind);
    try {
      const run = await client.run({ command: 'sleep 300', shell: true });
      const unsubscribe = vi.spyOn(client, 'unsubscribe');
      const remove = vi.spyOn(client, 'deleteApplication');
      await expect(client.waitForAsyncRun(run, { timeoutMs: 300 })).resolves.toBeNull();
      expect(unsubscribe).toHaveBeenCalledTimes(1);
      await expect(unsubscribe.mock.results[0]!.value).resolves.toMatchObject({ removed: true });
      expect(remove).not.toHaveBeenCalled();
      expect((await client.getApplication(run.name)).name).toBe(run.name);
      await client.deleteApplication(run.name);
    } finally {
      await client.close();
    }
  });

  it('S4: atomic register with subscribe on a fast app: early events flushed in order, none lost', async () => {
    const client = await open(kind);
    try {
      const events: SubscriptionEvent[] = [];
      let exited!: () => void;
      const exit = new Promise<void>((resolve) => (exited = resolve));
      const name = `s4-${kind}`;
      const app = await client.registerApplication(
        name,
        { command: 'printf "a\\nb\\n"', shell: true },
        {
          subscribeEvents: ['ALL'],
          onEvent: (event) => {
            events.push(event);
            if (event.event_type === 'EXIT') exited();
          },
        },
      );
      expect(typeof app.subscription_id).toBe('string');
      await exit;
      const upToExit = events.slice(0, events.findIndex((e) => e.event_type === 'EXIT') + 1);
      const sequences = upToExit.map((e) => ('sequence' in e ? e.sequence : -1));
      expect(sequences).toEqual(sequences.map((_, i) => i + 1));
      expect(upToExit[0]!.event_type).toBe('START');
      const stdout = upToExit.filter((e) => e.event_type === 'STDOUT');
      expect(stdout.map((e) => ('data' in e ? (e.data as { output: string }).output : '')).join('')).toBe(
        'a\nb\n',
      );
      expect(stdout.at(-1)).toMatchObject({ data: { finished: true } });
      await client.unsubscribe(app.subscription_id!);
      await client.deleteApplication(name);
    } finally {
      await client.close();
    }
  });

  it('S5: a flood for never-registered subscriptions stays within the 64-id cap', async () => {
    const client = await open(kind);
    const transport = persistent(client);
    const name = `s5-${kind}`;
    try {
      await client.registerApplication(name, { command: 'sleep 300', shell: true });
      // 70 subscriptions whose callbacks are never registered (raw calls, not subscribe()).
      for (let i = 0; i < 70; i++)
        await client.request({
          method: 'POST',
          path: `/svc/app/${name}/subscribe`,
          query: { events: 'STATUS' },
        });
      await client.disableApplication(name); // one STATUS event for each of the 70
      await vi.waitFor(() => expect(transport.demux.droppedEvents).toBe(6));
      expect(transport.demux.bufferedSubscriptions).toBe(64);
      await client.deleteApplication(name);
    } finally {
      await client.close();
    }
    expect(transport.demux.bufferedSubscriptions).toBe(0);
  });

  it('S6: a process killed by a signal returns its negative code as an exit code', async () => {
    const client = await open(kind);
    try {
      const output: string[] = [];
      const run = await client.run({ command: 'echo before; kill -TERM $$', shell: true });
      const remove = vi.spyOn(client, 'deleteApplication');
      const code = await client.waitForAsyncRun(run, {
        timeoutMs: 30_000,
        onOutput: (text) => output.push(text),
      });
      expect(code).toBe(-15);
      expect(output.join('')).toBe('before\n');
      // Deleted (best-effort) only after the observed exit.
      expect(remove).toHaveBeenCalledWith(run.name);
      await expect(client.getApplication(run.name)).rejects.toBeInstanceOf(API_ERRORS.app_not_found);
    } finally {
      await client.close();
    }
  });

  it('S7: responses immediately after send are not dropped (200 concurrent requests)', async () => {
    const client = await open(kind);
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, () => client.getSelf()));
      expect(answers.every((a) => a.principal_id === 'test-admin')).toBe(true);
      expect(persistent(client).demux.pendingRequests).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('S8: an app removed while waiting gives AppRemovedError and no delete attempt', async () => {
    const client = await open(kind);
    const other = await connect({ url: daemon.restUrl, ca: daemon.ca, token: admin });
    try {
      const run = await client.run({ command: 'sleep 300', shell: true });
      const subscribed = onSubscribed(client);
      const remove = vi.spyOn(client, 'deleteApplication');
      const confirm = vi.spyOn(client, 'getApplication');
      // The handler is attached at once: the rejection may come before the delete call returns.
      const wait = client.waitForAsyncRun(run, { timeoutMs: 30_000 }).catch((error: unknown) => error);
      await subscribed;
      await other.deleteApplication(run.name);
      expect(await wait).toBeInstanceOf(AppRemovedError);
      expect(remove).not.toHaveBeenCalled();
      // The daemon publishes REMOVED and no EXIT for the process the delete stops: no round trip.
      expect(confirm).not.toHaveBeenCalled();
    } finally {
      await other.close();
      await client.close();
    }
  });
});

describe('S2: disconnect during the run-wait', () => {
  it.each([['tcp'], ['wss']] as const)(
    'over %s the wait unblocks promptly with TransportDisconnectedError',
    async (kind) => {
      await using own = await startTestDaemon();
      const token = await own.token('admin');
      const client = await open(kind, own, token);
      try {
        const run = await client.run({ command: 'sleep 300', shell: true });
        const subscribed = onSubscribed(client);
        const remove = vi.spyOn(client, 'deleteApplication');
        // The handler is attached at once: the rejection may come before kill() returns.
        const wait = client.waitForAsyncRun(run, { timeoutMs: 60_000 }).catch((error: unknown) => error);
        await subscribed;
        const killedAt = Date.now();
        await own.kill();
        expect(await wait).toBeInstanceOf(TransportDisconnectedError);
        expect(Date.now() - killedAt).toBeLessThan(5_000);
        expect(remove).not.toHaveBeenCalled();
        await persistent(client).closed;
      } finally {
        await client.close();
      }
    },
  );
});
