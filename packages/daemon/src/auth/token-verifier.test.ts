// The verifier against a real local issuer (an HTTP server on 127.0.0.1, port 0), not a mock.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SignJWT, generateKeyPair } from 'jose';
import { SvcError } from '@svc/protocol';
import { startTestIssuer } from '@svc/testkit';
import type { TestIssuer } from '@svc/testkit';
import { createOidcTokenVerifier, nodeFetch, principalFromClaims } from './token-verifier.ts';
import type { OidcTokenVerifierOptions } from './token-verifier.ts';

let issuer: TestIssuer;
let clock: number;

beforeEach(async () => {
  issuer = await startTestIssuer();
  clock = Date.now();
});
afterEach(async () => {
  await issuer.close();
});

function verifier(overrides: Partial<OidcTokenVerifierOptions> = {}) {
  return createOidcTokenVerifier({
    issuer: issuer.issuer,
    audience: 'svc-api',
    now: () => clock,
    ...overrides,
  });
}

/** Verifies and returns the SvcError, asserting that its message and cause chain never contain the token. */
async function rejection(promise: Promise<unknown>, token: string): Promise<SvcError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SvcError);
  const svcError = error as SvcError;
  if (token.length > 0) {
    expect(svcError.message).not.toContain(token);
    expect(JSON.stringify(svcError.toBody())).not.toContain(token);
    const signature = token.split('.')[2];
    if (signature !== undefined && signature.length > 8) expect(svcError.message).not.toContain(signature);
    let cause: unknown = svcError.cause;
    while (cause instanceof Error) {
      expect(cause.message).not.toContain(token);
      cause = cause.cause;
    }
  }
  return svcError;
}

describe('createOidcTokenVerifier', () => {
  it('accepts a valid user token and returns sub, exp and the client id', async () => {
    const token = await issuer.mint({ sub: 'user-42' });
    const result = await verifier().verify(token);
    expect(result.principalId).toBe('user-42');
    expect(result.clientId).toBe('svc-cli');
    expect(result.expiresAt).toBeGreaterThan(Math.floor(Date.now() / 1000) + 800);
  });

  it('accepts an array audience that contains svc-api', async () => {
    const token = await issuer.mint({ aud: ['other', 'svc-api'] });
    await expect(verifier().verify(token)).resolves.toMatchObject({ principalId: 'test-user' });
  });

  it('maps a client-credentials token to client:<client_id>', async () => {
    const token = await issuer.mint({ clientCredentials: 'svc-automation' });
    await expect(verifier().verify(token)).resolves.toMatchObject({
      principalId: 'client:svc-automation',
      clientId: 'svc-automation',
    });
  });

  it.each([
    ['expired', 'token expired'],
    ['wrong-aud', 'token claim "aud" rejected'],
    ['wrong-iss', 'token claim "iss" rejected'],
    ['none', 'token algorithm not allowed'],
    ['HS256-with-public-key', 'token algorithm not allowed'],
    ['tampered', 'token signature invalid'],
  ] as const)('refuses a %s token with invalid_token', async (kind, message) => {
    const token = await issuer.mintWith({ alg: kind });
    const error = await rejection(verifier().verify(token), token);
    expect(error.code).toBe('invalid_token');
    expect(error.status).toBe(401);
    expect(error.message).toContain(message);
  });

  it('refuses a token without exp', async () => {
    // `extra: { exp: undefined }` removes the claim (JSON drops undefined); the signature stays valid.
    const token = await issuer.mint({ extra: { exp: undefined } });
    const error = await rejection(verifier().verify(token), token);
    expect(error.code).toBe('invalid_token');
    expect(error.message).toContain('"exp"');
  });

  it.each([
    ['empty', ''],
    ['1 MB string', 'a'.repeat(1024 * 1024)],
    ['non-JWT', 'not a token at all'],
    ['JSON', JSON.stringify({ sub: 'admin', exp: 9999999999 })],
    ['two segments', 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9'],
    ['garbled base64', 'eyJhbGciOiJSUzI1NiJ9.!!!.abc'],
    ['header not JSON', 'bm90IGpzb24.eyJzdWIiOiJhZG1pbiJ9.c2ln'],
  ])('refuses garbage (%s) with invalid_token and no issuer request', async (_name, token) => {
    const error = await rejection(verifier().verify(token), token);
    expect(error.code).toBe('invalid_token');
    expect(issuer.requests.jwks).toBe(0);
  });

  it('with requiredTyp, refuses a JWT that is not marked as an access token', async () => {
    const v = verifier({ requiredTyp: 'at+jwt' });
    await expect(v.verify(await issuer.mint())).resolves.toMatchObject({ principalId: 'test-user' });
    const idTokenLike = await issuer.mint({ typ: 'JWT' });
    const error = await rejection(v.verify(idTokenLike), idTokenLike);
    expect(error.message).toBe('token is not an access token (header typ)');
  });

  it('refuses a token whose user sub impersonates a client principal', async () => {
    const token = await issuer.mint({ sub: 'client:svc-automation' });
    const error = await rejection(verifier().verify(token), token);
    expect(error.code).toBe('invalid_token');
  });

  it('refuses a token signed by a key the issuer never published, with one bounded refetch', async () => {
    const v = verifier();
    await v.verify(await issuer.mint());
    expect(issuer.requests.jwks).toBe(1);
    const token = await issuer.mintWith({ alg: 'unknown-kid' });
    const error = await rejection(v.verify(token), token);
    expect(error.code).toBe('invalid_token');
    expect(error.message).toBe('token signed by an unknown key');
    expect(issuer.requests.jwks).toBe(2);
  });

  it('after a key rotation, verifies a token of the new key after one refetch', async () => {
    const v = verifier();
    const before = await issuer.mint({ sub: 'before' });
    await expect(v.verify(before)).resolves.toMatchObject({ principalId: 'before' });
    expect(issuer.requests.jwks).toBe(1);

    await issuer.rotateKey();
    const after = await issuer.mint({ sub: 'after' });
    await expect(v.verify(after)).resolves.toMatchObject({ principalId: 'after' });
    expect(issuer.requests.jwks).toBe(2);
    expect(issuer.requests.discovery).toBe(1);
  });

  it('a storm of unknown-kid tokens causes at most one JWKS fetch per cooldown, shared in flight', async () => {
    const v = verifier({ jwksRefetchCooldownMs: 30_000 });
    await v.verify(await issuer.mint());
    const storm = await Promise.all(
      Array.from({ length: 20 }, () => issuer.mintWith({ alg: 'unknown-kid' })),
    );

    const results = await Promise.allSettled(storm.map((token) => v.verify(token)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(issuer.requests.jwks).toBe(2); // the initial load + one shared refetch

    // Within the cooldown: no further fetches, however many unknown kids arrive.
    clock += 29_000;
    await Promise.allSettled(storm.map((token) => v.verify(token)));
    expect(issuer.requests.jwks).toBe(2);

    // Cooldown over: exactly one more.
    clock += 1_001;
    await Promise.allSettled(storm.map((token) => v.verify(token)));
    expect(issuer.requests.jwks).toBe(3);
  });

  it('concurrent first verifications share one discovery and one JWKS fetch', async () => {
    const v = verifier();
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => issuer.mint({ sub: `u${i}` })));
    const results = await Promise.all(tokens.map((token) => v.verify(token)));
    expect(results.map((r) => r.principalId)).toEqual(tokens.map((_, i) => `u${i}`));
    expect(issuer.requests.discovery).toBe(1);
    expect(issuer.requests.jwks).toBe(1);
  });

  it('refuses a discovery document that names another issuer', async () => {
    issuer.setAdvertisedIssuer('http://127.0.0.1:9/evil');
    const token = await issuer.mint();
    const error = await rejection(verifier().verify(token), token);
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('discovery document names issuer');
    expect(issuer.requests.jwks).toBe(0);
  });

  it('reports an unreachable issuer as unavailable, then recovers lazily when it comes back', async () => {
    const token = await issuer.mint({ sub: 'late' });
    await issuer.stop();
    const v = verifier();
    const error = await rejection(v.verify(token), token);
    expect(error.code).toBe('unavailable');
    expect(error.status).toBe(503);

    // Within the retry window the error is answered without contacting the issuer again.
    await issuer.start();
    expect((await rejection(v.verify(token), token)).code).toBe('unavailable');
    expect(issuer.requests.discovery).toBe(0);

    clock += 1_000;
    await expect(v.verify(token)).resolves.toMatchObject({ principalId: 'late' });
    expect(issuer.requests.discovery).toBe(1);
  });

  it('retries a refused discovery document lazily and adopts it once it is right', async () => {
    issuer.setAdvertisedIssuer('http://127.0.0.1:9/evil');
    const token = await issuer.mint();
    const v = verifier();
    expect((await rejection(v.verify(token), token)).code).toBe('unavailable');
    issuer.setAdvertisedIssuer(undefined);
    clock += 1_000;
    await expect(v.verify(token)).resolves.toMatchObject({ principalId: 'test-user' });
  });

  it('drops cached verifications when a refetch shows that a key left the JWKS', async () => {
    const v = verifier();
    const old = await issuer.mint({ sub: 'old-key' });
    await v.verify(old);
    await issuer.rotateKey();
    await v.verify(await issuer.mint({ sub: 'new-key' })); // unknown kid → refetch → old key gone
    const error = await rejection(v.verify(old), old);
    expect(error.message).toBe('token signed by an unknown key');
  });

  it('caches verified tokens until exp, without further issuer requests or signature work', async () => {
    const token = await issuer.mint({ sub: 'cached', expiresIn: 60 });
    const v = verifier({ clockToleranceSec: 0 });
    const first = await v.verify(token);
    expect(await v.verify(token)).toBe(first); // the same frozen object: a cache hit

    clock += 61_000; // past exp: the cache entry is dropped and the token re-verified (and refused)
    const error = await rejection(v.verify(token), token);
    expect(error.message).toBe('token expired');
  });

  it('answers a repeated bearer from the cache in well under 10 µs amortised', async () => {
    const v = verifier();
    const token = await issuer.mint();
    await v.verify(token);
    const rounds = 20_000;
    const started = process.hrtime.bigint();
    for (let i = 0; i < rounds; i += 1) await v.verify(token);
    const perCallUs = Number(process.hrtime.bigint() - started) / 1000 / rounds;
    // Typically 1–3 µs here; the bound leaves room for a slow CI machine.
    expect(perCallUs).toBeLessThan(25);
  });

  it('verifyCached answers only a token verified before and not expired, without verifying', async () => {
    const v = verifier();
    const token = await issuer.mint({ expiresIn: 60 });
    expect(v.verifyCached(token)).toBeUndefined();
    const result = await v.verify(token);
    expect(v.verifyCached(token)).toBe(result);
    expect(v.verifyCached(`${token}x`)).toBeUndefined();
    v.clearCache();
    expect(v.verifyCached(token)).toBeUndefined();
    await v.verify(token);
    clock += 61_000;
    expect(v.verifyCached(token)).toBeUndefined();
  });

  it('bounds the cache: the least recently used entry is evicted', async () => {
    const v = verifier({ cacheSize: 2 });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((sub) => issuer.mint({ sub })));
    const ra = await v.verify(a!);
    const rb = await v.verify(b!);
    expect(await v.verify(a!)).toBe(ra); // a is now most recent
    await v.verify(c!); // evicts b
    expect(await v.verify(a!)).toBe(ra);
    expect(await v.verify(b!)).not.toBe(rb);
  });

  it('verifies tokens from an HTTPS issuer with a private CA', async () => {
    await using tlsIssuer = await startTestIssuer({ https: true, path: '/auth' });
    expect(tlsIssuer.issuer).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/auth$/);
    const v = createOidcTokenVerifier({
      issuer: tlsIssuer.issuer,
      audience: 'svc-api',
      caPem: tlsIssuer.caPem,
    });
    await expect(v.verify(await tlsIssuer.mint({ sub: 'tls-user' }))).resolves.toMatchObject({
      principalId: 'tls-user',
    });

    // Without the CA the certificate is not trusted: unavailable, not a token problem.
    const untrusted = createOidcTokenVerifier({ issuer: tlsIssuer.issuer, fetch: nodeFetch() });
    const token = await tlsIssuer.mint();
    expect((await rejection(untrusted.verify(token), token)).code).toBe('unavailable');
  });

  it('refuses a token signed with an allowed algorithm but a key not from the issuer under its kid', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({ sub: 'admin', aud: 'svc-api', iss: issuer.issuer })
      .setProtectedHeader({ alg: 'RS256', kid: issuer.kid })
      .setExpirationTime('5m')
      .sign(privateKey);
    const error = await rejection(verifier().verify(token), token);
    expect(error.message).toBe('token signature invalid');
  });
});

describe('principalFromClaims', () => {
  it.each([
    [{ sub: 'alice', client_id: 'svc-cli' }, 'alice'],
    [{ sub: 'alice', azp: 'svc-web' }, 'alice'],
    [{ sub: 'svc-automation', client_id: 'svc-automation' }, 'client:svc-automation'],
    [{ client_id: 'ci-bot' }, 'client:ci-bot'],
    [{ sub: 'abc@clients', azp: 'abc', gty: 'client-credentials' }, 'client:abc'],
    [{ sub: 'service-account-uuid', client_id: 'ci', gty: 'client_credentials' }, 'client:ci'],
    [{ sub: 'kc-uuid', azp: 'ci' }, 'kc-uuid'],
  ])('%j → %s', (claims, id) => {
    expect(principalFromClaims(claims).principalId).toBe(id);
  });

  it.each([
    [{}, 'token has no subject'],
    [{ gty: 'client_credentials', sub: 'x' }, 'client token names no client_id'],
    [{ sub: 'client:x' }, 'reserved prefix'],
    [{ sub: 'a\nb' }, 'control characters'],
    [{ sub: 'x'.repeat(300) }, 'too long'],
  ])('%j is refused', (claims, message) => {
    expect(() => principalFromClaims(claims)).toThrow(message);
  });
});
