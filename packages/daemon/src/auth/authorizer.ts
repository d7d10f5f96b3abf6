// Authorization decisions: pure functions of a principal, a permission and (for per-application
// operations) the application's owner and share list. No I/O, no clock.
import { SvcError } from '@svc/protocol';
import type { Permission } from '@svc/protocol';
import type { Principal } from './principal.ts';

function refuseTombstoned(principal: Principal): void {
  if (principal.status === 'tombstoned') {
    throw new SvcError('principal_tombstoned', `principal ${principal.id} was deleted`);
  }
}

/** Throws unless the principal is active and holds `permission`. */
export function authorize(principal: Principal, permission: Permission): void {
  refuseTombstoned(principal);
  if (!principal.permissions.has(permission)) {
    throw new SvcError('forbidden', `permission ${permission} required`);
  }
}

/** What authorizeApp needs to know of an application. */
export interface AppAccess {
  /** Principal id of the registering caller; absent for bundled and adopted applications. */
  readonly owner?: string | undefined;
  /** What other principals may do (the tens digit of the app's `permission`: 1 deny, 2 read, 3 write). */
  readonly others: OthersAccess;
}

export type OthersAccess = 'deny' | 'read' | 'write';

/** Permissions a `read` share extends to other principals; `write` extends every one. */
const READ_SHARE: ReadonlySet<Permission> = new Set<Permission>([
  'app-view',
  'app-output-view',
  'app-subscribe',
  'app-run-async',
  'app-run-sync',
]);

/**
 * Per-application authorization, step 3 of an `app` access rule: access-rules.ts has already
 * checked the permission and that the caller sees the app (an app it does not see is the 404 of a
 * missing one, never this function's 403). "mine" = the caller is the owner, or the owner shared the app
 * with other principals for this kind of action (`permission` tens digit: read covers viewing,
 * output, subscribing and running a copy; write covers every action). Rule table, checked top to bottom (a tombstoned principal is refused first):
 *
 * | permission asked | caller holds                          | may act on                      |
 * |------------------|---------------------------------------|---------------------------------|
 * | app-delete       | (nothing)                             | apps it owns (owner needs none) |
 * | app-delete       | app-delete                            | mine; any with app-manage-all   |
 * | app-view         | app-view-all or app-manage-all        | any app                         |
 * | app-view         | app-view                              | mine                            |
 * | app-subscribe    | app-subscribe + (app-view-all or app-manage-all) | any app              |
 * | app-subscribe    | app-subscribe                         | mine                            |
 * | any other (app-control, app-output-view, app-reg on an existing app, app-run-task;         |
 * |  a run of a copy asks app-output-view of the original besides its run permission)           |
 * |                  | that permission                       | mine; any with app-manage-all   |
 *
 * app-manage-all widens *which* apps, never *what* may be done: svc-maintenance (app-control +
 * app-manage-all) controls every app but cannot delete, register or run tasks.
 * Reading output is not implied by app-view-all (CONTRACT §6: output of others' apps needs
 * app-manage-all), although STDOUT events follow subscription visibility; the API layer must not
 * deliver STDOUT events of apps the subscriber could not read output of.
 */
export function authorizeApp(principal: Principal, permission: Permission, app: AppAccess): void {
  refuseTombstoned(principal);
  const owns = app.owner !== undefined && app.owner === principal.id;
  const mine = owns || app.others === 'write' || (app.others === 'read' && READ_SHARE.has(permission));
  const has = (p: Permission): boolean => principal.permissions.has(p);

  if (permission === 'app-delete' && owns) return;

  if (permission === 'app-view') {
    if (has('app-view-all') || has('app-manage-all')) return;
    if (!has('app-view')) throw new SvcError('forbidden', 'permission app-view required');
  } else {
    if (!has(permission)) throw new SvcError('forbidden', `permission ${permission} required`);
    if (permission === 'app-subscribe' && (has('app-view-all') || has('app-manage-all'))) return;
    if (permission !== 'app-subscribe' && has('app-manage-all')) return;
  }
  if (!mine) {
    throw new SvcError(
      'forbidden',
      `permission app-manage-all required for an application owned by another principal`,
    );
  }
}

/**
 * `WWW-Authenticate` value for a 401 (RFC 6750 §3, RFC 9728 §5.1). Without `error` (no bearer at
 * all) it carries no error attributes. `description` must not contain the token.
 */
export function wwwAuthenticate(
  error: 'invalid_token' | undefined,
  resourceMetadataUrl: string,
  description?: string,
): string {
  // RFC 6750 §3: attribute values are %x20-21 / %x23-5B / %x5D-7E, so no quote, backslash or
  // non-ASCII at all (escaping is not allowed); replace rather than escape.
  const quote = (value: string): string =>
    `"${value
      .replace(/"/g, "'")
      .replace(/\\/g, '/')
      .replace(/[^\x20-\x7e]/g, ' ')}"`;
  const parts = ['realm="svc"'];
  if (error !== undefined) {
    parts.push(`error=${quote(error)}`);
    if (description !== undefined) parts.push(`error_description=${quote(description)}`);
  }
  parts.push(`resource_metadata=${quote(resourceMetadataUrl)}`);
  return `Bearer ${parts.join(', ')}`;
}
