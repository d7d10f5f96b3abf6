// The authorization policy as data (CONTRACT §8): its validation, one record at a time or a whole
// `work/auth/policy.yaml`, and its forms — the store's state (maps), the document (plain JSON, what
// the cluster registry holds per record) and the file's YAML text. Pure; `policy-store.ts` owns
// the file and the changes.
import { BUILTIN_ROLES, isPermission } from '@svc/protocol';
import type { Permission } from '@svc/protocol';
import { parse, stringify } from 'yaml';
import type { PrincipalStatus } from './principal.ts';

export interface StoredRecord {
  readonly roles: readonly string[];
  readonly status: PrincipalStatus;
  readonly execution_user?: string | undefined;
}

/** POSIX portable user names (useradd's default rule), at most 32 characters. */
export const EXECUTION_USER_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;

/** The policy file is unreadable or invalid; the message names the file and the offending entry. */
export class PolicyFileError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PolicyFileError';
  }
}

export interface PolicyState {
  readonly principals: Map<string, StoredRecord>;
  /** Custom roles only. */
  readonly roles: Map<string, readonly Permission[]>;
}

export const ROLE_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/**
 * Permission names of earlier svc releases in a stored custom role: `principal-view` is App Mesh
 * 3.0's `principal-list`; the `cluster-app-*` pair is gone (cluster endpoints use the application
 * permissions), so it grants nothing rather than something wider. Rewritten on the next save.
 */
const LEGACY_PERMISSIONS: Readonly<Record<string, Permission | undefined>> = {
  'principal-view': 'principal-list',
  'cluster-app-view': undefined,
  'cluster-app-reg': undefined,
};
const MAX_PRINCIPAL_ID_LENGTH = 256;
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
const HEADER =
  '# svc authorization policy (CONTRACT §8). svcd rewrites this file on every change;\n' +
  '# edits made while svcd runs are adopted on its next change. Built-in roles are implicit.\n';

export function isBuiltinRole(name: string): name is keyof typeof BUILTIN_ROLES {
  return Object.hasOwn(BUILTIN_ROLES, name);
}

function isPlainMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why `id` is not an acceptable principal id, or undefined. */
export function principalIdProblem(id: string): string | undefined {
  if (id.length === 0) return 'principal id is empty';
  if (id.length > MAX_PRINCIPAL_ID_LENGTH) return `principal id is longer than ${MAX_PRINCIPAL_ID_LENGTH}`;
  if (CONTROL_CHARACTERS.test(id)) return 'principal id contains control characters';
  return undefined;
}

export function emptyState(): PolicyState {
  return { principals: new Map(), roles: new Map() };
}

export function copyState(state: PolicyState): PolicyState {
  return { principals: new Map(state.principals), roles: new Map(state.roles) };
}

export function roleExists(state: PolicyState, role: string): boolean {
  return isBuiltinRole(role) || state.roles.has(role);
}

type Fail = (where: string, problem: string) => never;

/** One custom role's permissions (legacy names mapped, duplicates dropped). */
function parseRoleEntry(name: string, permissions: unknown, fail: Fail): Permission[] {
  const where = `roles.${name}`;
  if (isBuiltinRole(name)) fail(where, 'is a built-in role and cannot be redefined');
  if (!ROLE_NAME.test(name)) fail(where, 'role names match ^[A-Za-z0-9_.-]{1,128}$');
  if (!Array.isArray(permissions)) fail(where, 'must be a list of permissions');
  const list: Permission[] = [];
  for (const stored of permissions as unknown[]) {
    const permission =
      typeof stored === 'string' && Object.hasOwn(LEGACY_PERMISSIONS, stored)
        ? LEGACY_PERMISSIONS[stored]
        : stored;
    if (permission === undefined) continue;
    if (!isPermission(permission)) {
      fail(where, `unknown permission ${JSON.stringify(permission)} (GET /svc/permissions lists them)`);
    } else if (!list.includes(permission)) {
      list.push(permission);
    }
  }
  return list;
}

/** One principal record, checked against the roles of `state` when `knownRoles` is set. */
function parsePrincipalEntry(
  state: PolicyState,
  id: string,
  record: unknown,
  fail: Fail,
  knownRoles: boolean,
): StoredRecord {
  const where = `principals.${JSON.stringify(id)}`;
  const idProblem = principalIdProblem(id);
  if (idProblem !== undefined) fail(where, idProblem);
  if (record !== null && !isPlainMap(record)) fail(where, 'must be a map with "roles" and "status"');
  const fields = record ?? {};
  for (const key of Object.keys(fields)) {
    if (key !== 'roles' && key !== 'status' && key !== 'execution_user')
      fail(`${where}.${key}`, 'unknown key (expected "roles", "status" or "execution_user")');
  }
  const executionUser = fields['execution_user'] ?? undefined;
  if (
    executionUser !== undefined &&
    (typeof executionUser !== 'string' || !EXECUTION_USER_PATTERN.test(executionUser))
  )
    fail(`${where}.execution_user`, 'must be an OS user name (^[A-Za-z_][A-Za-z0-9_.-]{0,31}$)');
  const status = fields['status'] ?? 'active';
  if (status !== 'active' && status !== 'tombstoned') {
    fail(`${where}.status`, `must be "active" or "tombstoned", not ${JSON.stringify(status)}`);
  }
  const roleList = fields['roles'] ?? [];
  if (!Array.isArray(roleList)) fail(`${where}.roles`, 'must be a list of role names');
  const granted: string[] = [];
  for (const role of roleList as unknown[]) {
    if (typeof role !== 'string') fail(`${where}.roles`, `role ${JSON.stringify(role)} is not a string`);
    const name = role;
    // A tombstoned record keeps its roles for audit even after a custom role is deleted.
    if (knownRoles && status === 'active' && !roleExists(state, name)) {
      fail(`${where}.roles`, `unknown role ${JSON.stringify(name)} (neither built-in nor under "roles")`);
    }
    if (!granted.includes(name)) granted.push(name);
  }
  return {
    roles: granted,
    status: status,
    ...(executionUser === undefined ? {} : { execution_user: executionUser }),
  };
}

/** Parses and validates the file's text; throws PolicyFileError with a precise location. */
export function parsePolicy(text: string, file: string): PolicyState {
  const fail = (where: string, problem: string): never => {
    throw new PolicyFileError(`${file}: ${where}: ${problem}`);
  };
  let document: unknown;
  try {
    document = parse(text, { uniqueKeys: true, maxAliasCount: 0 });
  } catch (error) {
    throw new PolicyFileError(`${file}: not valid YAML: ${(error as Error).message}`, { cause: error });
  }
  const state = emptyState();
  if (document === null || document === undefined) return state;
  if (!isPlainMap(document)) fail('top level', 'must be a map with the keys "principals" and "roles"');
  const top = document as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (key !== 'principals' && key !== 'roles') fail(key, 'unknown key (expected "principals" or "roles")');
  }

  const roles = top['roles'] ?? {};
  if (!isPlainMap(roles)) fail('roles', 'must be a map of role name to a list of permissions');
  for (const [name, permissions] of Object.entries(roles as Record<string, unknown>)) {
    state.roles.set(name, parseRoleEntry(name, permissions, fail));
  }

  const principals = top['principals'] ?? {};
  if (!isPlainMap(principals)) fail('principals', 'must be a map of principal id to {roles, status}');
  for (const [id, record] of Object.entries(principals as Record<string, unknown>)) {
    state.principals.set(id, parsePrincipalEntry(state, id, record, fail, true));
  }
  return state;
}

/**
 * The policy as plain JSON (the shape of policy.yaml): what a shared registry stores, one record
 * per custom role and per principal.
 */
export interface PolicyDocument {
  readonly roles: Readonly<Record<string, readonly Permission[]>>;
  readonly principals: Readonly<Record<string, PolicyDocumentPrincipal>>;
}
export interface PolicyDocumentPrincipal {
  readonly roles: readonly string[];
  readonly status: PrincipalStatus;
  readonly execution_user?: string;
}

/**
 * Validates records read from a shared registry one by one: an invalid record is reported through
 * `onInvalid` and left out (a principal left out is unknown, so it holds no permission), never
 * failing the rest. An active principal naming a role that does not exist keeps it (it grants nothing).
 */
export function checkPolicyRecords(
  roles: Readonly<Record<string, unknown>>,
  principals: Readonly<Record<string, unknown>>,
  onInvalid: (where: string, problem: string) => void,
): PolicyDocument {
  const state = emptyState();
  class EntryProblem extends Error {
    readonly where: string;
    constructor(where: string, problem: string) {
      super(problem);
      this.where = where;
    }
  }
  const fail = (where: string, problem: string): never => {
    throw new EntryProblem(where, problem);
  };
  const tryEntry = (run: () => void): void => {
    try {
      run();
    } catch (error) {
      if (!(error instanceof EntryProblem)) throw error;
      onInvalid(error.where, error.message);
    }
  };
  for (const [name, permissions] of Object.entries(roles)) {
    tryEntry(() => state.roles.set(name, parseRoleEntry(name, permissions, fail)));
  }
  for (const [id, record] of Object.entries(principals)) {
    tryEntry(() => state.principals.set(id, parsePrincipalEntry(state, id, record, fail, false)));
  }
  return documentOf(state);
}

export function documentOf(state: PolicyState): PolicyDocument {
  const byKey = <T>(map: Map<string, T>): [string, T][] =>
    [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    roles: Object.fromEntries(byKey(state.roles).map(([name, permissions]) => [name, [...permissions]])),
    principals: Object.fromEntries(
      byKey(state.principals).map(([id, record]) => [
        id,
        {
          roles: [...record.roles],
          status: record.status,
          ...(record.execution_user === undefined ? {} : { execution_user: record.execution_user }),
        },
      ]),
    ),
  };
}

/** A document that `checkPolicyRecords` or `documentOf` produced, as state. */
export function stateOf(document: PolicyDocument): PolicyState {
  const state = emptyState();
  for (const [name, permissions] of Object.entries(document.roles)) state.roles.set(name, [...permissions]);
  for (const [id, record] of Object.entries(document.principals)) {
    state.principals.set(id, {
      roles: [...record.roles],
      status: record.status,
      ...(record.execution_user === undefined ? {} : { execution_user: record.execution_user }),
    });
  }
  return state;
}

export function serializePolicy(state: PolicyState): string {
  const { principals, roles } = documentOf(state);
  return HEADER + stringify({ principals, roles });
}

/** Copies into `draft` every record that `edited` changed relative to `base`; whether any was. */
export function applyEdits(draft: PolicyState, base: PolicyState, edited: PolicyState): boolean {
  let changed = false;
  const merge = <T>(target: Map<string, T>, before: Map<string, T>, after: Map<string, T>): void => {
    for (const key of new Set([...before.keys(), ...after.keys()])) {
      const value = after.get(key);
      if (JSON.stringify(value) === JSON.stringify(before.get(key))) continue;
      if (value === undefined) target.delete(key);
      else target.set(key, value);
      changed = true;
    }
  };
  merge(draft.roles, base.roles, edited.roles);
  merge(draft.principals, base.principals, edited.principals);
  return changed;
}
