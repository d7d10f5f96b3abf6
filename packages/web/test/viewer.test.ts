// A viewer (svc-viewer) sees the applications but none of the actions it may not take: no register,
// run or task entries, no stop/start/restart/edit/delete on an application (spec/access.json with
// /svc/principal/self), and a route it may not use says so instead of offering the action.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;
const WAIT = { timeout: 30_000 };

beforeAll(async () => {
  web = await startWebHarness();
  const put = await web.api('svc-admin').call('PUT', '/svc/app/shown', { body: { name: 'shown', command: 'sleep 600' } });
  expect(put.status, put.text()).toBe(200);
});
afterAll(async () => {
  await web?.close();
});

describe('what a viewer sees', () => {
  it('lists and opens applications without any action it may not take', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-viewer');
    await page.locator('tr[data-app="shown"]').waitFor(WAIT);
    expect(await page.getByRole('link', { name: 'Register' }).count()).toBe(0);
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Applications' }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Run' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Task' }).count()).toBe(0);

    await page.locator('tr[data-app="shown"] a').click();
    await page.locator('[data-field="State"] .state-running').waitFor(WAIT);
    for (const action of ['Start', 'Stop', 'Restart', 'Edit', 'Delete'])
      expect(await page.getByRole('button', { name: action, exact: true }).or(page.getByRole('link', { name: action, exact: true })).count(), action).toBe(0);

    await page.goto(`${web.url}/#/register`);
    await page.getByText('You do not have the permission to see this.').waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Register' }).count()).toBe(0);
    expect(web.pageErrors(page)).toEqual([]);
  });

  it('shows the same application to an admin with every action', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-admin');
    await page.goto(`${web.url}/#/app/shown`);
    await page.locator('[data-field="State"] .state-running').waitFor(WAIT);
    for (const action of ['Stop', 'Restart', 'Delete'])
      expect(await page.getByRole('button', { name: action, exact: true }).count(), action).toBe(1);
    expect(await page.getByRole('link', { name: 'Edit', exact: true }).count()).toBe(1);
  });
});
