import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../credentials/master-key.ts';
import { KEY_ROTATION_MS, SigningKeyRing } from './keys.ts';
import { IdentityState, MAX_PERSISTED_MODELS, identityStateDir } from './state-file.ts';

let work: string;
let t: number;
const now = (): number => t;
const box = createSecretBox(randomBytes(32));

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-identity-state-'));
  t = 1_800_000_000_000;
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('IdentityState', () => {
  it('keeps the signing keys (encrypted, 0600) and rotation still happens after a restart', async () => {
    const first = await IdentityState.open(work, box, { now });
    const ring = new SigningKeyRing({ now });
    await first.saveKeys(ring.snapshot());
    await first.close();
    const file = join(identityStateDir(work), 'keys.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    t += KEY_ROTATION_MS - 1000; // restarted just before the key is due
    const second = await IdentityState.open(work, box, { now });
    expect(second.cookieKeys).toEqual(first.cookieKeys);
    const restored = new SigningKeyRing({ now, restore: second.keys });
    expect(restored.activeKid).toBe(ring.activeKid);
    expect(restored.publicJwks()).toEqual(ring.publicJwks());
    t += 1000;
    expect(restored.update()).toBe(true);
    expect(restored.activeKid).not.toBe(ring.activeKid);
    expect(restored.publicJwks().keys.map((k) => k.kid)).toContain(ring.activeKid);
    expect(restored.rotations).toBe(1);
  });

  it('a restored ring whose key expired long ago rotates at once', async () => {
    const state = await IdentityState.open(work, box, { now });
    const ring = new SigningKeyRing({ now });
    await state.saveKeys(ring.snapshot());
    t += 3 * KEY_ROTATION_MS;
    const restored = new SigningKeyRing({
      now,
      restore: (await IdentityState.open(work, box, { now })).keys,
    });
    expect(restored.activeKid).not.toBe(ring.activeKid);
  });

  it('keeps models with their expiry, not interactions; expired entries are not loaded', async () => {
    const state = await IdentityState.open(work, box, { now });
    const tokens = state.models.adapterFor('RefreshToken');
    await tokens.upsert('long', { grantId: 'g1', accountId: 'admin' }, 3600);
    await tokens.upsert('short', { grantId: 'g1', accountId: 'admin' }, 10);
    await state.models.adapterFor('Interaction').upsert('i1', { uid: 'u1' }, 3600);
    await state.models.adapterFor('DeviceCode').upsert('d1', { userCode: 'ABCD-EFGH' }, 600);
    await state.close();

    t += 11_000;
    const reopened = await IdentityState.open(work, box, { now });
    const again = reopened.models.adapterFor('RefreshToken');
    expect(await again.find('long')).toEqual({ grantId: 'g1', accountId: 'admin' });
    expect(await again.find('short')).toBeUndefined();
    expect(await reopened.models.adapterFor('Interaction').find('i1')).toBeUndefined();
    expect(await reopened.models.adapterFor('DeviceCode').findByUserCode('ABCD-EFGH')).toEqual({
      userCode: 'ABCD-EFGH',
    });
    // Revoking the grant after the restart still ends its tokens (the index was rebuilt).
    await again.revokeByGrantId('g1');
    expect(await again.find('long')).toBeUndefined();
  });

  it('writes at most MAX_PERSISTED_MODELS entries (the newest)', async () => {
    const state = await IdentityState.open(work, box, { now });
    const codes = state.models.adapterFor('Session');
    for (let i = 0; i < MAX_PERSISTED_MODELS + 50; i += 1) await codes.upsert(`s${i}`, { n: i }, 3600);
    await state.close();
    const reopened = await IdentityState.open(work, box, { now });
    expect(reopened.models.size).toBe(MAX_PERSISTED_MODELS);
    expect(await reopened.models.adapterFor('Session').find('s0')).toBeUndefined();
    expect(await reopened.models.adapterFor('Session').find(`s${MAX_PERSISTED_MODELS + 49}`)).toBeDefined();
  });

  it('a file encrypted with another key is set aside and the state starts empty', async () => {
    const state = await IdentityState.open(work, box, { now });
    await state.models.adapterFor('Grant').upsert('g', { accountId: 'admin' }, 3600);
    await state.saveKeys(new SigningKeyRing({ now }).snapshot());
    await state.close();
    const errors: unknown[] = [];
    const other = await IdentityState.open(work, createSecretBox(randomBytes(32)), {
      now,
      onError: (error) => errors.push(error),
    });
    expect(other.keys).toBeUndefined();
    expect(other.models.size).toBe(0);
    expect(errors).toHaveLength(2);
    expect((await readdir(identityStateDir(work))).sort()).toEqual([
      'keys.json.unreadable',
      'models.json.unreadable',
    ]);
  });
});
