// Sign-in as svc-web through the agent's /auth (code + PKCE), the token kept out of storage, silent
// sign-in again after a reload (prompt=none), and sign-out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;

beforeAll(async () => {
  web = await startWebHarness();
});
afterAll(async () => {
  await web?.close();
});

describe('sign-in', () => {
  it('signs in, shows the principal and the applications, and stores no token where scripts read', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-admin');
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    await page.getByText(web.users['svc-admin'].principal).first().waitFor();
    const stored = await page.evaluate(() => ({
      local: JSON.stringify({ ...localStorage }),
      session: JSON.stringify({ ...sessionStorage }),
      cookies: document.cookie,
      url: location.href,
    }));
    for (const where of Object.values(stored)) {
      expect(where).not.toMatch(/eyJ[\w-]+\.[\w-]+\./); // no JWT
      expect(where).not.toMatch(/code=|refresh/i);
    }
    expect(web.pageErrors(page)).toEqual([]);
  });

  it('signs in again silently after a reload, keeping the route', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-viewer');
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    await page.goto(`${web.url}/#/apps?q=none`);
    await page.reload();
    await page.getByRole('heading', { name: 'Applications' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/apps?q=none');
    expect(await page.getByRole('button', { name: 'Sign in' }).count()).toBe(0);
  });

  it('signs out: the provider session ends and the page shows the sign-in button again', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-admin');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/auth\/session\/end/);
    await page.getByRole('button', { name: 'Sign out' }).click(); // the provider's confirmation
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(new URL(page.url()).origin).toBe(new URL(web.url).origin);
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    // The provider session is gone: signing in asks for the password again.
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('form[action$="/login"]').waitFor();
    expect(web.pageErrors(page)).toEqual([]);
  });
});
