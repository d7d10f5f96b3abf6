import { BUILTIN_ROLES } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { MCP_PERMISSIONS, refusalOf, selfViewOf, type SelfView } from './principal-check.ts';

function self(roles: string[], permissions: readonly string[], status = 'active'): SelfView {
  return { principal_id: 'p', roles, permissions, status };
}

describe('who may hold an MCP session', () => {
  it("derives the tools' permissions from spec/access.json", () => {
    expect([...MCP_PERMISSIONS].sort()).toEqual(
      [
        'app-control',
        'app-delete',
        'app-output-view',
        'app-reg',
        'app-run-sync',
        'app-run-task',
        'app-view',
        'app-view-all',
        'host-resource-view',
        'label-delete',
        'label-set',
        'label-view',
      ].sort(),
    );
  });

  it('admits active principals of the built-in roles', () => {
    for (const [role, permissions] of Object.entries(BUILTIN_ROLES))
      expect(refusalOf(self([role], permissions)), role).toBeUndefined();
  });

  it('refuses a principal without roles, or whose roles grant no permission a tool needs', () => {
    expect(refusalOf(self([], []))).toMatch(/holds no role/);
    expect(refusalOf(self([], ['app-view']))).toMatch(/holds no role/);
    expect(refusalOf(self(['auditor'], ['role-view', 'permission-list']))).toMatch(/holds no role/);
    expect(refusalOf(self(['empty'], []))).toMatch(/holds no role/);
  });

  it('refuses a tombstoned principal whatever its roles', () => {
    expect(refusalOf(self(['svc-admin'], BUILTIN_ROLES['svc-admin'], 'tombstoned'))).toMatch(/is tombstoned/);
  });

  it("reads svcd's self view and nothing else", () => {
    const view = { principal_id: 'a', roles: ['r'], permissions: ['app-view'], status: 'active', x: 1 };
    expect(selfViewOf(view)).toEqual({
      principal_id: 'a',
      roles: ['r'],
      permissions: ['app-view'],
      status: 'active',
    });
    expect(selfViewOf({ ...view, roles: 'r' })).toBeUndefined();
    expect(selfViewOf({ ...view, permissions: [1] })).toBeUndefined();
    expect(selfViewOf({ ...view, status: undefined })).toBeUndefined();
    expect(selfViewOf(null)).toBeUndefined();
    expect(selfViewOf('a')).toBeUndefined();
  });
});
