// Authorization records: the caller's principal, roles, permissions and principals (CONTRACT §5–§6, §8).
import { PERMISSIONS } from '@svc/protocol';
import type * as z from 'zod';
import { json } from '../responses.ts';
import {
  PermissionList,
  PrincipalAnswer,
  PrincipalList,
  RoleMap,
  RoleNames,
  RolePermissions,
  Self,
} from '../schemas.ts';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';

type NoQuery = z.ZodType<Record<string, never>>;
const roles = [{ status: 200, description: 'every role and its permissions', json: RoleMap }] as const;
const principal = [{ status: 200, description: 'the principal record', json: PrincipalAnswer }] as const;

export const authzOperations: Operation<Services>[] = [
  defineOperation<Services>({
    id: 'getSelf',
    method: 'GET',
    path: '/svc/self',
    access: { kind: 'authenticated' },
    summary: "The caller's principal: id, roles, permissions, status",
    responses: [{ status: 200, description: 'the caller', json: Self }],
    async handle(context) {
      const p = context.principal!;
      return json({
        principal_id: p.id,
        roles: p.roles,
        permissions: [...p.permissions].sort(),
        status: p.status,
        expires_at: p.expiresAt,
      });
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
    access: { kind: 'permission', permission: 'principal-view' },
    summary: 'Authorization records',
    responses: [{ status: 200, description: 'the principals', json: PrincipalList }],
    async handle(context) {
      return json(context.services.policy.listPrincipals());
    },
  }),
  defineOperation<Services, NoQuery, typeof RoleNames>({
    id: 'setPrincipal',
    method: 'POST',
    path: '/svc/principal/{id}',
    access: { kind: 'permission', permission: 'principal-set' },
    summary: 'Set the roles of a principal',
    body: { kind: 'json', schema: RoleNames },
    responses: principal,
    async handle(context) {
      const id = context.params['id']!;
      return json({
        principal_id: id,
        ...(await context.services.policy.setRoles(id, context.input.body.roles)),
      });
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
