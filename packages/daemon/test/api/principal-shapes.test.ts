// The authorization endpoints in the shapes App Mesh 3.0's SDK parses (client_http.py:
// get_current_principal, get_principal_permissions, list_principals, list_permissions, list_roles;
// oauth.py from_appmesh reads /auth/config), against a real daemon.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_ROLES, PERMISSIONS } from '@svc/protocol';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
});
afterAll(async () => {
  await daemon?.close();
});

describe('GET /svc/principal/self and /svc/principal/self/permissions', () => {
  it('answer every built-in role its own principal; /svc/self is the same document', async () => {
    const rest = daemon.rest();
    for (const [role, builtin, sub] of [
      ['admin', 'svc-admin', 'test-admin'],
      ['viewer', 'svc-viewer', 'test-viewer'],
      ['maintenance', 'svc-maintenance', 'client:svc-automation'],
    ] as const) {
      const token = await daemon.token(role);
      const self = await rest.call('GET', '/svc/principal/self', { token });
      expect(self.status, self.text()).toBe(200);
      const body = self.json<Record<string, unknown>>();
      expect(body).toMatchObject({
        principal_id: sub,
        roles: [builtin],
        permissions: [...BUILTIN_ROLES[builtin]].sort(),
        status: 'active',
        execution_user: null,
      });
      const alias = await rest.call('GET', '/svc/self', { token });
      expect(alias.json()).toEqual(body);
      const permissions = await rest.call('GET', '/svc/principal/self/permissions', { token });
      expect(permissions.status).toBe(200);
      expect(permissions.json()).toEqual([...BUILTIN_ROLES[builtin]].sort());
    }
  });

  it('a principal without roles gets an empty list; without a token 401', async () => {
    const rest = daemon.rest();
    const nobody = await rest.call('GET', '/svc/principal/self/permissions', {
      token: await daemon.token('nobody'),
    });
    expect(nobody.status).toBe(200);
    expect(nobody.json()).toEqual([]);
    for (const path of ['/svc/principal/self', '/svc/principal/self/permissions']) {
      const anonymous = await rest.call('GET', path);
      expect(anonymous.status, path).toBe(401);
    }
  });

  it('a tombstoned principal still reads its own status, and nothing else', async () => {
    const rest = daemon.rest();
    expect(
      (await rest.call('POST', '/svc/principal/leaver', { token: admin, body: { roles: ['svc-viewer'] } }))
        .status,
    ).toBe(200);
    expect((await rest.call('DELETE', '/svc/principal/leaver', { token: admin })).status).toBe(200);
    const token = await daemon.issuer.mint({ sub: 'leaver' });
    const self = await rest.call('GET', '/svc/principal/self', { token });
    expect(self.json()).toMatchObject({ principal_id: 'leaver', status: 'tombstoned', permissions: [] });
    expect((await rest.call('GET', '/svc/principal/self/permissions', { token })).json()).toEqual([]);
    expect((await rest.call('GET', '/svc/labels', { token })).status).toBe(403);
  });
});

describe('GET /svc/principals', () => {
  it('is an object keyed by principal id with principal_id, roles and status (tombstones included)', async () => {
    const rest = daemon.rest();
    expect(
      (
        await rest.call('POST', '/svc/principal/client%3Aci-bot', {
          token: admin,
          body: { roles: ['svc-viewer'] },
        })
      ).status,
    ).toBe(200);
    expect((await rest.call('DELETE', '/svc/principal/gone', { token: admin })).status).toBe(404);
    const r = await rest.call('GET', '/svc/principals', { token: admin });
    expect(r.status).toBe(200);
    const principals = r.json<Record<string, { roles: string[]; status: string }>>();
    expect(Array.isArray(principals)).toBe(false);
    expect(principals['test-admin']).toEqual({
      principal_id: 'test-admin',
      roles: ['svc-admin'],
      status: 'active',
    });
    expect(principals['client:ci-bot']).toEqual({
      principal_id: 'client:ci-bot',
      roles: ['svc-viewer'],
      status: 'active',
    });
    expect(principals['client:svc-automation']).toMatchObject({
      roles: ['svc-maintenance'],
      status: 'active',
    });
  });

  it('needs principal-list: svc-viewer and svc-maintenance are refused', async () => {
    for (const role of ['viewer', 'maintenance', 'nobody', 'developer'] as const) {
      const r = await daemon.rest().call('GET', '/svc/principals', { token: await daemon.token(role) });
      expect(r.status, role).toBe(403);
    }
  });
});

describe('GET /svc/permissions and /svc/roles', () => {
  it('list the 27 permissions of App Mesh 3.0 and each role as an array of them', async () => {
    const rest = daemon.rest();
    const permissions = (await rest.call('GET', '/svc/permissions', { token: admin })).json<string[]>();
    expect(permissions).toHaveLength(27);
    expect(permissions).toEqual([...PERMISSIONS]);
    for (const name of ['principal-list', 'file-download', 'file-upload'])
      expect(permissions).toContain(name);
    for (const gone of ['principal-view', 'cluster-app-view', 'cluster-app-reg'])
      expect(permissions).not.toContain(gone);
    const roles = (await rest.call('GET', '/svc/roles', { token: admin })).json<Record<string, string[]>>();
    expect(roles['svc-admin']).toEqual([...PERMISSIONS]);
    expect(roles['svc-viewer']).toEqual([...BUILTIN_ROLES['svc-viewer']]);
    // The SDK's update_role sends a bare array; a former name is refused there.
    const old = await rest.call('POST', '/svc/role/auditor', { token: admin, body: ['principal-view'] });
    expect(old.status).toBe(400);
    const ok = await rest.call('POST', '/svc/role/auditor', { token: admin, body: ['principal-list'] });
    expect(ok.status, ok.text()).toBe(200);
  });
});

describe('GET /svc/auth/config', () => {
  it('carries what the SDK OAuth client reads: issuer, public_client_id, audience, scopes, refresh_token', async () => {
    const r = await daemon.rest().call('GET', '/svc/auth/config');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({
      issuer: daemon.issuer.issuer,
      public_client_id: 'svc-cli',
      audience: 'svc-api',
      scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
      refresh_token: true,
      flows: expect.arrayContaining(['authorization_code', 'device_code']) as unknown,
    });
  });
});
