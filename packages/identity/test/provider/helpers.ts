// Test fixtures: an in-memory IdentityStore with the static identities, a started identity server
// on ephemeral ports with a controllable clock, and an openid-client configuration against it.
import bcrypt from 'bcryptjs';
import * as oidc from 'openid-client';
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

export function memoryIdentityStore(): IdentityStore {
  const created = '2026-01-01T00:00:00.000Z';
  const users: UserRecord[] = [
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
  options: { passwordFlow?: boolean; clock?: TestClock } = {},
): Promise<IdentityServer & { clock: TestClock }> {
  const clock = options.clock ?? new TestClock();
  const server = await startIdentityServer({
    issuerPort: 0,
    telemetryPort: 0,
    store: memoryIdentityStore(),
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
