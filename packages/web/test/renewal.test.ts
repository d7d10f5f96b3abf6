// Silent renewal: before the access token expires the page renews it with the rotating refresh token
// (no redirect, the page keeps its state), and later API calls carry the new token. The page's
// clock is fast-forwarded (Playwright's clock); the issuer and svcd run on real time.
import type { Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;
const WAIT = { timeout: 30_000 };

beforeAll(async () => {
  web = await startWebHarness();
});
afterAll(async () => {
  await web?.close();
});

function bearer(request: Request): string | undefined {
  return request.headers()['authorization'];
}

describe('silent renewal', () => {
  it('renews with the refresh token before expiry, without leaving the page, and uses the new token', async () => {
    const page = await web.newPage();
    const bearers: string[] = [];
    page.on('request', (r) => {
      const auth = bearer(r);
      if (new URL(r.url()).pathname.startsWith('/svc/') && auth !== undefined) bearers.push(auth);
    });
    await page.clock.install();
    await web.signIn(page, 'svc-admin');
    await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT);
    await expect.poll(() => bearers.length, WAIT).toBeGreaterThan(0);
    const before = new Set(bearers);
    expect(before.size).toBe(1);
    const marker = await page.evaluate(() => ((window as unknown as { marker: number }).marker = Math.random()));
    const renewal = page.waitForResponse(
      (r) => r.url().endsWith('/auth/token') && (r.request().postData() ?? '').includes('grant_type=refresh_token'),
      WAIT,
    );
    // The token lives 900 s; renewal is due 60 s before that.
    await page.clock.fastForward('14:10');
    const answer = await renewal;
    expect(answer.status()).toBe(200);
    expect(answer.request().postData()).not.toContain('client_secret');
    // Later calls carry the new token.
    await page.getByRole('link', { name: 'Run' }).click();
    await page.getByRole('link', { name: 'Applications' }).click();
    await expect.poll(() => bearers.some((auth) => !before.has(auth)), WAIT).toBe(true);
    expect(await page.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(marker);
    expect(web.pageErrors(page)).toEqual([]);
  });
});
