// Authorization records: the caller's principal, roles, permissions and principals (CONTRACT §5–§6, §8).
import { PERMISSIONS, SvcError, isPermission, type Permission } from '@svc/protocol';
import { EXECUTION_USER_PATTERN } from '../../auth/policy-store.ts';
import { lookupOsUser } from '../../util/os-user.ts';
import { json, parseJsonBody } from '../responses.ts';
import type { Principal } from '../../auth/principal.ts';
import type { Services } from '../services.ts';
import type { Operation } from '../types.ts';

function parsePermissions(body: unknown): Permission[] {
  const list = Array.isArray(body)
    ? body
    : typeof body === 'object' &&
        body !== null &&
        Array.isArray((body as { permissions?: unknown }).permissions)
      ? (body as { permissions: unknown[] }).permissions
      : undefined;
  if (list === undefined)
    throw new SvcError('bad_request', 'body must be an array of permissions or {"permissions": [...]}');
  if (list.length > PERMISSIONS.length * 2) throw new SvcError('bad_request', 'too many permissions');
  return list.map((value, index) => {
    if (!isPermission(value))
      throw new SvcError(
        'bad_request',
        `permissions[${index}]: unknown permission ${JSON.stringify(value).slice(0, 64)}`,
      );
    return value;
  });
}

/**
 * Body of POST /svc/principal/{id}: `roles` and/or `execution_user` (App Mesh 3.0's principal
 * record). A field left out keeps its value; `execution_user: null` or "" removes it. A named
 * execution user must exist on this host.
 */
function parsePrincipalChange(body: unknown): { roles?: string[]; executionUser?: string | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SvcError('bad_request', 'body must be {"roles": [<role>...], "execution_user": <OS user>}');
  const fields = body as { roles?: unknown; execution_user?: unknown };
  const change: { roles?: string[]; executionUser?: string | null } = {};
  if (fields.roles !== undefined) change.roles = parseRoles(fields);
  const user = fields.execution_user;
  if (user === null || user === '') change.executionUser = null;
  else if (user !== undefined) {
    if (typeof user !== 'string' || !EXECUTION_USER_PATTERN.test(user))
      throw new SvcError(
        'bad_request',
        'execution_user: not an OS user name (^[A-Za-z_][A-Za-z0-9_.-]{0,31}$)',
      );
    if (lookupOsUser(user) === undefined)
      throw new SvcError('bad_request', `execution_user: no OS user ${user} on this host`);
    change.executionUser = user;
  }
  if (change.roles === undefined && !('executionUser' in change))
    throw new SvcError('bad_request', 'body must set "roles" and/or "execution_user"');
  return change;
}

function parseRoles(body: unknown): string[] {
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { roles?: unknown }).roles))
    throw new SvcError('bad_request', 'body must be {"roles": [<role>...]}');
  const roles = (body as { roles: unknown[] }).roles;
  if (roles.length > 64) throw new SvcError('bad_request', 'roles: at most 64 roles');
  return roles.map((role, index) => {
    if (typeof role !== 'string' || !/^[A-Za-z0-9_.-]{1,128}$/.test(role))
      throw new SvcError('bad_request', `roles[${index}]: not a role name`);
    return role;
  });
}

/**
 * The caller's principal as GET /svc/principal/self shows it. `execution_user` is the OS user its
 * applications and runs execute as; null means the daemon's own user (no per-principal user and
 * no BaseConfig.DefaultExecUser).
 */
function selfView(p: Principal): Record<string, unknown> {
  return {
    principal_id: p.id,
    roles: p.roles,
    permissions: [...p.permissions].sort(),
    status: p.status,
    execution_user: p.executionUser ?? null,
    expires_at: p.expiresAt,
  };
}

export const authzOperations: Operation<Services>[] = [
  {
    id: 'getSelf',
    method: 'GET',
    path: '/svc/principal/self',
    access: { kind: 'authenticated' },
    summary: "The caller's principal: principal_id, roles, permissions, status, execution_user",
    async handle(context) {
      return json(selfView(context.principal!));
    },
  },
  {
    id: 'getSelfAlias',
    method: 'GET',
    path: '/svc/self',
    access: { kind: 'authenticated' },
    summary: 'Alias of GET /svc/principal/self',
    async handle(context) {
      return json(selfView(context.principal!));
    },
  },
  {
    id: 'getSelfPermissions',
    method: 'GET',
    path: '/svc/principal/self/permissions',
    access: { kind: 'authenticated' },
    summary: "The caller's effective permissions (an array, sorted)",
    async handle(context) {
      return json([...context.principal!.permissions].sort());
    },
  },
  {
    id: 'listRoles',
    method: 'GET',
    path: '/svc/roles',
    access: { kind: 'permission', permission: 'role-view' },
    summary: 'Roles and their permissions',
    async handle(context) {
      return json(context.services.policy.listRoles());
    },
  },
  {
    id: 'setRole',
    method: 'POST',
    path: '/svc/role/{role}',
    access: { kind: 'permission', permission: 'role-set' },
    summary: 'Create or replace a custom role (built-in roles cannot change)',
    jsonBody: true,
    async handle(context) {
      const role = context.params['role']!;
      await context.services.policy.setRole(role, parsePermissions(parseJsonBody(context.request.body)));
      return json(context.services.policy.listRoles());
    },
  },
  {
    id: 'deleteRole',
    method: 'DELETE',
    path: '/svc/role/{role}',
    access: { kind: 'permission', permission: 'role-delete' },
    summary: 'Delete a custom role (built-in roles cannot be deleted)',
    async handle(context) {
      await context.services.policy.deleteRole(context.params['role']!);
      return json(context.services.policy.listRoles());
    },
  },
  {
    id: 'listPermissions',
    method: 'GET',
    path: '/svc/permissions',
    access: { kind: 'permission', permission: 'permission-list' },
    summary: 'All permissions',
    async handle() {
      return json(PERMISSIONS);
    },
  },
  {
    id: 'listPrincipals',
    method: 'GET',
    path: '/svc/principals',
    access: { kind: 'permission', permission: 'principal-list' },
    summary:
      'Authorization records: an object keyed by principal id, {principal_id, roles, status, execution_user when set} each',
    async handle(context) {
      // execution_user only where the record has one (the App Mesh 3.0 record's optional field).
      const records: Record<string, Record<string, unknown>> = {};
      for (const { id, roles, status, execution_user } of context.services.policy.listPrincipals())
        records[id] = {
          principal_id: id,
          roles,
          status,
          ...(execution_user === undefined ? {} : { execution_user }),
        };
      return json(records);
    },
  },
  {
    id: 'setPrincipal',
    method: 'POST',
    path: '/svc/principal/{id}',
    access: { kind: 'permission', permission: 'principal-set' },
    summary:
      'Set the roles and/or the execution_user (OS user its apps, runs and file transfers run as) of a principal',
    jsonBody: true,
    async handle(context) {
      const id = context.params['id']!;
      const change = parsePrincipalChange(parseJsonBody(context.request.body));
      return json({ principal_id: id, ...(await context.services.policy.setPrincipal(id, change)) });
    },
  },
  {
    id: 'deletePrincipal',
    method: 'DELETE',
    path: '/svc/principal/{id}',
    access: { kind: 'permission', permission: 'principal-delete' },
    summary: 'Tombstone a principal record (kept for audit)',
    async handle(context) {
      const id = context.params['id']!;
      return json({ principal_id: id, ...(await context.services.policy.tombstone(id)) });
    },
  },
];
