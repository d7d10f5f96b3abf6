// The applications screens in a real Chromium against a real builtin-mode svcd and agent: the live
// list, every action on one application (with confirmation), output following live and read back,
// register and edit through the generated form (a server validation error beside its field), run a
// command, send a task to a worker.
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHarness, type WebHarness } from './harness.ts';

let web: WebHarness;
let page: Page;

const WAIT = { timeout: 30_000 };

async function register(name: string, definition: Record<string, unknown>): Promise<void> {
  const answer = await web.api('svc-admin').call('PUT', `/svc/app/${name}`, { body: { name, ...definition } });
  expect(answer.status, answer.text()).toBe(200);
}

async function appInfo(name: string): Promise<Record<string, unknown>> {
  const answer = await web.api('svc-admin').call('GET', `/svc/app/${name}`);
  expect(answer.status).toBe(200);
  return answer.json();
}

function row(name: string) {
  return page.locator(`tr[data-app="${name}"]`);
}

async function confirm(label: string): Promise<void> {
  await page.getByRole('button', { name: label, exact: true }).first().click();
  const dialog = page.locator('dialog[open]');
  await dialog.waitFor(WAIT);
  await dialog.getByRole('button', { name: label, exact: true }).click();
}

beforeAll(async () => {
  web = await startWebHarness();
  page = await web.newPage();
  await web.signIn(page, 'svc-admin');
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT);
});
afterAll(async () => {
  await web?.close();
});

describe('applications', () => {
  it('shows applications registered and changed elsewhere without a reload', async () => {
    await page.goto(`${web.url}/#/apps`);
    await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT);
    const marker = await page.evaluate(() => ((window as unknown as { marker: number }).marker = Math.random()));
    await register('live-one', { command: 'sleep 600' });
    await row('live-one').locator('.state-running').waitFor(WAIT);
    const disabled = await web.api('svc-admin').call('POST', '/svc/app/live-one/disable');
    expect(disabled.status).toBe(200);
    await row('live-one').locator('.state-disabled').waitFor(WAIT);
    // The STATUS event (disabled) can arrive a frame before the EXIT that clears the pid.
    await expect.poll(() => row('live-one').locator('td.num').first().textContent(), WAIT).toBe('–'); // no pid
    const removed = await web.api('svc-admin').call('DELETE', '/svc/app/live-one');
    expect(removed.status).toBe(200);
    await row('live-one').waitFor({ state: 'detached', ...WAIT });
    // Still the same page: nothing reloaded it.
    expect(await page.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(marker);
  });

  it('filters and sorts the list', async () => {
    await register('sort-b', { command: 'sleep 600' });
    await register('sort-a', { command: 'sleep 600', enabled: false });
    // (A disabled registration announces itself by no event: a fresh page reads it.)
    await page.goto(`${web.url}/#/apps`);
    await page.reload();
    await row('sort-a').waitFor(WAIT);
    await row('sort-b').waitFor(WAIT);
    await page.getByPlaceholder(/Filter/).fill('sort- state:disabled');
    await row('sort-b').waitFor({ state: 'detached', ...WAIT });
    expect(await row('sort-a').count()).toBe(1);
    await page.getByPlaceholder(/Filter/).fill('sort-');
    await row('sort-b').waitFor(WAIT);
    const names = async () => page.locator('tr[data-app^="sort-"]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-app')));
    expect(await names()).toEqual(['sort-a', 'sort-b']);
    await page.getByRole('button', { name: /^Name/ }).click();
    await expect.poll(names, WAIT).toEqual(['sort-b', 'sort-a']);
  });

  it('stops, starts, restarts and deletes an application, each stop/restart/delete confirmed', async () => {
    await register('acted', { command: 'sleep 600' });
    await page.goto(`${web.url}/#/app/acted`);
    const state = page.locator('[data-field="State"] .badge');
    await page.locator('[data-field="State"] .state-running').waitFor(WAIT);

    // Cancelling the confirmation changes nothing.
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await page.locator('dialog[open]').getByRole('button', { name: 'Cancel' }).click();
    expect((await appInfo('acted'))['enabled']).toBe(true);

    await confirm('Stop');
    await page.locator('[data-field="State"] .state-disabled').waitFor(WAIT);
    expect((await appInfo('acted'))['enabled']).toBe(false);

    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.locator('[data-field="State"] .state-running').waitFor(WAIT);
    const pid = (await appInfo('acted'))['pid'];
    expect(typeof pid).toBe('number');

    await confirm('Restart');
    await expect.poll(async () => (await appInfo('acted'))['pid'], WAIT).not.toBe(pid);
    await page.locator('[data-field="State"] .state-running').waitFor(WAIT);
    expect(await state.textContent()).toBe('running');

    await confirm('Delete');
    await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT);
    expect((await web.api('svc-admin').call('GET', '/svc/app/acted')).status).toBe(404);
  });

  it('follows output live by byte position and reads it back from an earlier position', async () => {
    await register('talker', {
      command: 'i=0; while true; do echo "line-$i"; i=$((i+1)); sleep 0.2; done',
      shell: true,
    });
    await page.goto(`${web.url}/#/app/talker`);
    const output = page.getByTestId('output');
    await expect.poll(() => output.textContent(), WAIT).toContain('line-0\n');
    // Lines keep arriving without a reload, in order and without gaps or repeats.
    await expect.poll(() => output.textContent(), WAIT).toContain('line-12\n');
    const text = (await output.textContent()) ?? '';
    const lines = text.split('\n').filter((l) => l.startsWith('line-'));
    expect(lines).toEqual(lines.map((_, i) => `line-${i}`));

    await page.getByText('Read back from a position or an older file').click();
    await page.getByLabel('From byte').fill('7'); // "line-0\n" is 7 bytes
    await page.getByRole('button', { name: 'Read', exact: true }).click();
    const read = page.getByTestId('output-read');
    await expect.poll(() => read.textContent(), WAIT).toMatch(/^line-1\nline-2\n/);
    await web.api('svc-admin').call('DELETE', '/svc/app/talker');
  });

  it("reads back an older process's output file", async () => {
    await register('rotated', {
      command: 'echo "generation-$(cat /proc/sys/kernel/random/uuid)"; sleep 600',
      shell: true,
      stdout_backup_count: 2,
    });
    const firstOutput = async () => {
      const answer = await web.api('svc-admin').call('GET', '/svc/app/rotated/output', { query: { stdout_position: '0' } });
      return answer.text();
    };
    await expect.poll(firstOutput, WAIT).toMatch(/^generation-/);
    const older = (await firstOutput()).trim();
    expect((await web.api('svc-admin').call('POST', '/svc/app/rotated/disable')).status).toBe(200);
    expect((await web.api('svc-admin').call('POST', '/svc/app/rotated/enable')).status).toBe(200);
    await expect.poll(firstOutput, WAIT).not.toBe(`${older}\n`);
    await expect.poll(firstOutput, WAIT).toMatch(/^generation-/);

    await page.goto(`${web.url}/#/app/rotated`);
    await page.getByText('Read back from a position or an older file').click();
    await page.getByLabel('File').selectOption({ label: 'previous 1' });
    await page.getByRole('button', { name: 'Read', exact: true }).click();
    await expect.poll(() => page.getByTestId('output-read').textContent(), WAIT).toBe(`${older}\n`);
    await web.api('svc-admin').call('DELETE', '/svc/app/rotated');
  });

  it('registers through the generated form, and shows a validation error of the daemon beside its field on edit', async () => {
    await page.goto(`${web.url}/#/apps`);
    await page.getByRole('link', { name: 'Register' }).click();
    await page.getByLabel('Name').fill('formed');
    await page.getByLabel('Command').fill('sleep 600');
    await page.getByLabel('Description').fill('made by the form');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'formed', exact: true }).waitFor(WAIT);
    expect(await appInfo('formed')).toMatchObject({ command: 'sleep 600', description: 'made by the form' });

    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Working dir').fill('relative/dir');
    await page.getByRole('button', { name: 'Save' }).click();
    const field = page.locator('[data-field="working_dir"] .field-error');
    await field.waitFor(WAIT);
    expect(await field.textContent()).toContain('absolute path');
    expect(await page.getByLabel('Working dir').getAttribute('aria-invalid')).toBe('true');
    // The definition did not change; a valid value saves.
    expect((await appInfo('formed'))['working_dir']).toBeUndefined();
    await page.getByLabel('Working dir').fill('/tmp');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'formed', exact: true }).waitFor(WAIT);
    expect(await appInfo('formed')).toMatchObject({ working_dir: '/tmp', description: 'made by the form' });
  });

  it('runs a command and watches its output stream to the exit code', async () => {
    await page.goto(`${web.url}/#/run`);
    await page.getByLabel('Command').fill('for i in 1 2 3; do echo "run-$i"; sleep 0.3; done; exit 3');
    await page.getByRole('button', { name: 'Run' }).click();
    const status = page.getByTestId('run-status');
    await expect.poll(() => status.textContent(), WAIT).toBe('Exited with code 3');
    expect(await page.getByTestId('output').textContent()).toBe('run-1\nrun-2\nrun-3\n');
  });

  it("sends a task to a worker application and shows the worker's reply", async () => {
    const worker = join(import.meta.dirname, 'fixtures', 'upper-worker.ts');
    await register('upper', {
      command: `${process.execPath} ${worker}`,
      env: { WORKER_CA: join(web.daemon.workDir, 'ssl', 'ca.pem') },
    });
    await page.goto(`${web.url}/#/task?app=upper`);
    await page.getByLabel('Payload').fill('hello worker');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.getByTestId('task-reply');
    await reply.waitFor(WAIT);
    expect(await reply.textContent()).toBe('HELLO WORKER');
    expect(web.pageErrors(page)).toEqual([]);
  });
});
