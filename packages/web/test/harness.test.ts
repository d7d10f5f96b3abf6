// The harness itself, against the real identity pages: every built-in role signs in through the
// browser (authorization code + PKCE as the svc-web client would), and every role's API token
// names the principal it should.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, WEB_ROLES, type WebHarness } from './harness.ts';

let web: WebHarness;

beforeAll(async () => {
  web = await startWebHarness();
});

afterAll(async () => {
  await web?.close();
});

describe('web harness', () => {
  it('gives each role a token of its own principal', async () => {
    for (const role of WEB_ROLES) {
      const self = await web.api(role).call('GET', '/svc/principal/self');
      expect(self.status).toBe(200);
      const body = JSON.stringify(self.json());
      expect(body).toContain(web.users[role].principal);
      expect(body).toContain(role);
    }
  });

  it('signs each role in at the real issuer through Chromium (code + PKCE, svc-web)', async () => {
    for (const role of WEB_ROLES) {
      const page = await web.newPage();
      const verifier = randomBytes(32).toString('base64url');
      const redirect = `${web.url}/`;
      const authorize = new URL(`${web.url}/auth/auth`);
      authorize.search = new URLSearchParams({
        response_type: 'code',
        client_id: 'svc-web',
        redirect_uri: redirect,
        scope: web.info.auth!.scope,
        state: 'st',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      await page.goto(authorize.href);
      await web.signIn(page, role);
      const back = new URL(page.url());
      expect(back.origin).toBe(new URL(web.url).origin);
      expect(back.searchParams.get('state')).toBe('st');
      expect(back.searchParams.get('code')).toMatch(/^[\w-]{20,}$/);
      expect(web.pageErrors(page)).toEqual([]);
      await page.context().close();
    }
  });
});
