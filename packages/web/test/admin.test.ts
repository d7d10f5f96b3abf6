// Administration in the browser against a real builtin-mode daemon: what each built-in role sees
// (the viewer reads labels, roles and config but is offered no change, and the daemon refuses the
// change anyway when it tries through the API), the admin flows (role, principal, label, config
// with the daemon's validation message beside its field), the cluster view hidden in stand-alone
// mode, and sign-out.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;

beforeAll(async () => {
  web = await startWebHarness();
});

afterAll(async () => {
  await web?.close();
});

const ADMIN_LINKS = ['Principals', 'Roles', 'Labels', 'Config'] as const;

async function navLinks(page: Page): Promise<string[]> {
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Applications' }).waitFor();
  return (await nav.getByRole('link').allTextContents()).map((t) => t.trim());
}

async function open(page: Page, path: string, heading: string): Promise<void> {
  await page.evaluate((hash) => (window.location.hash = hash), path);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** Clicks a ConfirmButton's button in `scope` and confirms in its dialog. */
async function confirm(page: Page, scope: ReturnType<Page['locator']>, label: string): Promise<void> {
  await scope.getByRole('button', { name: label }).click();
  const dialog = page.getByRole('dialog', { name: label });
  await dialog.getByRole('button', { name: label }).click();
}

describe('what each role sees', () => {
  it('a viewer reads labels, roles and config, is offered no change, and is refused through the API', async () => {
    await web.api('svc-admin').call('PUT', '/svc/label/zone', { query: { value: 'east' } });
    const page = await web.newPage();
    await web.signIn(page, 'svc-viewer');
    const links = await navLinks(page);
    expect(links).toEqual(expect.arrayContaining(['Roles', 'Labels', 'Config']));
    expect(links).not.toContain('Principals');
    expect(links).not.toContain('Cluster');

    await open(page, '/admin/labels', 'Labels');
    await page.locator('tr[data-label="zone"]').waitFor();
    expect(await page.getByRole('form', { name: 'Add a label' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0);

    await open(page, '/admin/roles', 'Roles');
    await page.locator('tr[data-role="svc-viewer"]').waitFor();
    expect(await page.getByRole('button', { name: /^(Edit|Delete)/ }).count()).toBe(0);
    expect(await page.getByRole('form', { name: 'Create a role' }).count()).toBe(0);

    await open(page, '/admin/config', 'Configuration');
    const level = page.getByLabel('LogLevel');
    await expect(level.inputValue()).resolves.toBe('INFO');
    expect(await level.isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Save changes' }).count()).toBe(0);

    // A route the viewer may not see, typed by hand, shows no data.
    await page.evaluate(() => (window.location.hash = '/admin/principals'));
    await page.getByText('You do not have the permission to see this.').waitFor();
    expect(await page.locator('tr[data-principal]').count()).toBe(0);

    // And the daemon refuses the changes the UI did not offer.
    const viewer = web.api('svc-viewer');
    expect((await viewer.call('PUT', '/svc/label/zone', { query: { value: 'west' } })).status).toBe(403);
    expect((await viewer.call('DELETE', '/svc/label/zone')).status).toBe(403);
    expect((await viewer.call('POST', '/svc/role/ops', { body: ['app-view'] })).status).toBe(403);
    expect((await viewer.call('POST', '/svc/principal/x', { body: { roles: ['svc-admin'] } })).status).toBe(
      403,
    );
    expect(
      (await viewer.call('POST', '/svc/config', { body: { BaseConfig: { LogLevel: 'DEBUG' } } })).status,
    ).toBe(403);
    expect((await viewer.call('GET', '/svc/principals')).status).toBe(403);
    expect((await web.api('svc-admin').call('GET', '/svc/labels')).json()).toMatchObject({ zone: 'east' });
    expect(web.pageErrors(page)).toEqual([]);
    await page.context().close();
  });

  it('a maintainer sees no administration at all', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-maintenance');
    const links = await navLinks(page);
    for (const link of [...ADMIN_LINKS, 'Cluster']) expect(links).not.toContain(link);
    await page.evaluate(() => (window.location.hash = '/admin/config'));
    await page.getByText('You do not have the permission to see this.').waitFor();
    expect((await web.api('svc-maintenance').call('GET', '/svc/config')).status).toBe(403);
    await page.context().close();
  });

  it('an admin sees every administration view, and no cluster view in stand-alone mode', async () => {
    const page = await web.newPage();
    await web.signIn(page, 'svc-admin');
    const links = await navLinks(page);
    expect(links).toEqual(expect.arrayContaining([...ADMIN_LINKS]));
    expect(links).not.toContain('Cluster');
    await page.evaluate(() => (window.location.hash = '/cluster'));
    await page.getByText('You do not have the permission to see this.').waitFor();
    await page.context().close();
  });
});

describe('administration flows (svc-admin)', () => {
  let page: Page;

  beforeAll(async () => {
    page = await web.newPage();
    await web.signIn(page, 'svc-admin');
  });

  it('creates a role, binds it to a new principal, edits, tombstones the principal and deletes the role', async () => {
    const admin = web.api('svc-admin');
    await open(page, '/admin/roles', 'Roles');
    const roleForm = page.getByRole('form', { name: 'Create a role' });
    await roleForm.getByLabel('Role name').fill('ops');
    await roleForm.getByLabel('app-view', { exact: true }).check();
    await roleForm.getByLabel('label-view', { exact: true }).check();
    await roleForm.getByRole('button', { name: 'Create role' }).click();
    await page.locator('tr[data-role="ops"]').getByText('app-view, label-view').waitFor();
    expect((await admin.call('GET', '/svc/roles')).json<Record<string, string[]>>()['ops']).toEqual([
      'app-view',
      'label-view',
    ]);
    // A refused name: the daemon's message is shown, nothing is created.
    await roleForm.getByLabel('Role name').fill('bad name');
    await roleForm.getByRole('button', { name: 'Create role' }).click();
    await roleForm
      .getByRole('alert')
      .getByText(/role must match/)
      .waitFor();

    await open(page, '/admin/principals', 'Principals');
    const form = page.getByRole('form', { name: 'Add a principal' });
    await form.getByLabel('Principal id').fill('alice@example.com');
    await form.getByLabel('ops', { exact: true }).check();
    await form.getByRole('button', { name: 'Add principal' }).click();
    const alice = page.locator('tr[data-principal="alice@example.com"]');
    await alice.getByText('ops').waitFor();
    expect((await admin.call('GET', '/svc/principals')).json()).toMatchObject({
      'alice@example.com': { roles: ['ops'], status: 'active' },
    });

    await alice.getByRole('button', { name: 'Edit alice@example.com' }).click();
    const edit = page.getByRole('form', { name: 'Edit alice@example.com' });
    await edit.getByLabel('svc-viewer', { exact: true }).check();
    await edit.getByRole('button', { name: 'Save' }).click();
    await alice.getByText('svc-viewer').waitFor();

    // The role is held by an active principal: the daemon refuses to delete it, the UI says why.
    await open(page, '/admin/roles', 'Roles');
    await confirm(page, page.locator('tr[data-role="ops"]'), 'Delete');
    await page
      .getByRole('alert')
      .getByText(/still granted/)
      .waitFor();

    await open(page, '/admin/principals', 'Principals');
    await confirm(page, alice, 'Delete');
    await alice.getByText('tombstoned').waitFor();
    expect((await admin.call('GET', '/svc/principals')).json()).toMatchObject({
      'alice@example.com': { status: 'tombstoned' },
    });

    await open(page, '/admin/roles', 'Roles');
    await confirm(page, page.locator('tr[data-role="ops"]'), 'Delete');
    await page.locator('tr[data-role="ops"]').waitFor({ state: 'detached' });
    expect((await admin.call('GET', '/svc/roles')).json()).not.toHaveProperty('ops');
    // Built-in roles offer no change.
    expect(await page.locator('tr[data-role="svc-admin"]').getByRole('button').count()).toBe(0);
  });

  it('adds and deletes a label, and shows a refused key', async () => {
    await open(page, '/admin/labels', 'Labels');
    const form = page.getByRole('form', { name: 'Add a label' });
    await form.getByLabel('Key').fill('rack');
    await form.getByLabel('Value').fill('r-12');
    await form.getByRole('button', { name: 'Add label' }).click();
    const row = page.locator('tr[data-label="rack"]');
    await row.getByText('r-12').waitFor();
    expect((await web.api('svc-admin').call('GET', '/svc/labels')).json()).toMatchObject({ rack: 'r-12' });

    await form.getByLabel('Key').fill('bad key');
    await form.getByRole('button', { name: 'Add label' }).click();
    await page
      .getByRole('alert')
      .getByText(/key must match/)
      .waitFor();

    await confirm(page, row, 'Delete');
    await row.waitFor({ state: 'detached' });
    expect((await web.api('svc-admin').call('GET', '/svc/labels')).json()).not.toHaveProperty('rack');
  });

  it('edits the config: a refused value shows the daemon message beside its field, a good one is saved', async () => {
    await open(page, '/admin/config', 'Configuration');
    // Settings with a fixed set of values (from the daemon's schema) are choices.
    const level = page.getByLabel('LogLevel');
    await level.locator('option', { hasText: 'DEBUG' }).waitFor({ state: 'attached' });
    const interval = page.getByLabel('ScheduleIntervalSeconds');
    await interval.fill('0');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const field = page.locator('[data-path="BaseConfig.ScheduleIntervalSeconds"]');
    await field
      .getByRole('alert')
      .getByText(/Too small/)
      .waitFor();
    expect(await interval.getAttribute('aria-invalid')).toBe('true');
    expect((await web.api('svc-admin').call('GET', '/svc/config')).json()).toMatchObject({
      BaseConfig: { ScheduleIntervalSeconds: 10 },
    });
    // Not a number at all: sent as typed, and the daemon's message says so beside the field.
    await interval.fill('ten');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await field
      .getByRole('alert')
      .getByText(/number/)
      .waitFor();

    await interval.fill('10');
    await level.selectOption('DEBUG');
    await page.getByLabel('Description').fill('edited in the browser');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page
      .getByRole('status')
      .getByText(/^Saved/)
      .waitFor();
    expect(await field.getByRole('alert').count()).toBe(0);
    expect((await web.api('svc-admin').call('GET', '/svc/config')).json()).toMatchObject({
      BaseConfig: { LogLevel: 'DEBUG', Description: 'edited in the browser', ScheduleIntervalSeconds: 10 },
    });
    expect(web.pageErrors(page)).toEqual([]);
  });

  it('fits 360 px wide: no page-wide horizontal scroll on any administration view', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    for (const [path, heading] of [
      ['/admin/principals', 'Principals'],
      ['/admin/roles', 'Roles'],
      ['/admin/labels', 'Labels'],
      ['/admin/config', 'Configuration'],
    ] as const) {
      await open(page, path, heading);
      await page.locator('table, form').first().waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, path).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('signs out after administration: the session ends and the UI asks to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The provider's end-session page asks to confirm, then returns to the UI.
    await page.waitForURL(/\/auth\/session\/end/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    const signInAgain = page.getByRole('button', { name: 'Sign in' });
    await signInAgain.waitFor();
    expect(new URL(page.url()).origin).toBe(new URL(web.url).origin);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    // A reload does not sign in silently: the provider session is gone.
    await page.reload();
    await signInAgain.waitFor();
    await signInAgain.click();
    await page.locator('form[action$="/login"]').waitFor();
  });
});
