// Every grant of the built-in issuer, driven by openid-client 6 (a certified relying-party library)
// and, for the browser steps, by plain HTTP following the sign-in forms.
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE_SCOPE } from '../../src/provider/index.ts';
import {
  ADMIN_HASH,
  ADMIN_PASSWORD,
  AUTOMATION_SECRET,
  FormBrowser,
  decodeJwt,
  discover,
  formOf,
  oauthErrorOf,
  passwordGrant,
  signInAndConsent,
  startTestIdentity,
} from './helpers.ts';

const SCOPE = `openid ${AUDIENCE_SCOPE}`;
type Started = Awaited<ReturnType<typeof startTestIdentity>>;

describe('svc-identity grants', () => {
  let idp: Started;
  beforeAll(async () => {
    idp = await startTestIdentity();
  });
  afterAll(async () => {
    await idp.close();
  });

  it('publishes discovery under the issuer path with the issuer it was configured with', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(idp.issuer);
    expect(metadata.token_endpoint).toBe(`${idp.issuer}/token`);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining(['password', 'client_credentials', 'refresh_token', 'authorization_code']),
    );
  });

  it('password grant (Basic with client id and empty secret): JWT for svc-api, sub = user_id, exp - iat = 900', async () => {
    const { status, body } = await passwordGrant(idp.issuer, {
      grant_type: 'password',
      username: 'admin@svc.local',
      password: ADMIN_PASSWORD,
      scope: SCOPE,
    });
    expect(status).toBe(200);
    const { header, payload } = decodeJwt(body['access_token'] as string);
    expect(header['alg']).toBe('RS256');
    expect(header['typ']).toBe('at+jwt');
    expect(payload['aud']).toBe('svc-api');
    expect(payload['iss']).toBe(idp.issuer);
    expect(payload['sub']).toBe('admin');
    expect(payload['email']).toBe('admin@svc.local');
    expect(payload['preferred_username']).toBe('admin');
    expect((payload['exp'] as number) - (payload['iat'] as number)).toBe(900);
    expect(body['expires_in']).toBe(900);
  });

  it('password grant through openid-client with the username', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const tokens = await oidc.genericGrantRequest(config, 'password', {
      username: 'guest',
      password: 'guest password 1',
      scope: SCOPE,
    });
    expect(decodeJwt(tokens.access_token).payload['sub']).toBe('guest');
  });

  it('a wrong password, the leftover hash as the password and a password over 72 bytes are 401', async () => {
    for (const password of ['wrong', ADMIN_HASH, ADMIN_PASSWORD + 'x'.repeat(80)]) {
      const { status, body } = await passwordGrant(idp.issuer, {
        grant_type: 'password',
        username: 'admin',
        password,
        scope: SCOPE,
      });
      expect(status).toBe(401);
      expect(body['error']).toBe('invalid_grant');
      expect(JSON.stringify(body)).not.toContain(password.slice(0, 12));
    }
  });

  it('an unrecognized scope is 400 invalid_request (misspelled, or with "=")', async () => {
    for (const scope of [
      'openid audience:server:client_id=svc-api',
      'openid audience:server:client-id:svc-api',
    ]) {
      const { status, body } = await passwordGrant(idp.issuer, {
        grant_type: 'password',
        username: 'admin',
        password: ADMIN_PASSWORD,
        scope,
      });
      expect(status).toBe(400);
      expect(body['error']).toBe('invalid_request');
      expect(body['error_description']).toMatch(/unrecognized scope/);
    }
    const automation = await discover(idp.issuer, 'svc-automation', AUTOMATION_SECRET);
    const refused = await oauthErrorOf(
      oidc.clientCredentialsGrant(automation, { scope: 'audience:server:client_id=svc-api' }),
    );
    expect(refused.error).toBe('invalid_request');
    expect(refused.description).toMatch(/unrecognized scope/);
  });

  it("accepts Dex's scope set (CONTRACT §8) on the token endpoint and the authorization endpoint", async () => {
    const dex = `openid email profile groups offline_access federated:id ${AUDIENCE_SCOPE} audience:server:client_id:svc-cli`;
    const { status, body } = await passwordGrant(idp.issuer, {
      grant_type: 'password',
      username: 'admin',
      password: ADMIN_PASSWORD,
      scope: dex,
    });
    expect(status).toBe(200);
    expect(decodeJwt(body['access_token'] as string).payload['aud']).toBe('svc-api');
    expect(body['refresh_token']).toBeTypeOf('string');
    const config = await discover(idp.issuer, 'svc-cli');
    const page = await new FormBrowser().follow(
      oidc.buildAuthorizationUrl(config, {
        redirect_uri: 'http://127.0.0.1:49152/callback',
        scope: dex,
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      }).href,
    );
    expect(page.status).toBe(200);
    expect(page.html).toContain('Sign in to svc');
    // Outside the set: an audience scope of a client the issuer does not have, and near misses.
    for (const scope of ['openid audience:server:client_id:svc-apj', 'openid group', 'openid federated:ID']) {
      const refused = await passwordGrant(idp.issuer, {
        grant_type: 'password',
        username: 'admin',
        password: ADMIN_PASSWORD,
        scope,
      });
      expect(refused.status).toBe(400);
      expect(refused.body['error']).toBe('invalid_request');
    }
  });

  it('client credentials for svc-automation: sub = client id (principal client:svc-automation in svcd)', async () => {
    const config = await discover(idp.issuer, 'svc-automation', AUTOMATION_SECRET);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: AUDIENCE_SCOPE });
    const { payload } = decodeJwt(tokens.access_token);
    expect(payload['aud']).toBe('svc-api');
    expect(payload['client_id']).toBe('svc-automation');
    expect(payload['sub']).toBe('svc-automation');
    expect((payload['exp'] as number) - (payload['iat'] as number)).toBe(900);
    const wrong = await discover(idp.issuer, 'svc-automation', 'not-the-secret-0123456789abcdef');
    const refused = await oauthErrorOf(oidc.clientCredentialsGrant(wrong, { scope: AUDIENCE_SCOPE }));
    expect(refused.error).toBe('invalid_client');
  });

  it('a public client cannot use client credentials', async () => {
    const { status, body } = await passwordGrant(idp.issuer, {
      grant_type: 'client_credentials',
      scope: AUDIENCE_SCOPE,
    });
    expect(status).toBe(400);
    expect(body['access_token']).toBeUndefined();
  });

  it('authorization code + PKCE (S256) through the sign-in and consent pages', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const redirect = 'http://127.0.0.1:49152/callback'; // RFC 8252: any loopback port
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const browser = new FormBrowser();
    const loginPage = await browser.follow(url.href);
    expect(loginPage.status).toBe(200);
    expect(loginPage.html).toContain('Sign in to svc');

    // A failed sign-in stays on the form with 401.
    const login = formOf(loginPage.html, loginPage.url, /\/login$/);
    const failed = await browser.request(login.action, { username: 'admin', password: ADMIN_HASH });
    expect(failed.status).toBe(401);
    const retry = { url: loginPage.url, html: await failed.text() };

    const done = await signInAndConsent(
      browser,
      retry,
      { username: 'admin', password: ADMIN_PASSWORD },
      redirect,
    );
    expect(done.url.startsWith(redirect)).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(done.url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const { payload } = decodeJwt(tokens.access_token);
    expect(payload['aud']).toBe('svc-api');
    expect(payload['sub']).toBe('admin');
    expect(tokens.claims()?.sub).toBe('admin');
    expect(tokens.refresh_token).toBeTypeOf('string');
  });

  it('svc-web (registered redirect) and svc-mcp-user (loopback) reach the sign-in page; unknown scopes do not', async () => {
    const cases = [
      { client: 'svc-web', redirect: 'https://127.0.0.1:6060/auth/callback' },
      { client: 'svc-mcp-user', redirect: 'http://127.0.0.1:61000/callback' },
    ];
    for (const { client, redirect } of cases) {
      const config = await discover(idp.issuer, client);
      const params = {
        redirect_uri: redirect,
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      };
      const page = await new FormBrowser().follow(
        oidc.buildAuthorizationUrl(config, { ...params, scope: SCOPE }).href,
      );
      expect(page.status).toBe(200);
      expect(page.html).toContain('Sign in to svc');
      const refused = await new FormBrowser().request(
        oidc.buildAuthorizationUrl(config, { ...params, scope: 'openid audience:server:client_id=svc-api' })
          .href,
      );
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toBe('invalid_request');
    }
  });

  it('authorization requests without PKCE are refused', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:5000/callback',
      scope: SCOPE,
    });
    const response = await new FormBrowser().request(url.href);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toMatch(/error=invalid_request/);
  });

  it('device authorization completed through the forms', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const device = await oidc.initiateDeviceAuthorization(config, { scope: SCOPE });
    const pending = oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:device_code', {
      device_code: device.device_code,
    });
    expect((await oauthErrorOf(pending)).error).toBe('authorization_pending');

    const browser = new FormBrowser();
    const entry = await browser.follow(device.verification_uri);
    const codeForm = formOf(entry.html, entry.url, /\/device$/);
    const confirmPage = await browser.follow(codeForm.action, {
      ...codeForm.fields,
      user_code: device.user_code,
    });
    expect(confirmPage.html).toContain(device.user_code);
    const confirm = formOf(confirmPage.html, confirmPage.url, /\/device$/);
    const loginPage = await browser.follow(confirm.action, { ...confirm.fields, confirm: 'yes' });
    const finished = await signInAndConsent(browser, loginPage, {
      username: 'guest',
      password: 'guest password 1',
    });
    expect(finished.status).toBe(200);

    const tokens = await oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:device_code', {
      device_code: device.device_code,
    });
    const { payload } = decodeJwt(tokens.access_token);
    expect(payload['sub']).toBe('guest');
    expect(payload['aud']).toBe('svc-api');
  });

  it('telemetry /healthz counts without exposing secrets', async () => {
    const response = await fetch(`http://127.0.0.1:${idp.ports.telemetry}/healthz`);
    expect(response.status).toBe(200);
    const text = await response.text();
    const body = JSON.parse(text) as { status: string; counters: Record<string, number>; active_kid: string };
    expect(body.status).toBe('ok');
    expect(body.counters['tokens_issued.password']).toBeGreaterThan(0);
    expect(body.counters['logins_failed']).toBeGreaterThan(0);
    expect(body.counters['unknown_scope_rejected']).toBeGreaterThan(0);
    expect(body.active_kid).toBe(idp.provider.keys.activeKid);
    expect(text).not.toContain(ADMIN_PASSWORD);
    expect(text).not.toContain(AUTOMATION_SECRET);
  });
});

describe('svc-identity with the password flow turned off', () => {
  it('rejects grant_type=password; client credentials still work', async () => {
    const idp = await startTestIdentity({ passwordFlow: false });
    try {
      const { status, body } = await passwordGrant(idp.issuer, {
        grant_type: 'password',
        username: 'admin',
        password: ADMIN_PASSWORD,
        scope: SCOPE,
      });
      expect(status).toBe(400);
      expect(body['error']).toBe('unsupported_grant_type');
      const config = await discover(idp.issuer, 'svc-automation', AUTOMATION_SECRET);
      expect((await oidc.clientCredentialsGrant(config, { scope: AUDIENCE_SCOPE })).access_token).toBeTypeOf(
        'string',
      );
      expect(config.serverMetadata().grant_types_supported).not.toContain('password');
    } finally {
      await idp.close();
    }
  });
});
