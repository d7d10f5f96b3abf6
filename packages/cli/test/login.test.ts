// `svc login` against a real svcd in builtin mode with the real svc-identity (issuer on an
// ephemeral port): the password grant with the initial administrator password, the device flow
// completed by this test acting as the user in the provider's pages (plain HTTP forms), the
// browser flow (PKCE, loopback redirect), refresh, loginfo and logout. Tokens and the password
// must never appear in svc's output.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_EMAIL,
  FormBrowser,
  formOf,
  signInAndConsent,
  startAuthStack,
  type AuthStack,
} from '@svc/identity/testing';
import { svcEnv, type SvcEnv, type SvcRun } from './helpers.ts';

let stack: AuthStack;
let password: string;
const outputs: SvcRun[] = [];
const envs: SvcEnv[] = [];

beforeAll(async () => {
  stack = await startAuthStack({ adminUi: false, env: { SVC_AUTH_ADMIN_UI: 'off' } });
  const printed = await stack.script(['print-initial-password']);
  if (printed.code !== 0) throw new Error(`print-initial-password exited ${printed.code}: ${printed.stderr}`);
  password = printed.stdout.trimEnd();
});
afterAll(async () => {
  for (const env of envs) await env.cleanup();
  await stack?.close();
});

async function user(): Promise<SvcEnv> {
  const env = await svcEnv({ SVC_HOME: stack.home });
  envs.push(env);
  return env;
}

async function run(svc: SvcEnv, args: string[], options?: Parameters<SvcEnv['run']>[1]): Promise<SvcRun> {
  const result = await svc.run(args, options);
  outputs.push(result);
  return result;
}

interface StoredSession {
  server: string;
  access_token: string;
  refresh_token?: string;
  expires_at: number;
  grant: string;
}

async function session(svc: SvcEnv): Promise<StoredSession> {
  return JSON.parse(await readFile(join(svc.configDir, 'session.json'), 'utf8')) as StoredSession;
}

function expectSecretsHidden(s: StoredSession): void {
  for (const r of outputs) {
    for (const secret of [s.access_token, s.refresh_token ?? 'no-refresh-token', password]) {
      expect(r.stdout.includes(secret)).toBe(false);
      expect(r.stderr.includes(secret)).toBe(false);
    }
  }
}

describe('svc login against the built-in identity provider', () => {
  it('password grant (--password-stdin --username): session file mode 600, loginfo, refresh, logout', async () => {
    const svc = await user();
    const login = await run(
      svc,
      ['-H', stack.daemon.restUrl, 'login', '--password-stdin', '--username', ADMIN_EMAIL],
      { stdin: `${password}\n` },
    );
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toContain('as admin');
    const file = join(svc.configDir, 'session.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = await session(svc);
    expect(stored.server).toBe(stack.daemon.restUrl);
    expect(stored.grant).toBe('password');

    // Without -H the session's server is used.
    const info = await run(svc, ['loginfo']);
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout).toMatch(/^Principal:\s+admin$/m);
    expect(info.stdout).toMatch(/^Expires:\s+\d{4}-\d\d-\d\dT/m);
    const json = JSON.parse((await run(svc, ['loginfo', '-o', 'json'])).stdout) as {
      principal: string;
      expires_at: string;
    };
    expect(json.principal).toBe('admin');
    expect(Date.parse(json.expires_at)).toBe(stored.expires_at * 1000);

    const listed = await run(svc, ['ls', '-o', 'json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(listed.stdout))).toBe(true);

    // The password grant issues no refresh token: an expired session asks for a new login.
    expect(stored.refresh_token).toBeUndefined();
    await writeFile(file, JSON.stringify({ ...stored, expires_at: Math.floor(Date.now() / 1000) - 60 }), {
      mode: 0o600,
    });
    const expired = await run(svc, ['ls']);
    expect(expired.code).toBe(3);
    expect(expired.stderr).toMatch(/session expired[\s\S]*svc login/);
    expectSecretsHidden(stored);

    const logout = await run(svc, ['logout']);
    expect(logout.code).toBe(0);
    const after = await run(svc, ['loginfo']);
    expect(after.code).toBe(3);
  });

  it('a wrong password is refused with exit 3 and not echoed', async () => {
    const svc = await user();
    const r = await run(svc, ['-H', stack.daemon.restUrl, 'login', '--password-stdin', '-u', ADMIN_EMAIL], {
      stdin: 'wrong-password-value\n',
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/refused/);
    expect(r.stderr).not.toContain('wrong-password-value');
  });

  it('device flow on a headless machine, completed by the test acting as the user', async () => {
    const svc = await user();
    // No DISPLAY/WAYLAND_DISPLAY in the environment: svc picks the device flow by itself.
    const login = svc.spawn(['-H', stack.daemon.restUrl, 'login']);
    const url = (await login.waitFor(/open (http\S+)\n/, 'stderr'))[1]!;
    const code = (await login.waitFor(/enter the code: (\S+)\n/, 'stderr'))[1]!;
    expect(url.startsWith(stack.issuer)).toBe(true);

    const browser = new FormBrowser();
    const entry = await browser.follow(url);
    const codeForm = formOf(entry.html, entry.url, /\/device$/);
    const confirmPage = await browser.follow(codeForm.action, { ...codeForm.fields, user_code: code });
    expect(confirmPage.html).toContain(code);
    const confirm = formOf(confirmPage.html, confirmPage.url, /\/device$/);
    const loginPage = await browser.follow(confirm.action, { ...confirm.fields, confirm: 'yes' });
    const finished = await signInAndConsent(browser, loginPage, { username: ADMIN_EMAIL, password });
    expect(finished.status).toBe(200);

    expect(await login.exited).toBe(0);
    outputs.push({ code: 0, stdout: login.stdout(), stderr: login.stderr() });
    const stored = await session(svc);
    expect(stored.grant).toBe('device_code');
    expect((await stat(join(svc.configDir, 'session.json'))).mode & 0o777).toBe(0o600);
    const info = await run(svc, ['loginfo']);
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout).toMatch(/^Principal:\s+admin$/m);
    expectSecretsHidden(stored);
  });

  it('browser flow (PKCE, loopback redirect) on a desktop', async () => {
    const svc = await user();
    const login = svc.spawn(['-H', stack.daemon.restUrl, 'login', '--no-browser'], {
      env: { DISPLAY: ':99' }, // a desktop: the browser flow is chosen
    });
    const url = (await login.waitFor(/browser to sign in:\n\s+(\S+)\n/, 'stderr'))[1]!;
    const authorize = new URL(url);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    const redirect = authorize.searchParams.get('redirect_uri')!;
    expect(redirect).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);

    const browser = new FormBrowser();
    const loginPage = await browser.follow(url);
    const done = await signInAndConsent(browser, loginPage, { username: ADMIN_EMAIL, password }, redirect);
    expect(done.url.startsWith(redirect)).toBe(true);
    const callback = await fetch(done.url);
    expect(callback.status).toBe(200);
    expect(await callback.text()).toContain('Signed in');

    expect(await login.exited).toBe(0);
    outputs.push({ code: 0, stdout: login.stdout(), stderr: login.stderr() });
    const stored = await session(svc);
    expect(stored.grant).toBe('authorization_code');
    expect(stored.refresh_token).toBeTypeOf('string');
    const self = await run(svc, ['principal', '-o', 'json']);
    expect((JSON.parse(self.stdout) as { principal_id: string }).principal_id).toBe('admin');

    // An expired access token is refreshed with the refresh token (session rewritten, still 600).
    const file = join(svc.configDir, 'session.json');
    await writeFile(file, JSON.stringify({ ...stored, expires_at: Math.floor(Date.now() / 1000) - 60 }), {
      mode: 0o600,
    });
    const again = await run(svc, ['principal', '-o', 'json']);
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as { principal_id: string }).principal_id).toBe('admin');
    const refreshed = await session(svc);
    expect(refreshed.access_token).not.toBe(stored.access_token);
    expect(refreshed.expires_at).toBeGreaterThan(Math.floor(Date.now() / 1000));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expectSecretsHidden(stored);
    expectSecretsHidden(refreshed);
  });
});
