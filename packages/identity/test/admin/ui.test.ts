// The administration UI in a real headless Chromium (Debian /usr/bin/chromium driven by
// playwright-core), against the real gRPC API (mutual TLS) over the in-memory identity store;
// plus its CSRF and same-origin defences and the JSON API of the helper script.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_EXECUTABLE, CHROMIUM_FLAGS } from '@svc/testkit';
import { createAdminClient } from '../../src/admin/grpc-client.ts';
import { startAdminUi, type AdminUi } from '../../src/admin/ui/server.ts';
import { startAdminFixture, type AdminFixture } from './fixture.ts';

let fixture: AdminFixture;
let ui: AdminUi;
let profileDir: string;
let shotsDir: string;
let browser: BrowserContext;
let attacker: Server;
let attackerUrl: string;

beforeAll(async () => {
  fixture = await startAdminFixture();
  ui = await startAdminUi({ client: fixture.client(), listen: '127.0.0.1:0' });
  profileDir = await mkdtemp(join(tmpdir(), 'svc-admin-chromium-'));
  shotsDir = await mkdtemp(join(tmpdir(), 'svc-admin-shots-'));
  browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM_EXECUTABLE,
    headless: true,
    args: [...CHROMIUM_FLAGS],
  });
  // Another origin (another port) whose page posts a form to the UI, as a malicious site would.
  attacker = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(`<!doctype html><form id="f" method="post" action="${ui.url}/passwords/create">
<input name="csrf" value="guessed"><input name="email" value="mallory@example.com">
<input name="password" value="pwned-password"></form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) =>
    attacker === undefined ? resolve() : attacker.close(() => resolve()),
  );
  await ui?.close();
  await fixture?.close();
  for (const dir of [profileDir, shotsDir])
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('administration UI in Chromium', () => {
  it('creates a password for a new email, lists it, and deletes it', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${ui.url}/`);
      expect(new URL(page.url()).pathname).toBe('/passwords');
      await expect(page.locator('h1').textContent()).resolves.toBe('Passwords');
      const rows = await page.locator('#users tbody tr').all();
      expect(await Promise.all(rows.map((row) => row.getAttribute('data-email')))).toEqual([
        'admin@svc.local',
        'guest@svc.local',
      ]);
      expect(await page.locator('tr[data-email="admin@svc.local"]').textContent()).toContain(
        'static identity',
      );
      expect(await page.getByRole('button', { name: 'Delete admin@svc.local' }).count()).toBe(0);

      await page.getByRole('heading', { name: 'Create a password' }).waitFor();
      await page.getByLabel('Email').fill('carol@example.com');
      await page.getByLabel('Password', { exact: true }).fill('carol-secret-1');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.waitForURL(/\/passwords\?notice=/);
      expect(page.url()).not.toContain('carol-secret-1');
      await expect(page.getByRole('status').textContent()).resolves.toMatch(
        /^Created carol@example.com \(user id [0-9a-f-]{36}\)/,
      );
      const row = page.locator('tr[data-email="carol@example.com"]');
      expect(await row.count()).toBe(1);
      const userId = fixture.store.findByLogin('carol@example.com')!.user_id;
      expect(await row.textContent()).toContain(userId);
      expect(await page.content()).not.toContain('carol-secret-1');

      const shot = join(shotsDir, 'passwords.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect((await readFile(shot)).subarray(0, 8)).toEqual(
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      );
      expect((await stat(shot)).size).toBeGreaterThan(1000);

      await page.getByRole('button', { name: 'Delete carol@example.com' }).click();
      await page.waitForURL(/notice=Deleted/);
      await expect(page.getByRole('status').textContent()).resolves.toBe(
        `Deleted carol@example.com (user id ${userId}).`,
      );
      expect(await page.locator('tr[data-email="carol@example.com"]').count()).toBe(0);
      expect(fixture.store.findByLogin('carol@example.com')).toBeUndefined();
    } finally {
      await page.close();
    }
  });

  it('shows a refused creation (static identity, 73-byte password) without echoing the password', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${ui.url}/passwords`);
      await page.getByLabel('Email').fill('guest@svc.local');
      await page.getByLabel('Password', { exact: true }).fill('whatever-pw');
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/passwords/create')),
        page.getByRole('button', { name: 'Create' }).click(),
      ]);
      expect(response.status()).toBe(409);
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/static identity/);
      await page.getByLabel('Password', { exact: true }).fill('x'.repeat(73));
      await page.getByLabel('Email').fill('dave@example.com');
      await page.getByRole('button', { name: 'Create' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/at most 72 bytes/);
      expect(await page.content()).not.toContain('x'.repeat(73));
      expect(await page.getByLabel('Email').inputValue()).toBe('dave@example.com');
    } finally {
      await page.close();
    }
  });

  it('manages OAuth clients, sessions and MFA', async () => {
    await fixture.client().Passwords.CreateUser({ email: 'erin@example.com', password: 'erin-password-1' });
    const erin = fixture.store.findByLogin('erin@example.com')!;
    fixture.sessions.add({
      id: 'sess-erin',
      subject: erin.user_id,
      client_id: 'svc-web',
      kind: 'browser',
      created_at: new Date().toISOString(),
    });
    const page = await browser.newPage();
    try {
      await page.goto(`${ui.url}/clients`);
      expect(await page.locator('#clients tbody tr').count()).toBe(5);
      await page.getByRole('button', { name: 'Regenerate the secret of svc-automation' }).click();
      await page.waitForURL(/notice=/);
      const secret = (
        await readFile(join(fixture.workDir, 'auth', 'secrets', 'automation-client'), 'utf8')
      ).trim();
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(await page.content()).not.toContain(secret);

      await page.getByRole('link', { name: 'Sessions' }).click();
      expect(await page.locator('tr[data-session="sess-erin"]').textContent()).toContain(erin.user_id);
      await page.getByRole('button', { name: 'Revoke session sess-erin' }).click();
      await page.waitForURL(/notice=/);
      expect(await page.locator('#no-sessions').count()).toBe(1);
      expect(fixture.sessions.list()).toEqual([]);

      await page.getByRole('link', { name: 'MFA' }).click();
      expect(await page.locator('tr[data-email="erin@example.com"] .mfa-state').textContent()).toBe('off');
      expect(await page.locator('tr[data-email="admin@svc.local"]').textContent()).toContain(
        'static identity',
      );
      await page.getByRole('button', { name: 'Turn on MFA for erin@example.com' }).click();
      // Enrolment: the secret is shown on this page, once, and never put in a URL.
      await page.locator('#enrolment').waitFor();
      const shown = (await page.locator('#totp-secret').textContent())!;
      expect(shown).toMatch(/^[A-Z2-7]{32}$/);
      expect(await page.locator('#totp-uri').textContent()).toContain(`secret=${shown}`);
      expect(page.url()).not.toContain(shown);
      expect(await page.locator('tr[data-email="erin@example.com"] .mfa-state').textContent()).toBe('on');
      const stored = fixture.store.findByLogin('erin@example.com')!;
      expect(stored.mfa_enabled).toBe(true);
      expect(fixture.secrets.decrypt(stored.mfa_secret!)).toBe(shown);
      await page.goto(`${ui.url}/mfa`);
      expect(await page.content()).not.toContain(shown);
    } finally {
      await page.close();
    }
  });

  it('refuses a cross-origin form post (CSRF)', async () => {
    const page = await browser.newPage();
    try {
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.url() === `${ui.url}/passwords/create`),
        page.goto(attackerUrl),
      ]);
      expect(response.status()).toBe(403);
      expect(await response.text()).toContain('cross-origin form submission refused');
      expect(fixture.store.findByLogin('mallory@example.com')).toBeUndefined();
    } finally {
      await page.close();
    }
  });
});

/** The page's CSRF token (as a same-origin browser would submit it). */
async function csrfToken(): Promise<string> {
  const html = await (await fetch(`${ui.url}/passwords`)).text();
  return /name="csrf" value="([^"]+)"/.exec(html)![1]!;
}

describe('request checks (without a browser)', () => {
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

  it('needs the CSRF token, a same-origin Origin or Referer, and a loopback Host', async () => {
    const csrf = await csrfToken();
    const body = form({ csrf, email: 'frank@example.com', password: 'frank-password-1' });
    const post = (headers: Record<string, string>, payload = body) =>
      fetch(`${ui.url}/passwords/create`, {
        method: 'POST',
        headers: { ...formHeaders, ...headers },
        body: payload,
        redirect: 'manual',
      });
    expect((await post({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ referer: 'http://evil.example/page' })).status).toBe(403);
    expect((await post({})).status).toBe(403); // neither header
    expect(
      (await post({ origin: ui.url }, form({ email: 'frank@example.com', password: 'frank-password-1' })))
        .status,
    ).toBe(403);
    expect(
      (
        await post(
          { origin: ui.url },
          form({ csrf: csrf.slice(1) + 'A', email: 'frank@example.com', password: 'x' }),
        )
      ).status,
    ).toBe(403);
    expect(fixture.store.findByLogin('frank@example.com')).toBeUndefined();
    const accepted = await post({ origin: ui.url });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get('location')).toMatch(/^\/passwords\?notice=Created/);
    expect(fixture.store.findByLogin('frank@example.com')).toBeDefined();
    // DNS rebinding: the right socket under a foreign host name.
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const r = request(
        { host: ui.host, port: ui.port, path: '/passwords', headers: { host: 'rebind.example:6064' } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      r.once('error', reject);
      r.end();
    });
    expect(status).toBe(421);
  });

  it('serves the helper script’s JSON API: create and delete a user', async () => {
    const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${ui.url}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = await api('POST', '/api/users', {
      email: 'grace@example.com',
      password: 'grace-password',
    });
    expect(created.status).toBe(201);
    const user = (await created.json()) as { user_id: string; principal_id: string; email: string };
    expect(user).toEqual({
      user_id: user.user_id,
      principal_id: user.user_id,
      email: 'grace@example.com',
      username: 'grace@example.com',
    });
    const again = await api('POST', '/api/users', { email: 'grace@example.com', password: 'grace-password' });
    expect([again.status, await again.json()]).toEqual([
      409,
      { error: 'already_exists', message: 'a user with email grace@example.com exists' },
    ]);
    const listed = (await (await api('GET', '/api/users')).json()) as { users: { email: string }[] };
    expect(listed.users.map((u) => u.email)).toContain('grace@example.com');

    // Sign-in lockouts: POST /api/users/<email>/unlock (any user, static ones included).
    const unlocked = await api('POST', `/api/users/${encodeURIComponent('admin@svc.local')}/unlock`);
    expect([unlocked.status, await unlocked.json()]).toEqual([
      200,
      { email: 'admin@svc.local', user_id: 'admin', locks_cleared: 1 },
    ]);
    expect((await api('POST', '/api/users/nobody%40example.com/unlock')).status).toBe(404);
    expect((await api('POST', '/api/users/%E0%A4%A/unlock')).status).toBe(400);
    expect((await api('GET', '/api/users/admin/unlock')).status).toBe(405);
    expect((await api('POST', `/api/users/${'a'.repeat(5000)}/unlock`)).status).toBe(404);
    expect(
      (await api('POST', '/api/users/admin/unlock', undefined, { origin: 'http://evil.example' })).status,
    ).toBe(403);
    expect(
      (await api('POST', '/api/users', { email: 'short@example.com', password: 'elevenchars' })).status,
    ).toBe(400);

    expect((await api('POST', '/api/users', { email: 'admin@svc.local', password: 'pw' })).status).toBe(409);
    expect(
      (await api('POST', '/api/users', { email: 'h@example.com', password: 'x'.repeat(73) })).status,
    ).toBe(400);
    expect((await api('POST', '/api/users', { email: 'h@example.com' })).status).toBe(400);
    const plain = await fetch(`${ui.url}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"email":"h@example.com","password":"pw"}',
    });
    expect(plain.status).toBe(415);
    expect(
      (
        await api(
          'POST',
          '/api/users',
          { email: 'h@example.com', password: 'pw' },
          { origin: 'http://evil.example' },
        )
      ).status,
    ).toBe(403);
    expect(fixture.store.findByLogin('h@example.com')).toBeUndefined();

    const deleted = await api('DELETE', `/api/users/${encodeURIComponent('grace@example.com')}`);
    expect([deleted.status, await deleted.json()]).toEqual([200, { ...user }]);
    expect((await api('DELETE', `/api/users/${encodeURIComponent('grace@example.com')}`)).status).toBe(404);
    expect((await api('DELETE', '/api/users/guest%40svc.local')).status).toBe(409);
    expect((await api('PUT', '/api/users')).status).toBe(405);
  });

  it('answers 502 when the gRPC API is unreachable, without leaking the request', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const client = createAdminClient(`127.0.0.1:${port}`, fixture.tls, { deadlineMs: 3000 });
    const orphan = await startAdminUi({ client, listen: '127.0.0.1:0' });
    try {
      const response = await fetch(`${orphan.url}/api/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ivan@example.com', password: 'ivan-secret-pw' }),
      });
      expect(response.status).toBe(502);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({
        error: 'grpc_unavailable',
        message: 'the administrative gRPC API (svc-identity) is unreachable',
      });
      expect(text).not.toContain('ivan-secret-pw');
      expect((await fetch(`${orphan.url}/passwords`)).status).toBe(502);
    } finally {
      await orphan.close();
      client.close();
    }
  });
});
