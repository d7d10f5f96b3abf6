// The browser test harness of the web UI: a real builtin-mode svcd with its identity provider and
// the agent (which serves packages/web/dist at `/`) on ephemeral ports in a temp SVC_HOME, and the
// Debian Chromium driven by playwright-core. One harness per test file:
//
//   let web: WebHarness;
//   beforeAll(async () => { web = await startWebHarness(); });
//   afterAll(async () => { await web?.close(); });
//   it('...', async () => {
//     const page = await web.newPage();
//     await web.signIn(page, 'svc-viewer');          // through the real sign-in page
//     await page.getByRole('row', { name: /sleeper/ }).waitFor();
//   });
//
//   test ──playwright-core──► /usr/bin/chromium ──https──► agent ─┬─ /          packages/web/dist
//     │                                                           ├─ /auth/*    svc-identity (sign-in pages)
//     └── web.api(role) ──https (token of a real user)──────────► └─ /svc/*     svcd
//
// Users, one per built-in role, all signing in with a password at the real issuer: `svc-admin` is
// the built-in admin, `svc-viewer` the built-in guest, `svc-maintenance` a password user the harness
// creates before the first start (no built-in user holds that role).
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import {
  CHROMIUM_EXECUTABLE,
  CHROMIUM_FLAGS,
  freePort,
  restClient,
  startServedDaemon,
  type ApiClient,
  type BuiltinUser,
  type CallOptions,
  type CallResult,
  type ServeInfo,
  type TestDaemon,
} from '@svc/testkit';
import { ensureWebBuild } from './web-build.ts';

export type WebRole = 'svc-admin' | 'svc-maintenance' | 'svc-viewer';
export const WEB_ROLES: readonly WebRole[] = ['svc-admin', 'svc-maintenance', 'svc-viewer'];

/** Sign-in name of the password user the harness creates with role svc-maintenance. */
export const MAINTAINER_EMAIL = 'maintainer@svc.local';

/** The header's sign-out button: present exactly while the UI holds a session. */
export const SIGN_OUT = 'Sign out';

/** Generous: the machine is shared and a sign-in is several redirects and a bcrypt check. */
const SIGN_IN_TIMEOUT_MS = 30_000;

export interface NewPageOptions {
  /** CSS pixels; default 1280 × 800. */
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
}

/** A REST client through the agent that sends one role's token (a real user's, from the issuer). */
export interface RoleApi {
  call(method: string, path: string, options?: Omit<CallOptions, 'token'>): Promise<CallResult>;
}

export interface WebHarness {
  /** The agent's base URL (`https://127.0.0.1:<port>`): the web UI is at `${url}/`. */
  readonly url: string;
  readonly info: ServeInfo;
  readonly daemon: TestDaemon;
  readonly browser: Browser;
  /** Sign-in name, password and principal id per role. */
  readonly users: Readonly<Record<WebRole, BuiltinUser>>;
  /**
   * A page in a context of its own (its own cookies and storage, so sign-ins do not leak between
   * pages), accepting the daemon's self-signed certificate. Uncaught page errors are collected in
   * `pageErrors(page)`.
   */
  newPage(options?: NewPageOptions): Promise<Page>;
  /** Uncaught exceptions the page threw so far (a test can assert there are none). */
  pageErrors(page: Page): readonly Error[];
  /**
   * Signs `page` in as `role` through the real identity pages: opens the UI (unless the page is
   * already on it), follows its sign-in (a redirect or a "Sign in" button), fills the login form,
   * allows the consent page when it is shown, and returns once the UI is signed in (its header offers
   * "Sign out"). `at` is the UI's base URL to sign in at (default `url`; e.g. a tunnel's port).
   */
  signIn(page: Page, role: WebRole, at?: string): Promise<void>;
  /** A fresh access token of the role's user (password grant at the real issuer, 15 minutes). */
  token(role: WebRole): Promise<string>;
  /** REST through the agent as `role` (a fresh token per client, cached). */
  api(role: WebRole): RoleApi;
  /** Closes the browser, stops svcd (with every process it started) and removes the temp home. */
  close(): Promise<void>;
}

export interface WebHarnessOptions {
  /** More environment for svcd (for example cluster settings). */
  env?: Record<string, string>;
  /** More files under SVC_HOME before the first start (e.g. `config/config.yaml`). */
  files?: Record<string, string>;
}

async function passwordGrant(info: ServeInfo, caPem: string, user: BuiltinUser): Promise<string> {
  const auth = info.auth!;
  const answer = await restClient(auth.base_url, caPem).call('POST', '/auth/token', {
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${auth.clients.cli}:`).toString('base64')}`,
    },
    rawBody: new URLSearchParams({
      grant_type: 'password',
      username: user.username,
      password: user.password,
      scope: auth.scope,
    }).toString(),
  });
  if (answer.status !== 200) throw new Error(`password grant for ${user.username} answered ${answer.status}`);
  return answer.json<{ access_token: string }>().access_token;
}

/** Fills the identity's login form on `page` and allows the consent page if it follows. */
async function completeIssuerSignIn(page: Page, user: BuiltinUser, appOrigin: string): Promise<void> {
  const login = page.locator('form[action$="/login"]');
  await login.waitFor({ timeout: SIGN_IN_TIMEOUT_MS });
  await login.getByLabel('Username or email').fill(user.username);
  await login.getByLabel('Password').fill(user.password);
  await login.getByRole('button', { name: 'Sign in' }).click();
  // Next comes the consent page (first sign-in of this grant) or the UI itself.
  const consent = page.locator('form[action$="/confirm"]');
  const backHome = (url: URL): boolean => url.origin === appOrigin && !url.pathname.startsWith('/auth/');
  await Promise.race([
    consent.waitFor({ timeout: SIGN_IN_TIMEOUT_MS }),
    page.waitForURL(backHome, { timeout: SIGN_IN_TIMEOUT_MS }),
  ]);
  if (!backHome(new URL(page.url()))) {
    if ((await login.count()) > 0) throw new Error(`sign-in of ${user.username} was refused`);
    await consent.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(backHome, { timeout: SIGN_IN_TIMEOUT_MS });
  }
}

export async function startWebHarness(options: WebHarnessOptions = {}): Promise<WebHarness> {
  ensureWebBuild();
  // A fixed, non-default agent port passed as SVC_AGENT_PORT, as an operator would set it: svc-web's
  // default redirect URIs (the install root's config/oidc.yaml) must follow it (issue 25 M6).
  const agentPort = await freePort();
  const {
    daemon,
    info,
    users: extra,
  } = await startServedDaemon({
    agent: true,
    builtin: true,
    tokenTtlSeconds: 900,
    users: [{ email: MAINTAINER_EMAIL, roles: ['svc-maintenance'] }],
    env: { ...options.env, SVC_AGENT_PORT: String(agentPort) },
    files: { ...options.files },
  });
  let browser: Browser;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM_EXECUTABLE,
      headless: true,
      args: [...CHROMIUM_FLAGS],
    });
  } catch (error) {
    await daemon.close();
    throw error;
  }
  const url = info.agent!;
  const users: Record<WebRole, BuiltinUser> = {
    'svc-admin': info.auth!.users['svc-admin'],
    'svc-viewer': info.auth!.users['svc-viewer'],
    'svc-maintenance': extra[0]!,
  };
  const contexts = new Set<BrowserContext>();
  const errors = new WeakMap<Page, Error[]>();
  const apis = new Map<WebRole, RoleApi>();
  const agentRest: ApiClient = restClient(url, daemon.ca);

  const harness: WebHarness = {
    url,
    info,
    daemon,
    browser,
    users,
    async newPage(pageOptions = {}) {
      const context = await browser.newContext({
        ignoreHTTPSErrors: true,
        viewport: pageOptions.viewport ?? { width: 1280, height: 800 },
        colorScheme: pageOptions.colorScheme ?? 'light',
      });
      contexts.add(context);
      context.once('close', () => contexts.delete(context));
      const page = await context.newPage();
      const pageErrors: Error[] = [];
      errors.set(page, pageErrors);
      page.on('pageerror', (error) => pageErrors.push(error));
      return page;
    },
    pageErrors(page) {
      return errors.get(page) ?? [];
    },
    async signIn(page, role, at = url) {
      const atOrigin = new URL(at).origin;
      if (new URL(page.url()).origin !== atOrigin) await page.goto(`${atOrigin}/`);
      const login = page.locator('form[action$="/login"]');
      const button = page
        .getByRole('button', { name: /^sign in$/i })
        .or(page.getByRole('link', { name: /^sign in$/i }));
      await login.or(button).first().waitFor({ timeout: SIGN_IN_TIMEOUT_MS });
      if ((await login.count()) === 0) await button.first().click();
      await completeIssuerSignIn(page, users[role], atOrigin);
      // Back on the UI, which exchanges the code for tokens: signed in once it offers to sign out.
      await page.getByRole('button', { name: SIGN_OUT }).waitFor({ timeout: SIGN_IN_TIMEOUT_MS });
    },
    token(role) {
      return passwordGrant(info, daemon.ca, users[role]);
    },
    api(role) {
      let api = apis.get(role);
      if (api === undefined) {
        let token: Promise<string> | undefined;
        api = {
          async call(method, path, callOptions = {}) {
            token ??= passwordGrant(info, daemon.ca, users[role]);
            return agentRest.call(method, path, { ...callOptions, token: await token });
          },
        };
        apis.set(role, api);
      }
      return api;
    },
    async close() {
      for (const context of [...contexts]) await context.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
      await daemon.close();
    },
  };
  return harness;
}
