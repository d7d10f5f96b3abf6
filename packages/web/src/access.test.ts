import { describe, expect, it } from 'vitest';
import permissions from '../../../spec/permissions.json' with { type: 'json' };
import { decide, type Principal } from './access.ts';

const roles = permissions.roles as Record<string, string[]>;
function principal(role: string, id = role): Principal {
  return { principal_id: id, roles: [role], permissions: roles[role] ?? [], status: 'active' };
}

describe('decide (spec/access.json)', () => {
  const admin = principal('svc-admin');
  const viewer = principal('svc-viewer');
  const maintenance = principal('svc-maintenance');

  it('answers public and authenticated operations', () => {
    expect(decide(undefined, 'getAuthConfig')).toBe(true);
    expect(decide(undefined, 'getSelf')).toBe(false);
    expect(decide(viewer, 'getSelf')).toBe(true);
  });

  it('gives the admin everything and the viewer no change', () => {
    for (const op of ['registerApplication', 'deleteApplication', 'enableApplication', 'runApplication', 'runTask', 'setRole', 'updateConfig'])
      expect(decide(admin, op, { owner_principal_id: 'someone' }), op).toBe(true);
    for (const op of ['registerApplication', 'deleteApplication', 'enableApplication', 'disableApplication', 'runApplication', 'runTask', 'setRole', 'updateConfig'])
      expect(decide(viewer, op, { owner_principal_id: 'someone' }), op).toBe(false);
    expect(decide(viewer, 'listApplications')).toBe(true);
    expect(decide(viewer, 'getApplication', { owner_principal_id: 'someone' })).toBe(true);
  });

  it('follows the role table for svc-maintenance', () => {
    for (const [op, permission] of [
      ['listLabels', 'label-view'],
      ['setLabel', 'label-set'],
      ['getConfig', 'config-view'],
      ['updateConfig', 'config-set'],
    ] as const)
      expect(decide(maintenance, op), op).toBe(maintenance.permissions.includes(permission));
  });

  it('lets an owner delete its own app, and nobody act for a tombstoned principal', () => {
    const dev: Principal = { principal_id: 'dev', roles: ['developer'], permissions: ['app-view', 'app-reg'], status: 'active' };
    expect(decide(dev, 'deleteApplication', { owner_principal_id: 'dev' })).toBe(true);
    expect(decide(dev, 'deleteApplication', { owner_principal_id: 'other' })).toBe(false);
    expect(decide(dev, 'registerApplication', { owner_principal_id: 'other' })).toBe(false);
    expect(decide(dev, 'registerApplication')).toBe(true);
    expect(decide({ ...admin, status: 'tombstoned' }, 'listApplications')).toBe(false);
  });

  it('refuses unknown operations and odd input', () => {
    expect(decide(admin, 'noSuchOperation')).toBe(false);
    expect(decide(admin, '__proto__')).toBe(false);
    expect(decide({ principal_id: 'x', roles: [], permissions: [] }, 'listApplications')).toBe(false);
  });
});
