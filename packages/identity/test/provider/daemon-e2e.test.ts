// End to end: a real svcd in builtin mode supervises the bundled system app `identity`
// (apps/identity.yaml) on ephemeral ports and accepts the tokens of the built-in issuer unchanged.
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import * as oidc from 'openid-client';
import { BUILTIN_MODE_ENV, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { AUDIENCE_SCOPE } from '../../src/provider/index.ts';
import { decodeJwt, discover, passwordGrant } from './helpers.ts';

const REPO = resolve(import.meta.dirname, '../../../..');
const SCOPE = `openid ${AUDIENCE_SCOPE}`;

let daemon: TestDaemon | undefined;
afterEach(async () => {
  await daemon?.close();
  daemon = undefined;
});

/** Re-checks `probe` until it returns a value (bounded; the identity app starts asynchronously). */
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface AuthConfig {
  mode: string;
  issuer: string;
  flows: string[];
}

async function authConfig(d: TestDaemon): Promise<AuthConfig> {
  return (await d.rest().call('GET', '/svc/auth/config')).json<AuthConfig>();
}

async function startBuiltin(files: Record<string, string> = {}): Promise<{ d: TestDaemon; issuer: string }> {
  const d = await startTestDaemon({
    env: {
      ...BUILTIN_MODE_ENV,
    },
    files: { 'apps/identity.yaml': await readFile(join(REPO, 'apps', 'identity.yaml'), 'utf8'), ...files },
  });
  daemon = d;
  const issuer = await until('the issuer port in /svc/auth/config', async () => {
    const doc = await authConfig(d);
    return /:0\/auth$/.test(doc.issuer) ? undefined : doc.issuer;
  });
  // Discovery answers once svc-identity is up (it wrote its ports after binding).
  await until('issuer discovery', async () =>
    (await fetch(`${issuer}/.well-known/openid-configuration`)).ok ? true : undefined,
  );
  return { d, issuer };
}

async function secret(d: TestDaemon, file: string, key?: string): Promise<string> {
  const text = await readFile(join(d.workDir, 'auth', 'secrets', file), 'utf8');
  if (key === undefined) return text.trim();
  const line = text.split('\n').find((l) => l.startsWith(`${key}=`));
  return (line as string).slice(key.length + 1);
}

describe('svcd in builtin mode with svc-identity', () => {
  it('accepts issuer tokens unchanged: admin → svc-admin; automation → client:svc-automation, 403 on PUT app', async () => {
    const { d, issuer } = await startBuiltin();
    expect(issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/auth$/);
    const ports = JSON.parse(await readFile(join(d.workDir, 'ports.json'), 'utf8')) as Record<string, number>;
    expect(ports['issuer']).toBe(Number(new URL(issuer).port));
    expect(ports['telemetry']).toBeGreaterThan(0);
    expect((await authConfig(d)).flows).toContain('password');

    const { status, body } = await passwordGrant(issuer, {
      grant_type: 'password',
      username: 'admin@svc.local',
      password: await secret(d, 'initial-admin-credentials', 'password'),
      scope: SCOPE,
    });
    expect(status).toBe(200);
    const adminToken = body['access_token'] as string;
    const self = await d.rest().call('GET', '/svc/self', { token: adminToken });
    expect(self.status).toBe(200);
    expect(self.json<{ principal_id: string; roles: string[] }>()).toMatchObject({
      principal_id: 'admin',
      roles: expect.arrayContaining(['svc-admin']) as unknown,
    });

    const automation = await discover(issuer, 'svc-automation', await secret(d, 'automation-client'));
    const machine = (await oidc.clientCredentialsGrant(automation, { scope: AUDIENCE_SCOPE })).access_token;
    expect(decodeJwt(machine).payload['aud']).toBe('svc-api');
    const machineSelf = await d.rest().call('GET', '/svc/self', { token: machine });
    expect(machineSelf.status).toBe(200);
    expect(machineSelf.json<{ principal_id: string; roles: string[] }>()).toMatchObject({
      principal_id: 'client:svc-automation',
      roles: ['svc-maintenance'],
    });
    const put = await d.rest().call('PUT', '/svc/app/e2e-machine', {
      token: machine,
      body: { name: 'e2e-machine', command: 'sleep 30' },
    });
    expect(put.status).toBe(403);

    // The leftover hash typed as the password is 401.
    const leftover = await passwordGrant(issuer, {
      grant_type: 'password',
      username: 'admin',
      password: await secret(d, 'initial-admin-credentials', 'password_hash'),
      scope: SCOPE,
    });
    expect(leftover.status).toBe(401);

    // The issuer runs as the system application `identity`.
    const apps = await d.rest().call('GET', '/svc/applications', { token: adminToken });
    expect(
      apps.json<{ name: string; system?: boolean }[]>().find((a) => a.name === 'identity'),
    ).toMatchObject({
      system: true,
    });
  });

  it('OIDC.password_flow: false: no `password` in flows, the grant is rejected, machine tokens still work', async () => {
    const { d, issuer } = await startBuiltin({ 'config/oidc.yaml': 'OIDC:\n  password_flow: false\n' });
    expect((await authConfig(d)).flows).not.toContain('password');
    const { status, body } = await passwordGrant(issuer, {
      grant_type: 'password',
      username: 'admin',
      password: await secret(d, 'initial-admin-credentials', 'password'),
      scope: SCOPE,
    });
    expect(status).toBe(400);
    expect(body['error']).toBe('unsupported_grant_type');
    const automation = await discover(issuer, 'svc-automation', await secret(d, 'automation-client'));
    const machine = (await oidc.clientCredentialsGrant(automation, { scope: AUDIENCE_SCOPE })).access_token;
    expect((await d.rest().call('GET', '/svc/self', { token: machine })).status).toBe(200);
  });
});

describe('svcd in external mode', () => {
  it('never advertises password and does not run the bundled identity app', async () => {
    const d = await startTestDaemon({
      env: { SVC_AUTH_PASSWORD_FLOW: 'true' },
      files: { 'apps/identity.yaml': await readFile(join(REPO, 'apps', 'identity.yaml'), 'utf8') },
    });
    daemon = d;
    const doc = await authConfig(d);
    expect(doc.mode).toBe('external');
    expect(doc.flows).not.toContain('password');
    const apps = await d.rest().call('GET', '/svc/applications', { token: await d.token('admin') });
    expect(apps.status).toBe(200);
    expect(apps.json<{ name: string }[]>().map((a) => a.name)).not.toContain('identity');
  });
});
