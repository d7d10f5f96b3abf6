// TOTP second factor (issue 12 item 10) through the real issuer over HTTP: the browser (authorization
// code + PKCE) and device sign-in forms ask for the code after the password, codes are computed here
// as an authenticator app would; the password grant refuses such a user with invalid_grant.
import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/credentials/index.ts';
import { AUDIENCE_SCOPE, newTotpSecret, totpCode } from '../../src/provider/index.ts';
import {
  FormBrowser,
  decodeJwt,
  discover,
  formOf,
  memoryIdentityStore,
  passwordGrant,
  startTestIdentity,
} from './helpers.ts';

const SCOPE = `openid ${AUDIENCE_SCOPE}`;
const PASSWORD = 'mallory has mfa 1';
const box = createSecretBox(randomBytes(32));
const totp = newTotpSecret('mfa.user@example.org');
const USER = {
  user_id: '6f1c7e2a-1111-4222-8333-944445555666',
  username: 'mfa.user@example.org',
  email: 'mfa.user@example.org',
  password_hash: bcrypt.hashSync(PASSWORD, 10),
  static: false,
  created_at: '2026-01-01T00:00:00.000Z',
  mfa_enabled: true,
  mfa_secret: box.encrypt(totp.secret),
};

let idp: Awaited<ReturnType<typeof startTestIdentity>>;
beforeAll(async () => {
  idp = await startTestIdentity({ store: memoryIdentityStore([USER]), secrets: box });
});
afterAll(async () => {
  await idp?.close();
});

/** The code for the issuer's clock, `steps` periods away. */
const code = (steps = 0): string => totpCode(totp.secret, idp.clock.now() + steps * 30_000);

describe('TOTP second factor', () => {
  it('the password grant refuses a user with MFA: invalid_grant saying MFA is required', async () => {
    const { status, body } = await passwordGrant(idp.issuer, {
      grant_type: 'password',
      username: USER.email,
      password: PASSWORD,
      scope: SCOPE,
    });
    expect(status).toBe(400);
    expect(body['error']).toBe('invalid_grant');
    expect(body['error_description']).toMatch(/multi-factor authentication is required/);
    expect(body['access_token']).toBeUndefined();
    // A wrong password still answers 401 (the MFA answer needs the right password).
    const wrong = await passwordGrant(idp.issuer, {
      grant_type: 'password',
      username: USER.email,
      password: 'not it at all',
      scope: SCOPE,
    });
    expect(wrong.status).toBe(401);
  });

  it('authorization code + PKCE: password, then the code (a wrong or replayed code is refused)', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const redirect = 'http://127.0.0.1:49153/callback';
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const browser = new FormBrowser();
    const loginPage = await browser.follow(url.href);
    const login = formOf(loginPage.html, loginPage.url, /\/login$/);
    const codePage = await browser.follow(login.action, { username: USER.email, password: PASSWORD });
    expect(codePage.status).toBe(200);
    expect(codePage.html).toContain('Enter your code');
    const form = formOf(codePage.html, codePage.url, /\/totp$/);

    const wrong = await browser.request(form.action, { code: code(5) });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('not valid');
    const malformed = await browser.request(form.action, { code: '12ab56'.repeat(100) });
    expect(malformed.status).toBe(401);

    const consent = await browser.follow(form.action, { code: code() });
    const confirm = formOf(consent.html, consent.url, /\/confirm$/);
    const done = await browser.follow(confirm.action, confirm.fields, redirect);
    expect(done.url.startsWith(redirect)).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(done.url), {
      pkceCodeVerifier: verifier,
      expectedState: oidc.skipStateCheck,
    });
    expect(decodeJwt(tokens.access_token).payload['sub']).toBe(USER.user_id);

    // The same code again, in a new sign-in: refused (RFC 6238 §5.2).
    const again = new FormBrowser();
    const page2 = await again.follow(url.href);
    const login2 = formOf(page2.html, page2.url, /\/login$/);
    const code2 = await again.follow(login2.action, { username: USER.email, password: PASSWORD });
    const replay = await again.request(formOf(code2.html, code2.url, /\/totp$/).action, { code: code() });
    expect(replay.status).toBe(401);
  });

  it('device authorization: the code is asked after the password', async () => {
    idp.clock.advance(60_000); // a fresh step: the previous test used the current one
    const config = await discover(idp.issuer, 'svc-cli');
    const device = await oidc.initiateDeviceAuthorization(config, { scope: SCOPE });
    const browser = new FormBrowser();
    const entry = await browser.follow(device.verification_uri);
    const codeForm = formOf(entry.html, entry.url, /\/device$/);
    const confirmPage = await browser.follow(codeForm.action, {
      ...codeForm.fields,
      user_code: device.user_code,
    });
    const confirm = formOf(confirmPage.html, confirmPage.url, /\/device$/);
    const loginPage = await browser.follow(confirm.action, { ...confirm.fields, confirm: 'yes' });
    const login = formOf(loginPage.html, loginPage.url, /\/login$/);
    const totpPage = await browser.follow(login.action, { username: USER.email, password: PASSWORD });
    expect(totpPage.html).toContain('Enter your code');
    const consent = await browser.follow(formOf(totpPage.html, totpPage.url, /\/totp$/).action, {
      code: code(),
    });
    const finished = await browser.follow(formOf(consent.html, consent.url, /\/confirm$/).action, {});
    expect(finished.status).toBe(200);
    const tokens = await oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:device_code', {
      device_code: device.device_code,
    });
    expect(decodeJwt(tokens.access_token).payload['sub']).toBe(USER.user_id);
  });

  it('wrong codes count as failed sign-ins: the user is locked after 5', async () => {
    idp.clock.advance(60_000);
    const config = await discover(idp.issuer, 'svc-cli');
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:49154/callback',
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const browser = new FormBrowser();
    const loginPage = await browser.follow(url.href);
    const login = formOf(loginPage.html, loginPage.url, /\/login$/);
    const codePage = await browser.follow(login.action, { username: USER.email, password: PASSWORD });
    const action = formOf(codePage.html, codePage.url, /\/totp$/).action;
    for (let i = 0; i < 5; i += 1)
      expect((await browser.request(action, { code: '000000' })).status).toBe(401);
    const locked = await browser.request(action, { code: code() });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('the sign-in form locks a user after 5 wrong passwords: the right one is then 429', async () => {
    const config = await discover(idp.issuer, 'svc-cli');
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: 'http://127.0.0.1:49155/callback',
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    });
    const browser = new FormBrowser();
    const loginPage = await browser.follow(url.href);
    const action = formOf(loginPage.html, loginPage.url, /\/login$/).action;
    for (let i = 0; i < 5; i += 1)
      expect(
        (await browser.request(action, { username: 'guest', password: `guess number ${i}` })).status,
      ).toBe(401);
    const locked = await browser.request(action, { username: 'guest', password: 'guest password 1' });
    expect(locked.status).toBe(429);
    expect(await locked.text()).toContain('Too many failed sign-ins');
    idp.provider.signIn.throttle.clearAll();
  });
});
