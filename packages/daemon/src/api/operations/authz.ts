// Authorization records: the caller's principal, roles, permissions and principals (CONTRACT §5–§6, §8).
import { PERMISSIONS, SvcError } from '@svc/protocol';
import { lookupOsUser } from '../../privilege/os-user.ts';
import type { Principal } from '../../auth/principal.ts';
import type * as z from 'zod';
import { json } from '../responses.ts';
import {
  PermissionList,
  PrincipalAnswer,
  PrincipalList,
  RoleMap,
  PrincipalChange,
  RolePermissions,
  Self,
} from '../schemas.ts';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';

type NoQuery = z.ZodType<Record<string, never>>;
const roles = [{ status: 200, description: 'every role and its permissions', json: RoleMap }] as const;
const principal = [{ status: 200, description: 'the principal record', json: PrincipalAnswer }] as const;

/**
 * The caller's principal as GET /svc/principal/self shows it. `execution_user` is the OS user its
 * applications and runs execute as; null means the daemon's own user (no per-principal user and
 * no BaseConfig.DefaultExecUser).
 */
function selfView(p: Principal): Record<string, unknown> {
  return {
    principal_id: p.id,
    roles: p.roles,
    permissions: sortedPermissions(p.permissions),
    status: p.status,
    execution_user: p.executionUser ?? null,
    expires_at: p.expiresAt,
  };
}

/**
 * The sorted array of a permission set, kept per set: the policy store hands out one set per role
 * combination until the policy changes, and /svc/self is a frequent call.
 */
const sorted = new WeakMap<ReadonlySet<string>, readonly string[]>();
function sortedPermissions(permissions: ReadonlySet<string>): readonly string[] {
  let list = sorted.get(permissions);
  if (list === undefined) {
    list = Object.freeze([...permissions].sort());
    sorted.set(permissions, list);
  }
  return list;
}

export const authzOperations: Operation<Services>[] = [
  defineOperation<Services>({
    id: 'getSelf',
    method: 'GET',
    path: '/svc/principal/self',
    access: { kind: 'authenticated' },
    summary: "The caller's principal: principal_id, roles, permissions, status, execution_user",
    responses: [{ status: 200, description: 'the caller', json: Self }],
    async handle(context) {
      return json(selfView(context.principal!));
    },
  }),
  defineOperation<Services>({
    id: 'getSelfAlias',
    method: 'GET',
    path: '/svc/self',
    access: { kind: 'authenticated' },
    summary: 'Alias of GET /svc/principal/self',
    responses: [{ status: 200, description: 'the caller', json: Self }],
    async handle(context) {
      return json(selfView(context.principal!));
    },
  }),
  defineOperation<Services>({
    id: 'getSelfPermissions',
    method: 'GET',
    path: '/svc/principal/self/permissions',
    access: { kind: 'authenticated' },
    summary: "The caller's effective permissions (an array, sorted)",
    responses: [{ status: 200, description: 'the permissions', json: PermissionList }],
    async handle(context) {
      return json([...context.principal!.permissions].sort());
    },
  }),
  defineOperation<Services>({
    id: 'listRoles',
    method: 'GET',
    path: '/svc/roles',
    access: { kind: 'permission', permission: 'role-view' },
    summary: 'Roles and their permissions',
    responses: roles,
    async handle(context) {
      return json(context.services.policy.listRoles());
    },
  }),
  defineOperation<Services, NoQuery, typeof RolePermissions>({
    id: 'setRole',
    method: 'POST',
    path: '/svc/role/{role}',
    access: { kind: 'permission', permission: 'role-set' },
    summary: 'Create or replace a custom role (built-in roles cannot change)',
    body: { kind: 'json', schema: RolePermissions },
    responses: roles,
    async handle(context) {
      const body = context.input.body;
      await context.services.policy.setRole(
        context.params['role']!,
        Array.isArray(body) ? body : body.permissions,
      );
      return json(context.services.policy.listRoles());
    },
  }),
  defineOperation<Services>({
    id: 'deleteRole',
    method: 'DELETE',
    path: '/svc/role/{role}',
    access: { kind: 'permission', permission: 'role-delete' },
    summary: 'Delete a custom role (built-in roles cannot be deleted)',
    responses: roles,
    async handle(context) {
      await context.services.policy.deleteRole(context.params['role']!);
      return json(context.services.policy.listRoles());
    },
  }),
  defineOperation<Services>({
    id: 'listPermissions',
    method: 'GET',
    path: '/svc/permissions',
    access: { kind: 'permission', permission: 'permission-list' },
    summary: 'All permissions',
    responses: [{ status: 200, description: 'every permission', json: PermissionList }],
    async handle() {
      return json(PERMISSIONS);
    },
  }),
  defineOperation<Services>({
    id: 'listPrincipals',
    method: 'GET',
    path: '/svc/principals',
    access: { kind: 'permission', permission: 'principal-list' },
    summary:
      'Authorization records: an object keyed by principal id, {principal_id, roles, status, execution_user when set} each',
    responses: [{ status: 200, description: 'the principals by id', json: PrincipalList }],
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
  }),
  defineOperation<Services, NoQuery, typeof PrincipalChange>({
    id: 'setPrincipal',
    method: 'POST',
    path: '/svc/principal/{id}',
    access: { kind: 'permission', permission: 'principal-set' },
    summary:
      'Set the roles and/or the execution_user (OS user its apps, runs and file transfers run as) of a principal',
    body: { kind: 'json', schema: PrincipalChange },
    responses: principal,
    async handle(context) {
      const id = context.params['id']!;
      const { roles, execution_user: user } = context.input.body;
      if (typeof user === 'string' && user !== '' && lookupOsUser(user) === undefined)
        throw new SvcError('bad_request', `execution_user: no OS user ${user} on this host`);
      const change: { roles?: string[]; executionUser?: string | null } = {};
      if (roles !== undefined) change.roles = roles;
      if (user !== undefined) change.executionUser = user === '' ? null : user;
      return json({ principal_id: id, ...(await context.services.policy.setPrincipal(id, change)) });
    },
  }),
  defineOperation<Services>({
    id: 'deletePrincipal',
    method: 'DELETE',
    path: '/svc/principal/{id}',
    access: { kind: 'permission', permission: 'principal-delete' },
    summary: 'Tombstone a principal record (kept for audit)',
    responses: principal,
    async handle(context) {
      const id = context.params['id']!;
      return json({ principal_id: id, ...(await context.services.policy.tombstone(id)) });
    },
  }),
];
