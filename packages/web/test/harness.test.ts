// The harness itself: every built-in role signs in through the web UI and the real identity pages
// (authorization code + PKCE as svc-web), the UI shows who is signed in, and every role's API
// token names the principal it should.
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
      const body = self.json<{ principal_id: string; roles: string[] }>();
      expect(body.principal_id).toBe(web.users[role].principal);
      expect(body.roles).toContain(role);
    }
  });

  it('signs each role in through the UI and the real sign-in page', async () => {
    for (const role of WEB_ROLES) {
      const page = await web.newPage();
      await web.signIn(page, role);
      const url = new URL(page.url());
      expect(url.origin).toBe(new URL(web.url).origin);
      // The code and state never stay in the address bar.
      expect(url.search).toBe('');
      await expect(page.locator('header .principal').textContent()).resolves.toBe(web.users[role].principal);
      expect(web.pageErrors(page)).toEqual([]);
      await page.context().close();
    }
  });

  it('refuses a wrong password on the sign-in page', async () => {
    const page = await web.newPage();
    await page.goto(`${web.url}/`);
    await page
      .getByRole('button', { name: 'Sign in' })
      .or(page.locator('form[action$="/login"]'))
      .first()
      .waitFor();
    if ((await page.locator('form[action$="/login"]').count()) === 0)
      await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Username or email').fill(web.users['svc-viewer'].username);
    await page.getByLabel('Password').fill('not-the-password');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/login')),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    expect(answer.status()).toBe(401);
    await page.locator('form[action$="/login"]').waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    await page.context().close();
  });
});
