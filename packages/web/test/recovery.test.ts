// Recovery after svcd restarts under an open page: the banner says the connection dropped, the page
// reconnects on its own (backoff), subscribes again and resumes output from its last byte position,
// and live updates arrive again, all without a reload or a new sign-in.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_MODE_ENV, freePort, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;
let page: Page;
let second: TestDaemon | undefined;
/** svcd comes back on the same ports with the same issuer (its URL is in every token's `iss`). */
let fixedPorts: Record<string, string>;

const WAIT = { timeout: 60_000 };

beforeAll(async () => {
  fixedPorts = { SVC_REST_PORT: String(await freePort()), SVC_ISSUER_PORT: String(await freePort()) };
  web = await startWebHarness({ env: fixedPorts });
  page = await web.newPage();
  await web.signIn(page, 'svc-admin');
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT);
});
afterAll(async () => {
  await second?.close();
  await web?.close();
});

describe('recovery after the daemon restarts', () => {
  it('shows the banner while svcd is down, then reconnects, re-subscribes and resumes output', async () => {
    const put = await web.api('svc-admin').call('PUT', '/svc/app/ticker', {
      body: { name: 'ticker', command: 'i=0; while true; do echo "tick-$i"; i=$((i+1)); sleep 0.3; done', shell: true },
    });
    expect(put.status, put.text()).toBe(200);
    await page.goto(`${web.url}/#/app/ticker`);
    const output = page.getByTestId('output');
    await expect.poll(() => output.textContent(), WAIT).toContain('tick-2\n');
    const marker = await page.evaluate(() => ((window as unknown as { marker: number }).marker = Math.random()));

    await web.daemon.stop(); // the agent and the ticker keep running
    const banner = page.getByTestId('connection-banner');
    await banner.waitFor(WAIT);
    expect(await banner.textContent()).toContain('Connection to svc lost');
    const before = ((await output.textContent()) ?? '').split('\n').filter((l) => l.startsWith('tick-')).length;

    second = await startTestDaemon({
      home: web.daemon.home,
      issuer: web.daemon.issuer,
      agent: true,
      env: { ...BUILTIN_MODE_ENV, ...fixedPorts, SVC_AGENT_PORT: new URL(web.url).port },
    });
    await banner.waitFor({ state: 'detached', ...WAIT });

    // Output goes on past what was shown before the drop, still in order, without repeats.
    await expect
      .poll(async () => ((await output.textContent()) ?? '').split('\n').filter((l) => l.startsWith('tick-')).length, WAIT)
      .toBeGreaterThan(before + 3);
    const ticks = ((await output.textContent()) ?? '').split('\n').filter((l) => l.startsWith('tick-'));
    expect(new Set(ticks).size).toBe(ticks.length);

    // The list is live again: an application registered now appears without a reload.
    await page.getByRole('link', { name: '← Applications' }).click();
    await page.locator('tr[data-app="ticker"]').waitFor(WAIT);
    const again = await web.api('svc-admin').call('PUT', '/svc/app/after-restart', {
      body: { name: 'after-restart', command: 'sleep 600' },
    });
    expect(again.status, again.text()).toBe(200);
    await page.locator('tr[data-app="after-restart"] .state-running').waitFor(WAIT);
    expect(await page.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(marker);
    expect(web.pageErrors(page)).toEqual([]);
  });
});
