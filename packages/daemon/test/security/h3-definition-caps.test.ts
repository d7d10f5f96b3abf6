// Issue 25 H3 against a real svcd: 10 apps with 15 MB of `env` each, then 6 concurrent viewers of
// `GET /svc/applications`. Before: accepted, peak 2.48 GB, 1.3 GB kept. Must be: definitions
// bounded (documented caps: env and secret_env 1 MiB together, metadata 1 MiB, command 64 KiB,
// 2 MiB per definition, a 4 MiB body), refused with invalid_app (a body larger than any definition
// with 413 from its head) and never truncated; and a large listing never
// copied per reader (the definition parts are serialized once and shared), keeping the JSON array.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { LIMITS } from '../../src/model/app-definition.ts';
import { rssKiB } from '../reliability/helpers.ts';
import { MiB, rssSampler } from './helpers.ts';

let daemon: TestDaemon;
let admin: string;

beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
}, 60_000);
afterAll(async () => {
  await daemon?.close();
});

/** `count` variables of `valueBytes` each. */
function env(count: number, valueBytes: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`V${i}`, 'x'.repeat(valueBytes)]));
}

describe('H3: bounded definitions and a shared listing', () => {
  it('refuses a definition with 15 MB of env from its head (413), and one over the env cap with invalid_app; registers nothing', async () => {
    const rest = daemon.rest();
    const before = rssKiB(daemon.pid);
    for (let i = 0; i < 10; i++) {
      const answer = await rest.call('PUT', `/svc/app/big${i}`, {
        token: admin,
        body: { command: 'sleep 600', enabled: false, env: env(229, 64 * 1024) }, // 15 MB
      });
      // Larger than any definition can be (LIMITS.definitionBodyBytes): refused before it is read.
      expect(answer.status).toBe(413);
      expect(answer.json<{ error: string }>().error).toBe('payload_too_large');
    }
    const after = rssKiB(daemon.pid);
    // Under the body cap but over the env cap: the validation's own error, nothing truncated.
    const over = await rest.call('PUT', '/svc/app/over', {
      token: admin,
      body: { command: 'true', enabled: false, env: env(24, 64 * 1024) }, // 1.5 MiB
    });
    expect(over.status).toBe(400);
    const body = over.json<{ error: string; message: string }>();
    expect(body.error).toBe('invalid_app');
    expect(body.message).toMatch(/^env: env and secret_env together must be at most 1048576 bytes/);
    // secret_env counts with env: each half fits the cap, together they do not.
    const split = await rest.call('PUT', '/svc/app/split', {
      token: admin,
      body: { command: 'true', enabled: false, env: env(8, 64 * 1024), secret_env: env(9, 64 * 1024) },
    });
    expect(split.status).toBe(400);
    for (const name of ['big0', 'over', 'split'])
      expect((await rest.call('GET', `/svc/app/${name}`, { token: admin })).status).toBe(404);
    console.log(
      `[security] H3: 10 PUTs with 15 MB of env: 413 from the head each, none registered; RSS ${before >> 10} → ${after >> 10} MiB`,
    );
    // Before: each 15 MB body was read and parsed (+174 MiB for ten). Now none is read.
    expect(after - before).toBeLessThan(16 * 1024);
  }, 120_000);

  it('serves 6 concurrent viewers a listing of 10 definitions at the cap from shared parts; the array is whole', async () => {
    const rest = daemon.rest();
    // 15 × 64 KiB = 960 KiB of env per app: just under LIMITS.envTotalBytes.
    const atCap = env(15, 64 * 1024);
    for (let i = 0; i < 10; i++) {
      const put = await rest.call('PUT', `/svc/app/full${i}`, {
        token: admin,
        body: { command: 'true', enabled: false, env: atCap },
      });
      expect(put.status).toBe(200);
    }
    const viewer = await daemon.token('viewer');
    // Once, so that the definition parts exist; then what readers add is measured.
    const first = await rest.call('GET', '/svc/applications', { token: viewer });
    const listing = first.json<{ name: string; env: Record<string, string>; state?: string }[]>();
    expect(Array.isArray(listing)).toBe(true);
    const full = listing.filter((app) => app.name.startsWith('full'));
    expect(full).toHaveLength(10);
    for (const app of full) {
      expect(app.env).toEqual(atCap);
      expect(app.state).toBeDefined(); // runtime fields are joined to the shared definition part
    }
    const size = first.body.length;
    const before = rssKiB(daemon.pid);
    const sampler = rssSampler(daemon.pid, 5);
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => rest.call('GET', '/svc/applications', { token: viewer })),
      );
      for (const answer of answers) expect(answer.body.length).toBe(size);
    }
    const peak = sampler.stop();
    // Over TCP (the parts written into one frame) and WSS (one fragmented message): the same array.
    for (const client of [await daemon.tcp(), await daemon.wss(viewer)]) {
      const wire = await client.call('GET', '/svc/applications', { token: viewer });
      expect(wire.body.equals(first.body), client.kind).toBe(true);
      await client.close();
    }
    console.log(
      `[security] H3: 3 rounds of 6 concurrent viewers of a ${(size / MiB).toFixed(1)} MiB listing (10 apps at the env cap): RSS ${before >> 10} MiB before, ${peak >> 10} MiB peak`,
    );
    // A copy per reader is the listing twice (a JSON string, then its bytes) per reader: 6 × 2 ×
    // 9.6 MiB ≈ 115 MiB. Shared parts leave only the TLS records in flight per reader.
    expect(peak - before).toBeLessThan(64 * 1024);
    expect(LIMITS.envTotalBytes).toBe(MiB);
  }, 120_000);
});
