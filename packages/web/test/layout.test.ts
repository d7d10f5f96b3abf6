// Readable at 360 px and on a 4K screen, light and dark themes, and usable from the keyboard: no
// page-wide horizontal scrolling on the main screens, a visible focus ring, sortable columns and
// rows reached with Tab, confirmation dialogs opened and cancelled from the keyboard.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;
const WAIT = { timeout: 30_000 };

beforeAll(async () => {
  web = await startWebHarness();
  const put = await web.api('svc-admin').call('PUT', '/svc/app/laid-out', {
    body: { name: 'laid-out', command: 'sleep 600', description: 'a rather long description '.repeat(8) },
  });
  expect(put.status, put.text()).toBe(200);
});
afterAll(async () => {
  await web?.close();
});

async function noPageScrollX(page: Page): Promise<void> {
  const { scroll, width } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    width: window.innerWidth,
  }));
  expect(scroll).toBeLessThanOrEqual(width);
}

describe('layout and keyboard', () => {
  for (const viewport of [
    { width: 360, height: 740 },
    { width: 3840, height: 2160 },
  ])
    it(`fits ${viewport.width} px wide without page-wide horizontal scrolling`, async () => {
      const page = await web.newPage({ viewport });
      const consoleErrors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text());
      });
      await web.signIn(page, 'svc-admin');
      await page.locator('tr[data-app="laid-out"]').waitFor(WAIT);
      await noPageScrollX(page);
      await page.goto(`${web.url}/#/app/laid-out`);
      await page.locator('[data-field="State"] .state-running').waitFor(WAIT);
      await noPageScrollX(page);
      await page.goto(`${web.url}/#/app/laid-out/edit`);
      await page.getByLabel('Command').waitFor(WAIT);
      await noPageScrollX(page);
      const size = await page.evaluate(() => parseFloat(getComputedStyle(document.documentElement).fontSize));
      expect(size).toBeGreaterThanOrEqual(viewport.width > 2000 ? 18 : 15);
      // The strict CSP refused nothing the UI does (no inline script or style, no other origin).
      expect(consoleErrors.filter((text) => /Content Security Policy|Refused to/i.test(text))).toEqual([]);
    });

  it('switches to the dark theme and keeps the choice across a reload', async () => {
    const page = await web.newPage({ colorScheme: 'light' });
    await web.signIn(page, 'svc-viewer');
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await background();
    await page.getByRole('button', { name: 'Dark theme' }).click();
    expect(await page.getByRole('button', { name: 'Dark theme' }).getAttribute('aria-pressed')).toBe('true');
    const dark = await background();
    expect(dark).not.toBe(light);
    await page.reload();
    await page.getByRole('button', { name: 'Dark theme' }).waitFor(WAIT);
    expect(await background()).toBe(dark);
  });

  it('is usable from the keyboard, with a visible focus ring', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-admin');
    await page.locator('tr[data-app="laid-out"]').waitFor(WAIT);
    // Tab from the top reaches the skip link first, then the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).toBe('solid');
    // Sort by a column with the keyboard.
    await page.getByRole('button', { name: /^Name/ }).focus();
    await page.keyboard.press('Enter');
    expect(await page.locator('th[aria-sort="descending"]').count()).toBe(1);
    // Open an application from its row link, then a confirmation that Escape cancels.
    await page.locator('tr[data-app="laid-out"] a').focus();
    await page.keyboard.press('Enter');
    await page.locator('[data-field="State"] .state-running').waitFor(WAIT);
    await page.getByRole('button', { name: 'Stop', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.locator('dialog[open]').waitFor(WAIT);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Escape');
    await page.locator('dialog[open]').waitFor({ state: 'detached', ...WAIT });
    expect((await web.api('svc-admin').call('GET', '/svc/app/laid-out')).json<{ enabled: boolean }>().enabled).toBe(true);
    expect(web.pageErrors(page)).toEqual([]);
  });
});
