import { describe, expect, it } from 'vitest';
import { authorizationAnswer, authorizationUrl, codeChallenge, endSessionUrl, renewalDelay, routedMetadata, SCOPE, tokenSetOf } from './oidc.ts';

const ISSUER = 'http://127.0.0.1:6062/auth';
const DOC = {
  issuer: ISSUER,
  authorization_endpoint: `${ISSUER}/auth`,
  token_endpoint: `${ISSUER}/token`,
  end_session_endpoint: `${ISSUER}/session/end`,
  revocation_endpoint: `${ISSUER}/token/revocation`,
  jwks_uri: 'https://elsewhere.example/jwks',
};

describe('OIDC helpers', () => {
  it("moves the issuer's endpoints onto the agent's /auth route, leaving others", () => {
    const routed = routedMetadata(DOC, ISSUER, 'https://host:6060/auth');
    expect(routed.issuer).toBe(ISSUER);
    expect(routed.authorization_endpoint).toBe('https://host:6060/auth/auth');
    expect(routed.token_endpoint).toBe('https://host:6060/auth/token');
    expect((routed as unknown as Record<string, string>)['jwks_uri']).toBe('https://elsewhere.example/jwks');
  });

  it('refuses a document of another issuer or without endpoints', () => {
    expect(() => routedMetadata({ ...DOC, issuer: 'https://evil.example' }, ISSUER, 'x')).toThrow(/evil/);
    expect(() => routedMetadata({ issuer: ISSUER }, ISSUER, 'x')).toThrow(/authorization_endpoint/);
  });

  it('builds the authorization request with PKCE S256 and the API audience', async () => {
    const challenge = await codeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk');
    expect(challenge).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'); // RFC 7636 appendix B
    const url = new URL(authorizationUrl(routedMetadata(DOC, ISSUER, 'https://h/auth'), { clientId: 'svc-web', redirectUri: 'https://h/', state: 's', challenge, prompt: 'none' }));
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'svc-web',
      redirect_uri: 'https://h/',
      scope: SCOPE,
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      response_mode: 'fragment',
      prompt: 'none',
    });
  });

  it('reads the answer from the fragment or the query, and nothing else', () => {
    expect(authorizationAnswer('', '#code=c1&state=s1')?.get('code')).toBe('c1');
    expect(authorizationAnswer('?code=c2&state=s2', '#/apps')?.get('code')).toBe('c2');
    expect(authorizationAnswer('', '#error=login_required&state=s')?.get('error')).toBe('login_required');
    expect(authorizationAnswer('', '#/app/x?code=1')).toBeUndefined();
    expect(authorizationAnswer('?code=1', '')).toBeUndefined();
    expect(authorizationAnswer('', '')).toBeUndefined();
  });

  it('keeps tokens out of the end-session URL', () => {
    const url = endSessionUrl(routedMetadata(DOC, ISSUER, 'https://h/auth'), { clientId: 'svc-web', postLogoutRedirectUri: 'https://h/' });
    expect(url).toBe('https://h/auth/session/end?client_id=svc-web&post_logout_redirect_uri=https%3A%2F%2Fh%2F');
  });

  it('reads token answers, keeping the previous refresh token when none is rotated in', () => {
    const first = tokenSetOf({ access_token: 'a1', refresh_token: 'r1', expires_in: 900 }, 1000);
    expect(first).toEqual({ accessToken: 'a1', refreshToken: 'r1', idToken: undefined, expiresAt: 901_000 });
    expect(tokenSetOf({ access_token: 'a2', expires_in: 900 }, 2000, first).refreshToken).toBe('r1');
    expect(tokenSetOf({ access_token: 'a3', expires_in: -5 }, 0).expiresAt).toBe(300_000);
    expect(() => tokenSetOf({ access_token: '' }, 0)).toThrow(/no access token/);
    expect(() => tokenSetOf({}, 0)).toThrow();
  });

  it('renews 60 s before expiry, earlier for short tokens, never in the past', () => {
    expect(renewalDelay({ expiresAt: 900_000 }, 0, 0)).toBe(840_000);
    expect(renewalDelay({ expiresAt: 100_000 }, 0, 0)).toBe(75_000);
    expect(renewalDelay({ expiresAt: 900_000 }, 0, 899_000)).toBe(0);
  });
});
