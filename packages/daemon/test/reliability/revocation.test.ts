// A persistent connection loses its subscriptions and is closed when its principal is tombstoned
// (DELETE /svc/principal/<id>) or when the latest token it presented expires (issue "Tombstoned
// principals keep their subscriptions", reproduced on a real daemon: before the fix the
// subscription of a deleted principal still delivered events).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type PersistentClient, type TestDaemon } from '@svc/testkit';
import { eventsOf, ok, subscribe, waitEvents, waitFor } from '../events/helpers.ts';

let daemon: TestDaemon;
let admin: string;
let toggles = 0;

beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
  const rest = daemon.rest();
  ok(
    await rest.call('POST', '/svc/role/listener', { token: admin, body: ['app-subscribe', 'app-view-all'] }),
  );
  ok(await rest.call('PUT', '/svc/app/beacon', { token: admin, body: { command: 'sleep 600' } }));
});
afterAll(async () => {
  await daemon?.close();
});

async function listener(id: string): Promise<void> {
  ok(
    await daemon.rest().call('POST', `/svc/principal/${id}`, { token: admin, body: { roles: ['listener'] } }),
  );
}

/** Resolves when `promise` does, or fails naming `what` after `ms`. */
async function within(promise: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  await Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** `exp` of a JWT, in epoch milliseconds. */
function expiryMs(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as {
    exp: number;
  };
  return payload.exp * 1000;
}

/** One STATUS event of `beacon` (disable or enable, alternately). */
async function toggle(): Promise<void> {
  toggles++;
  ok(
    await daemon
      .rest()
      .call('POST', `/svc/app/beacon/${toggles % 2 === 1 ? 'disable' : 'enable'}`, { token: admin }),
  );
}

/** An admin subscription on its own connection: proof that an event was published. */
async function witness(): Promise<{ client: PersistentClient; id: string }> {
  const client = await daemon.tcp();
  const { subscription_id } = await subscribe(client, admin, 'beacon', 'STATUS');
  return { client, id: subscription_id };
}

describe('tombstoning a principal', () => {
  for (const transport of ['tcp', 'wss'] as const) {
    it(`ends its subscriptions and closes its ${transport} connection; others keep theirs`, async () => {
      const id = `doomed-${transport}`;
      await listener(id);
      const token = await daemon.issuer.mint({ sub: id });
      const client = transport === 'tcp' ? await daemon.tcp() : await daemon.wss(token);
      const { subscription_id } = await subscribe(client, token, 'beacon', 'STATUS');
      const seen = await witness();
      await toggle();
      await waitEvents(client, subscription_id, (e) => e.length === 1, 'the first STATUS event');

      const deletedAt = Date.now();
      ok(await daemon.rest().call('DELETE', `/svc/principal/${id}`, { token: admin }));
      await within(client.closed, 15_000, 'the connection to close');
      console.log(`[reliability] revocation: ${transport} closed ${Date.now() - deletedAt} ms after DELETE`);
      await toggle();
      await waitEvents(seen.client, seen.id, (e) => e.length === 2, 'the witness to see the second event');
      expect(eventsOf(client, subscription_id)).toHaveLength(1);
      // A new connection of the tombstoned principal is refused.
      const again = await daemon.tcp();
      const refused = await again.call('POST', '/svc/app/beacon/subscribe', { token });
      expect(refused.status).toBe(403);
      expect(refused.json()).toMatchObject({ error: 'principal_tombstoned' });
      await again.close();
      await seen.client.close();
    });
  }
});

describe('expiry of the token a connection was authenticated with', () => {
  it('ends the subscriptions and closes the connection at the exp', async () => {
    await listener('short-lived');
    const token = await daemon.issuer.mint({ sub: 'short-lived', expiresIn: 4 });
    const expiresAtMs = expiryMs(token);
    const client = await daemon.tcp();
    const { subscription_id } = await subscribe(client, token, 'beacon', 'STATUS');
    const seen = await witness();
    await toggle();
    await waitEvents(client, subscription_id, (e) => e.length === 1, 'an event while the token is valid');
    await within(client.closed, 20_000, 'the connection to close');
    // Not before the expiry.
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAtMs);
    console.log(`[reliability] revocation: tcp closed ${Date.now() - expiresAtMs} ms after the token's exp`);
    await toggle();
    await waitEvents(seen.client, seen.id, (e) => e.length === 2, 'the witness to see the next event');
    expect(eventsOf(client, subscription_id)).toHaveLength(1);
    await seen.client.close();
  });

  it('a fresher token presented on the connection keeps it (and its subscriptions) alive', async () => {
    await listener('refresher');
    const first = await daemon.issuer.mint({ sub: 'refresher', expiresIn: 3 });
    const firstExpiryMs = expiryMs(first);
    const client = await daemon.tcp();
    const { subscription_id } = await subscribe(client, first, 'beacon', 'STATUS');
    const fresh = await daemon.issuer.mint({ sub: 'refresher', expiresIn: 600 });
    ok(await client.call('GET', '/svc/principal/self', { token: fresh }));
    // Wait (on the clock, a condition) until the first token is past its expiry and tolerance.
    await waitFor(() => Date.now() > firstExpiryMs + 7_000, {
      what: 'the first token to expire',
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    await toggle();
    await waitEvents(client, subscription_id, (e) => e.length === 1, 'an event after the first expiry');
    const status = await client.call('GET', '/svc/principal/self', { token: fresh });
    expect(status.status).toBe(200);
    await client.close();
  });
});
