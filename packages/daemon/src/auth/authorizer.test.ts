import { describe, expect, it } from 'vitest';
import { BUILTIN_ROLES, SvcError } from '@svc/protocol';
import type { Permission } from '@svc/protocol';
import { authorize, authorizeApp, wwwAuthenticate } from './authorizer.ts';
import type { Principal } from './principal.ts';

function principal(
  id: string,
  permissions: readonly Permission[],
  status: Principal['status'] = 'active',
): Principal {
  return { id, roles: [], status, permissions: new Set(permissions), expiresAt: 0 };
}

const admin = principal('admin', BUILTIN_ROLES['svc-admin']);
const maintenance = principal('client:svc-automation', BUILTIN_ROLES['svc-maintenance']);
const viewer = principal('guest', BUILTIN_ROLES['svc-viewer']);
const dev = principal('dev', [
  'app-view',
  'app-control',
  'app-output-view',
  'app-reg',
  'app-subscribe',
  'app-run-task',
]);
const bare = principal('bare', []);

const alicesApp = { owner: 'alice', others: 'deny' } as const;
const devsApp = { owner: 'dev', others: 'deny' } as const;
/** permission 33: others may do everything their permissions allow. */
const sharedWithDev = { owner: 'alice', others: 'write' } as const;
/** permission 22: others may view, read output, subscribe and run copies. */
const readShared = { owner: 'alice', others: 'read' } as const;
const systemApp = { others: 'deny' } as const;

function outcome(fn: () => void): string {
  try {
    fn();
    return 'allow';
  } catch (error) {
    return (error as SvcError).code;
  }
}

describe('authorize', () => {
  it('allows a held permission and refuses a missing one with forbidden', () => {
    expect(outcome(() => authorize(viewer, 'app-view'))).toBe('allow');
    expect(() => authorize(viewer, 'app-reg')).toThrow(
      new SvcError('forbidden', 'permission app-reg required'),
    );
    expect(outcome(() => authorize(bare, 'app-view'))).toBe('forbidden');
  });

  it('refuses everything to a tombstoned principal, even with permissions', () => {
    const ghost = principal('ghost', BUILTIN_ROLES['svc-admin'], 'tombstoned');
    expect(outcome(() => authorize(ghost, 'app-view'))).toBe('principal_tombstoned');
    expect(outcome(() => authorizeApp(ghost, 'app-delete', { owner: 'ghost', others: 'deny' }))).toBe(
      'principal_tombstoned',
    );
  });
});

describe('authorizeApp rule table', () => {
  it.each([
    // [who, permission, app, expected]
    ['dev', dev, 'app-control', devsApp, 'allow'],
    ['dev', dev, 'app-control', sharedWithDev, 'allow'],
    ['dev', dev, 'app-control', alicesApp, 'forbidden'],
    ['dev', dev, 'app-control', systemApp, 'forbidden'],
    ['dev', dev, 'app-output-view', sharedWithDev, 'allow'],
    ['dev', dev, 'app-output-view', alicesApp, 'forbidden'],
    ['dev', dev, 'app-view', devsApp, 'allow'],
    ['dev', dev, 'app-view', alicesApp, 'forbidden'],
    ['dev', dev, 'app-subscribe', devsApp, 'allow'],
    ['dev', dev, 'app-subscribe', alicesApp, 'forbidden'],
    ['dev', dev, 'app-reg', alicesApp, 'forbidden'],
    ['dev', dev, 'app-run-task', sharedWithDev, 'allow'],
    // owner needs no permission to delete; a shared principal needs app-delete
    ['dev', dev, 'app-delete', devsApp, 'allow'],
    ['bare owner', principal('bare', []), 'app-delete', { owner: 'bare', others: 'deny' }, 'allow'],
    ['dev', dev, 'app-delete', sharedWithDev, 'forbidden'],
    ['dev+delete', principal('dev', ['app-delete']), 'app-delete', sharedWithDev, 'allow'],
    ['dev+delete', principal('dev', ['app-delete']), 'app-delete', alicesApp, 'forbidden'],
    // the owner still needs the permission for anything but delete
    ['bare owner', principal('bare', []), 'app-control', { owner: 'bare', others: 'deny' }, 'forbidden'],
    // app-manage-all widens scope, not actions
    ['maintenance', maintenance, 'app-control', alicesApp, 'allow'],
    ['maintenance', maintenance, 'app-control', systemApp, 'allow'],
    ['maintenance', maintenance, 'app-delete', alicesApp, 'forbidden'],
    ['maintenance', maintenance, 'app-reg', alicesApp, 'forbidden'],
    ['maintenance', maintenance, 'app-run-task', alicesApp, 'forbidden'],
    ['maintenance', maintenance, 'app-view', alicesApp, 'allow'],
    // viewer: sees every app, reads output only of its own or shared apps
    ['viewer', viewer, 'app-view', alicesApp, 'allow'],
    ['viewer', viewer, 'app-output-view', alicesApp, 'forbidden'],
    ['viewer', viewer, 'app-output-view', readShared, 'allow'],
    ['dev', dev, 'app-output-view', readShared, 'allow'],
    ['dev', dev, 'app-subscribe', readShared, 'allow'],
    ['dev', dev, 'app-control', readShared, 'forbidden'],
    ['dev', dev, 'app-reg', readShared, 'forbidden'],
    ['dev', dev, 'app-run-task', readShared, 'forbidden'],
    ['dev+delete', principal('dev', ['app-delete']), 'app-delete', readShared, 'forbidden'],
    ['viewer', viewer, 'app-control', alicesApp, 'forbidden'],
    ['viewer', viewer, 'app-subscribe', alicesApp, 'forbidden'],
    ['admin', admin, 'app-delete', alicesApp, 'allow'],
    ['admin', admin, 'app-output-view', systemApp, 'allow'],
    ['admin', admin, 'app-subscribe', alicesApp, 'allow'],
    ['admin', admin, 'app-run-task', systemApp, 'allow'],
    // an app with no owner is owned by nobody, even a principal with an empty id
    ['empty id', principal('', ['app-control']), 'app-control', systemApp, 'forbidden'],
  ] as const)('%s: %s on %j → %s', (_who, p, permission, app, expected) => {
    expect(outcome(() => authorizeApp(p, permission, app))).toBe(expected);
  });

  it('says which permission is missing', () => {
    expect(() => authorizeApp(maintenance, 'app-delete', alicesApp)).toThrow(
      'permission app-delete required',
    );
    expect(() => authorizeApp(dev, 'app-control', alicesApp)).toThrow('permission app-manage-all required');
  });
});

describe('wwwAuthenticate', () => {
  const url = 'https://127.0.0.1:6060/.well-known/oauth-protected-resource';

  it('has no error attributes when the token was missing', () => {
    expect(wwwAuthenticate(undefined, url)).toBe(`Bearer realm="svc", resource_metadata="${url}"`);
  });

  it('names invalid_token with a description', () => {
    expect(wwwAuthenticate('invalid_token', url, 'token expired')).toBe(
      `Bearer realm="svc", error="invalid_token", error_description="token expired", resource_metadata="${url}"`,
    );
  });

  it('keeps quotes, backslashes and non-ASCII out of attribute values', () => {
    const header = wwwAuthenticate('invalid_token', url, 'bad "claim" \\ é\n');
    expect(header).toContain(`error_description="bad 'claim' /   "`);
    expect(header.split('"').length).toBe(9); // four quoted values
  });
});
