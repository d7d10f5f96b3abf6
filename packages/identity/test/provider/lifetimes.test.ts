// Refresh rotation with the 5-minute reuse window, and signing-key rotation, on a clock the test
// moves by hand (the provider's key ring and reuse window both read the injected clock).
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { JSONWebKeySet } from 'jose';
import * as oidc from 'openid-client';
import { afterEach, describe, expect, it } from 'vitest';
import { InMemorySessionRegistry } from '../../src/admin/sessions.ts';
import {
  AUDIENCE_SCOPE,
  KEY_ROTATION_MS,
  RefreshReuse,
  SigningKeyRing,
  startIdentityServer,
} from '../../src/provider/index.ts';
import {
  ADMIN_PASSWORD,
  AUTOMATION_SECRET,
  TestClock,
  decodeJwt,
  discover,
  memoryIdentityStore,
  oauthErrorOf,
  passwordGrant,
  startTestIdentity,
} from './helpers.ts';

const MINUTE = 60_000;
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function started(): Promise<Awaited<ReturnType<typeof startTestIdentity>>> {
  const idp = await startTestIdentity();
  close = () => idp.close();
  return idp;
}

async function adminRefreshToken(issuer: string): Promise<string> {
  const { status, body } = await passwordGrant(issuer, {
    grant_type: 'password',
    username: 'admin',
    password: ADMIN_PASSWORD,
    scope: `openid offline_access ${AUDIENCE_SCOPE}`,
  });
  expect(status).toBe(200);
  return body['refresh_token'] as string;
}

async function jwks(issuer: string): Promise<JSONWebKeySet> {
  return (await (await fetch(`${issuer}/jwks`)).json()) as JSONWebKeySet;
}

describe('refresh tokens', () => {
  it('rotate on every use; the access token stays a 900 s JWT for svc-api', async () => {
    const idp = await started();
    const config = await discover(idp.issuer, 'svc-cli');
    const r0 = await adminRefreshToken(idp.issuer);
    const first = await oidc.refreshTokenGrant(config, r0);
    const r1 = first.refresh_token as string;
    expect(r1).toBeTypeOf('string');
    expect(r1).not.toBe(r0);
    const second = await oidc.refreshTokenGrant(config, r1);
    expect(second.refresh_token).not.toBe(r1);
    const { payload } = decodeJwt(second.access_token);
    expect(payload['aud']).toBe('svc-api');
    expect(payload['sub']).toBe('admin');
    expect((payload['exp'] as number) - (payload['iat'] as number)).toBe(900);
  });

  it('a rotated token reused within 5 minutes answers the current token; later reuse revokes the grant', async () => {
    const idp = await started();
    const config = await discover(idp.issuer, 'svc-cli');
    const r0 = await adminRefreshToken(idp.issuer);
    const r1 = (await oidc.refreshTokenGrant(config, r0)).refresh_token as string;

    idp.clock.advance(4 * MINUTE);
    const reused = await oidc.refreshTokenGrant(config, r0);
    expect(reused.refresh_token).toBe(r1); // the current token, not a new branch
    expect(decodeJwt(reused.access_token).payload['sub']).toBe('admin');

    // The chain moves on: r1 → r2; r0 (rotated 4.5 min ago) still resolves to the newest, r2.
    idp.clock.advance(MINUTE / 2);
    const r2 = (await oidc.refreshTokenGrant(config, r1)).refresh_token as string;
    expect(r2).not.toBe(r1);
    expect((await oidc.refreshTokenGrant(config, r0)).refresh_token).toBe(r2);

    // Past the window for r0 (and r1): reuse is theft detection again — the grant is revoked.
    idp.clock.advance(6 * MINUTE);
    expect((await oauthErrorOf(oidc.refreshTokenGrant(config, r0))).error).toBe('invalid_grant');
    expect((await oauthErrorOf(oidc.refreshTokenGrant(config, r2))).error).toBe('invalid_grant');
    expect(idp.provider.telemetry.counter('refresh_reuse_answered')).toBe(2);
  });

  it('RefreshReuse follows chains and forgets rotations after the window', () => {
    const clock = new TestClock();
    const reuse = new RefreshReuse(clock.now, 5 * MINUTE);
    reuse.record('a', 'b');
    clock.advance(MINUTE);
    reuse.record('b', 'c');
    expect(reuse.current('a')).toBe('c');
    expect(reuse.current('b')).toBe('c');
    expect(reuse.current('c')).toBeUndefined();
    clock.advance(4 * MINUTE);
    expect(reuse.current('a')).toBeUndefined();
    expect(reuse.current('b')).toBe('c');
    clock.advance(MINUTE);
    expect(reuse.current('b')).toBeUndefined();
    expect(reuse.size).toBe(0);
  });
});

describe('signing keys', () => {
  it('rotate every 6 hours; the previous public key stays published until its tokens expired', async () => {
    const idp = await started();
    const first = await jwks(idp.issuer);
    expect(first.keys).toHaveLength(1);
    const k1 = first.keys[0]?.kid as string;
    expect(first.keys[0]).not.toHaveProperty('d'); // public parts only

    const { body: before } = await passwordGrant(idp.issuer, {
      grant_type: 'password',
      username: 'admin',
      password: ADMIN_PASSWORD,
      scope: `openid ${AUDIENCE_SCOPE}`,
    });
    const oldToken = before['access_token'] as string;
    expect(decodeJwt(oldToken).header['kid']).toBe(k1);

    idp.clock.advance(KEY_ROTATION_MS - 1);
    expect((await jwks(idp.issuer)).keys.map((k) => k.kid)).toEqual([k1]);

    idp.clock.advance(1);
    const rotated = await jwks(idp.issuer);
    expect(rotated.keys).toHaveLength(2);
    const k2 = rotated.keys[0]?.kid as string;
    expect(k2).not.toBe(k1);
    expect(rotated.keys[1]?.kid).toBe(k1);
    // Tokens signed before the rotation still verify against the published set.
    await expect(
      jwtVerify(oldToken, createLocalJWKSet(rotated), { audience: 'svc-api', issuer: idp.issuer }),
    ).resolves.toBeTruthy();

    const { body: after } = await passwordGrant(idp.issuer, {
      grant_type: 'password',
      username: 'admin',
      password: ADMIN_PASSWORD,
      scope: `openid ${AUDIENCE_SCOPE}`,
    });
    expect(decodeJwt(after['access_token'] as string).header['kid']).toBe(k2);

    // 15 minutes (+ skew) later every token of k1 has expired: k1 leaves the JWKS.
    idp.clock.advance(16 * MINUTE);
    const later = await jwks(idp.issuer);
    expect(later.keys.map((k) => k.kid)).toEqual([k2]);
    expect(idp.provider.keys.rotations).toBe(1);
  });

  it('SigningKeyRing schedules the next change', () => {
    const clock = new TestClock();
    let n = 0;
    const ring = new SigningKeyRing({
      now: clock.now,
      retainMs: 10 * MINUTE,
      generate: () => ({ kty: 'RSA', n: `n${++n}`, e: 'AQAB', d: 'secret' }),
    });
    expect(ring.msUntilNextChange()).toBe(KEY_ROTATION_MS);
    clock.advance(KEY_ROTATION_MS);
    expect(ring.update()).toBe(true);
    expect(ring.publicJwks().keys).toHaveLength(2);
    expect(JSON.stringify(ring.publicJwks())).not.toContain('secret');
    expect(ring.msUntilNextChange()).toBe(10 * MINUTE);
    clock.advance(10 * MINUTE);
    expect(ring.update()).toBe(true);
    expect(ring.providerJwks().keys).toHaveLength(1);
    expect(ring.update()).toBe(false);
  });
});

describe('grants as admin sessions', () => {
  it('a grant is listed with its subject; revoking it ends its refresh tokens', async () => {
    const sessions = new InMemorySessionRegistry();
    const idp = await startIdentityServer({
      issuerPort: 0,
      telemetryPort: 0,
      store: memoryIdentityStore(),
      automationSecret: AUTOMATION_SECRET,
      passwordFlow: true,
      sessions,
    });
    close = () => idp.close();
    const refresh = await adminRefreshToken(idp.issuer);
    const listed = sessions.list();
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ subject: 'admin', client_id: 'svc-cli', kind: 'grant' });
    expect(await sessions.revoke(listed[0]?.id as string)).toBe(true);
    expect(sessions.list()).toHaveLength(0);
    const config = await discover(idp.issuer, 'svc-cli');
    expect((await oauthErrorOf(oidc.refreshTokenGrant(config, refresh))).error).toBe('invalid_grant');
  });
});
