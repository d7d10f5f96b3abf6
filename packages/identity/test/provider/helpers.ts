// Test fixtures: an in-memory IdentityStore with the static identities, a started identity server
// on ephemeral ports with a controllable clock, and an openid-client configuration against it.
import bcrypt from 'bcryptjs';
import * as oidc from 'openid-client';
import type { SecretBox } from '../../src/credentials/index.ts';
import { startIdentityServer } from '../../src/provider/index.ts';
import type { IdentityServer } from '../../src/provider/index.ts';
import { STATIC_IDENTITIES } from '../../src/store/identities.ts';
import type { IdentityStore, UserRecord } from '../../src/store/identity-store.ts';

export const ADMIN_PASSWORD = 'correct horse battery staple';
export const GUEST_PASSWORD = 'guest password 1';
export const AUTOMATION_SECRET = 'a'.repeat(20) + 'automation-secret-for-tests';
// Cost 10 as the spec requires; computed once per test file.
export const ADMIN_HASH = bcrypt.hashSync(ADMIN_PASSWORD, 10);
const GUEST_HASH = bcrypt.hashSync(GUEST_PASSWORD, 10);

export function memoryIdentityStore(extra: readonly UserRecord[] = []): IdentityStore {
  const created = '2026-01-01T00:00:00.000Z';
  const users: UserRecord[] = [
    ...extra,
    { ...pick('admin'), password_hash: ADMIN_HASH, static: true, created_at: created, mfa_enabled: false },
    { ...pick('guest'), password_hash: GUEST_HASH, static: true, created_at: created, mfa_enabled: false },
  ];
  function pick(name: 'admin' | 'guest'): { user_id: string; username: string; email: string } {
    const { user_id, username, email } = STATIC_IDENTITIES[name];
    return { user_id, username, email };
  }
  return {
    findByLogin: (login) =>
      users.find((u) => u.username === login || u.email.toLowerCase() === login.toLowerCase()),
    findById: (id) => users.find((u) => u.user_id === id),
    list: () => users,
    create: async () => {
      throw new Error('not supported in tests');
    },
    delete: async () => undefined,
    setPasswordHash: async () => undefined,
    setMfa: async () => undefined,
  };
}

/** A clock tests move forward by hand. */
export class TestClock {
  #now = Date.now();
  readonly now = (): number => this.#now;
  advance(ms: number): void {
    this.#now += ms;
  }
}

export async function startTestIdentity(
  options: {
    passwordFlow?: boolean;
    clock?: TestClock;
    store?: IdentityStore;
    secrets?: SecretBox;
  } = {},
): Promise<IdentityServer & { clock: TestClock }> {
  const clock = options.clock ?? new TestClock();
  const server = await startIdentityServer({
    issuerPort: 0,
    telemetryPort: 0,
    store: options.store ?? memoryIdentityStore(),
    secrets: options.secrets,
    automationSecret: AUTOMATION_SECRET,
    passwordFlow: options.passwordFlow ?? true,
    now: clock.now,
  });
  return Object.assign(server, { clock });
}

export async function discover(
  issuer: string,
  clientId: string,
  secret?: string,
): Promise<oidc.Configuration> {
  return oidc.discovery(
    new URL(issuer),
    clientId,
    secret === undefined ? { token_endpoint_auth_method: 'none' } : { client_secret: secret },
    secret === undefined ? oidc.None() : oidc.ClientSecretBasic(secret),
    { execute: [oidc.allowInsecureRequests] },
  );
}

export function decodeJwt(token: string): {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
} {
  const [h, p] = token.split('.') as [string, string];
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

/** POST a form to the token endpoint with `Authorization: Basic <client>:` (empty secret, spec). */
export async function passwordGrant(
  issuer: string,
  fields: Record<string, string>,
  clientId = 'svc-cli',
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${clientId}:`).toString('base64')}`,
    },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * A minimal browser: a cookie jar and manual redirects, enough to drive the sign-in pages with
 * plain HTTP (the administration-UI tests use a real Chromium).
 */
export class FormBrowser {
  readonly #cookies = new Map<string, string>();

  #remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';') as [string];
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1);
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }

  async request(url: string, form?: Record<string, string>): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.#cookies.size > 0)
      headers['cookie'] = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      headers,
      redirect: 'manual',
      ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() }),
    });
    this.#remember(response);
    return response;
  }

  /**
   * Requests `url` and follows redirects until a page (non-redirect) or a URL starting with `stopAt`;
   * returns the final URL and, for a page, its response and body.
   */
  async follow(
    url: string,
    form?: Record<string, string>,
    stopAt?: string,
  ): Promise<{ url: string; status: number; html: string }> {
    let current = url;
    let response = await this.request(current, form);
    for (let hops = 0; hops < 20; hops += 1) {
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) break;
      current = new URL(location, current).href;
      if (stopAt !== undefined && current.startsWith(stopAt))
        return { url: current, status: response.status, html: '' };
      response = await this.request(current);
    }
    return { url: current, status: response.status, html: await response.text() };
  }
}

/** The action and hidden inputs of the first form of `html` whose action matches `pattern`. */
export function formOf(
  html: string,
  base: string,
  pattern: RegExp,
): { action: string; fields: Record<string, string> } {
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attributes = match[1] as string;
    const action = /action="([^"]*)"/i
      .exec(attributes)?.[1]
      ?.replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c)));
    if (action === undefined || !pattern.test(action)) continue;
    const fields: Record<string, string> = {};
    for (const input of (match[2] as string).matchAll(/<input\b[^>]*>/gi)) {
      const tag = input[0];
      const name = /name="([^"]*)"/i.exec(tag)?.[1];
      const type = /type="([^"]*)"/i.exec(tag)?.[1];
      if (name !== undefined && type === 'hidden') fields[name] = /value="([^"]*)"/i.exec(tag)?.[1] ?? '';
    }
    return { action: new URL(action, base).href, fields };
  }
  throw new Error(`no form with action ${String(pattern)} in:\n${html.slice(0, 2000)}`);
}

/** Signs in on the login page `page` (at `pageUrl`) and approves the consent page. */
export async function signInAndConsent(
  browser: FormBrowser,
  page: { url: string; html: string },
  credentials: { username: string; password: string },
  stopAt?: string,
): Promise<{ url: string; status: number; html: string }> {
  const login = formOf(page.html, page.url, /\/login$/);
  const consentPage = await browser.follow(login.action, { ...login.fields, ...credentials }, stopAt);
  if (consentPage.status !== 200) return consentPage;
  const confirm = formOf(consentPage.html, consentPage.url, /\/confirm$/);
  return browser.follow(confirm.action, confirm.fields, stopAt);
}

/** The OAuth error of an openid-client rejection (response body error or WWW-Authenticate challenge). */
export async function oauthErrorOf(
  promise: Promise<unknown>,
): Promise<{ error?: string; description?: string }> {
  const failure = (await promise.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (e: unknown) => e,
  )) as {
    error?: string;
    error_description?: string;
    cause?: unknown;
  };
  if (typeof failure.error === 'string')
    return {
      error: failure.error,
      ...(failure.error_description === undefined ? {} : { description: failure.error_description }),
    };
  const challenge = Array.isArray(failure.cause)
    ? (failure.cause[0] as { parameters?: { error?: string; error_description?: string } })
    : undefined;
  const error = challenge?.parameters?.error;
  const description = challenge?.parameters?.error_description;
  return { ...(error === undefined ? {} : { error }), ...(description === undefined ? {} : { description }) };
}
