// Which operations the signed-in principal may call, decided from spec/access.json (bundled at build)
// and its permissions from GET /svc/principal/self. The UI shows an action only when `can` says yes;
// the daemon still decides every request (a refused call shows its error). Pure apart from the
// `self` signal; `decide` is unit-tested.
import { signal } from '@preact/signals';
import access from '../../../spec/access.json' with { type: 'json' };

/** What the UI knows of the signed-in principal (the answer of getSelf). */
export interface Principal {
  principal_id: string;
  roles: readonly string[];
  permissions: readonly string[];
  status?: string;
  [field: string]: unknown;
}

/** Ownership of an application, for the `app` rules: its owner and who it is shared with. */
export interface AppScope {
  owner_principal_id?: string | undefined;
  /** Principals or roles the app is shared with, when the daemon reports them. */
  shared_with?: readonly string[] | undefined;
}

export type OperationId = keyof typeof access.operations;

interface Rule {
  kind: string;
  permission?: string;
  also?: readonly string[];
}

const RULES = access.operations as Readonly<Record<string, { rule: Rule }>>;

/** The signed-in principal; undefined before sign-in (web-admin's views read it too). */
export const self = signal<Principal | undefined>(undefined);

/**
 * Whether `principal` may call `operationId` (on `app`, for per-application operations). Without
 * `app`, an `app` rule answers whether the principal may do it on some application (its own).
 */
export function decide(principal: Principal | undefined, operationId: string, app?: AppScope): boolean {
  const rule = RULES[operationId]?.rule;
  if (rule === undefined) return false;
  if (rule.kind === 'public') return true;
  if (principal === undefined) return false;
  if (rule.kind === 'authenticated') return true;
  if (principal.status !== undefined && principal.status !== 'active') return false;
  const has = (p: string) => principal.permissions.includes(p);
  const permission = rule.permission ?? '';
  switch (rule.kind) {
    case 'permission':
    case 'subscription-owner':
      return has(permission) && (rule.also ?? []).every(has);
    case 'app': {
      if (has('app-manage-all')) return true;
      const owns = app?.owner_principal_id !== undefined && app.owner_principal_id === principal.principal_id;
      if (permission === 'app-delete' && owns) return true;
      if (!has(permission)) return permission === 'app-view' && has('app-view-all');
      if (app === undefined || owns) return true;
      if (permission === 'app-view' && has('app-view-all')) return true;
      const shared = app.shared_with ?? [];
      return shared.includes(principal.principal_id) || principal.roles.some((r) => shared.includes(r));
    }
    default:
      return false;
  }
}

/** `decide` for the signed-in principal; reading it inside a component re-renders on sign-in. */
export function can(operationId: OperationId, app?: AppScope): boolean {
  return decide(self.value, operationId, app);
}
