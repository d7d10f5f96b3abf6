// Full stack, builtin mode, administration UI on: print-initial-password, add-user, delete-user,
// automation-token through the real script against one real svcd and its real system apps.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, GUEST_EMAIL, keyValues, startAuthStack, type AuthStack } from './stack.ts';

interface Self {
  principal_id: string;
  roles: string[];
  status: string;
}

let stack: AuthStack;
let adminToken: string;

beforeAll(async () => {
  stack = await startAuthStack();
});
afterAll(async () => {
  await stack?.close();
});

async function policyPrincipals(): Promise<Record<string, { roles?: string[]; status?: string }>> {
  const doc = parse(await readFile(join(stack.workDir, 'auth', 'policy.yaml'), 'utf8')) as {
    principals?: Record<string, { roles?: string[]; status?: string }>;
  } | null;
  return doc?.principals ?? {};
}

/** An app definition any test may try to register. */
const APP = { name: 'fs-app', command: 'sleep 30' };

describe('svc-auth.sh against a real svcd in builtin mode (administration UI on)', () => {
  it('print-initial-password prints a 48-hex password that user-token turns into an admin token', async () => {
    const printed = await stack.script(['print-initial-password']);
    expect(printed.code, printed.stderr).toBe(0);
    const password = printed.stdout.trimEnd();
    expect(/^[0-9a-f]{48}$/.test(password), 'the password is 48 lowercase hex characters').toBe(true);
    expect(printed.stdout.split('\n')).toHaveLength(2); // the password line only

    adminToken = await stack.token(['user-token'], `${password}\n`); // default identity: admin
    const self = await stack.call('GET', '/svc/self', adminToken);
    expect(self.status).toBe(200);
    expect(self.json<Self>()).toMatchObject({ principal_id: 'admin', roles: ['svc-admin'] });
    // user-token with the explicit email is the same identity.
    const explicit = await stack.token(['user-token', ADMIN_EMAIL], `${password}\n`);
    expect((await stack.call('GET', '/svc/self', explicit)).json<Self>().principal_id).toBe('admin');
  });

  it('add-user <email> svc-viewer: prints the principal id; the user signs in as svc-viewer and cannot register an app', async () => {
    const added = await stack.script(['add-user', 'viewer.one@example.org', 'svc-viewer'], {
      stdin: 'viewer-one-password\n',
    });
    expect(added.code, added.stderr).toBe(0);
    const out = keyValues(added.stdout);
    expect(out['principal_id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(out['user_id']).toBe(out['principal_id']);
    expect(out['follow_up'], 'no follow-up: the engine has never seen this user').toBeUndefined();
    expect(added.stdout).not.toContain('viewer-one-password');
    expect(added.stderr).not.toContain('viewer-one-password');
    expect((await policyPrincipals())[out['principal_id']!]).toEqual({
      roles: ['svc-viewer'],
      status: 'active',
    });

    const token = await stack.token(['user-token', 'viewer.one@example.org'], 'viewer-one-password\n');
    const self = await stack.call('GET', '/svc/self', token);
    expect(self.status).toBe(200);
    expect(self.json<Self>()).toMatchObject({ principal_id: out['principal_id'], roles: ['svc-viewer'] });
    expect((await stack.call('GET', '/svc/applications', token)).status).toBe(200);
    const put = await stack.call('PUT', `/svc/app/${APP.name}`, token, APP);
    expect(put.status).toBe(403);
    expect(put.text()).toContain('forbidden');
  });

  it('add-user without a role binds svc-viewer', async () => {
    const added = await stack.script(['add-user', 'default.role@example.org'], {
      stdin: 'default-role-pw\n',
    });
    expect(added.code, added.stderr).toBe(0);
    const id = keyValues(added.stdout)['principal_id']!;
    expect((await policyPrincipals())[id]?.roles).toEqual(['svc-viewer']);
    const token = await stack.token(['user-token', 'default.role@example.org'], 'default-role-pw\n');
    expect((await stack.call('GET', '/svc/self', token)).json<Self>().roles).toEqual(['svc-viewer']);
  });

  it('add-user refuses the static admin and guest identities and a role the policy does not define', async () => {
    const before = await readFile(join(stack.workDir, 'auth', 'policy.yaml'), 'utf8');
    for (const identity of [ADMIN_EMAIL, 'admin', GUEST_EMAIL, 'guest']) {
      const refused = await stack.script(['add-user', identity, 'svc-admin'], { stdin: 'some-password\n' });
      expect([identity, refused.code]).toEqual([identity, 1]);
      expect(refused.stderr).toMatch(/static identities admin and guest/);
      expect(refused.stdout).toBe('');
    }
    const noRole = await stack.script(['add-user', 'no.role@example.org', 'svc-superuser'], {
      stdin: 'some-password\n',
    });
    expect(noRole.code).toBe(1);
    expect(noRole.stderr).toMatch(/role "svc-superuser" does not exist/);
    expect(noRole.stdout).toBe('');
    // Nothing was created: the identity cannot sign in, and the policy is unchanged.
    const signIn = await stack.script(['user-token', 'no.role@example.org'], { stdin: 'some-password\n' });
    expect(signIn.code).toBe(1);
    expect(signIn.stderr).toMatch(/token request refused: 401/);
    expect(await readFile(join(stack.workDir, 'auth', 'policy.yaml'), 'utf8')).toBe(before);
  });

  it('rule 3: a user who authenticated before the binding holds a role-less record; the printed POST applies the role', async () => {
    const email = 'early.bird@example.org';
    // Created under "Passwords, Create a password" (the UI's JSON API), with no role.
    const uiPort = (await stack.ports())['admin_ui'];
    const created = await fetch(`http://127.0.0.1:${uiPort}/api/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'early-bird-pw' }),
    });
    expect(created.status).toBe(201);
    const early = await stack.token(['user-token', email], 'early-bird-pw\n');
    const first = (await stack.call('GET', '/svc/self', early)).json<Self>();
    expect(first.roles).toEqual([]); // the engine now holds a role-less record

    const added = await stack.script(['add-user', email, 'svc-viewer'], { stdin: 'early-bird-pw\n' });
    expect(added.code, added.stderr).toBe(0);
    const out = keyValues(added.stdout);
    expect(out['principal_id']).toBe(first.principal_id);
    expect(out['follow_up']).toBe(`POST /svc/principal/${first.principal_id} {"roles":["svc-viewer"]}`);
    expect(added.stderr).toMatch(/role-less record/);
    // The running engine still answers from its role-less record (a fresh token changes nothing).
    const again = await stack.token(['user-token', email], 'early-bird-pw\n');
    expect((await stack.call('GET', '/svc/self', again)).json<Self>().roles).toEqual([]);

    // Apply the printed request with the admin token.
    const [, method, path, body] = /^(POST) (\S+) (.+)$/.exec(out['follow_up']!)!;
    const applied = await stack.call(method!, path!, adminToken, JSON.parse(body!));
    expect(applied.status, applied.text()).toBe(200);
    expect((await stack.call('GET', '/svc/self', again)).json<Self>()).toMatchObject({
      principal_id: first.principal_id,
      roles: ['svc-viewer'],
      status: 'active',
    });
  });

  it('delete-user: prints user_id and principal id, the identity gets 401, the policy block is gone; the engine keeps its record until DELETE /svc/principal', async () => {
    const email = 'leaving@example.org';
    const added = await stack.script(['add-user', email], { stdin: 'leaving-password\n' });
    expect(added.code, added.stderr).toBe(0);
    const id = keyValues(added.stdout)['principal_id']!;
    const token = await stack.token(['user-token', email], 'leaving-password\n');
    expect((await stack.call('GET', '/svc/self', token)).json<Self>().roles).toEqual(['svc-viewer']);

    const deleted = await stack.script(['delete-user', email]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(keyValues(deleted.stdout)).toEqual({ user_id: id, principal_id: id });
    expect(deleted.stderr).toContain(`DELETE /svc/principal/${id}`);

    // The identity is gone: no new token.
    const refused = await stack.script(['user-token', email], { stdin: 'leaving-password\n' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/token request refused: 401/);
    // The on-disk policy no longer has the block (hard delete, rule 5).
    expect(Object.keys(await policyPrincipals())).not.toContain(id);

    // Rule 4, first half: the running engine keeps its in-memory principal (a token issued before
    // the deletion still resolves to svc-viewer) ...
    const kept = await stack.call('GET', '/svc/self', token);
    expect(kept.status).toBe(200);
    expect(kept.json<Self>()).toMatchObject({ principal_id: id, roles: ['svc-viewer'], status: 'active' });
    // ... second half: DELETE /svc/principal/<id> removes it, leaving a tombstone (rule 5), even
    // though delete-user already took the block out of the file.
    const removed = await stack.call('DELETE', `/svc/principal/${id}`, adminToken);
    expect(removed.status, removed.text()).toBe(200);
    const after = await stack.call('GET', '/svc/self', token);
    expect(after.status).toBe(200);
    expect(after.json<Self>()).toMatchObject({ principal_id: id, status: 'tombstoned' });
    expect((await stack.call('PUT', `/svc/app/${APP.name}`, token, APP)).status).toBe(403);
    expect((await policyPrincipals())[id]).toMatchObject({ status: 'tombstoned' });

    // Deleting again: nothing to delete, reported as such.
    const again = await stack.script(['delete-user', email]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no principal record was removed/);
  });

  it('delete-user refuses the static identities', async () => {
    for (const identity of [ADMIN_EMAIL, GUEST_EMAIL]) {
      const refused = await stack.script(['delete-user', identity]);
      expect([identity, refused.code]).toEqual([identity, 1]);
      expect(refused.stderr).toMatch(/static identities/);
    }
  });

  it('automation-token: principal client:svc-automation (svc-maintenance), 403 on PUT app and on POST task', async () => {
    const machine = await stack.token(['automation-token']);
    const self = await stack.call('GET', '/svc/self', machine);
    expect(self.json<Self>()).toMatchObject({
      principal_id: 'client:svc-automation',
      roles: ['svc-maintenance'],
    });
    const put = await stack.call('PUT', `/svc/app/${APP.name}`, machine, APP);
    expect(put.status).toBe(403);
    // The task endpoint of an app that exists (registered by the admin), so 403 is the permission.
    const registered = await stack.call('PUT', `/svc/app/${APP.name}`, adminToken, APP);
    expect(registered.status, registered.text()).toBeLessThan(300);
    const task = await stack.call('POST', `/svc/app/${APP.name}/task`, machine, { payload: 'x' });
    expect(task.status).toBe(403);
    expect(task.text()).toContain('forbidden');
    expect((await stack.call('DELETE', `/svc/app/${APP.name}`, adminToken)).status).toBeLessThan(300);
  });
});
