// The authorization policy, `work/auth/policy.yaml` (CONTRACT §8):
//
//   principals:
//     <principal-id>: { roles: [<role>…], status: active|tombstoned, execution_user?: <os user> }
//   roles:
//     <custom-role>: [<permission>…]      # built-in roles (BUILTIN_ROLES) are implicit and fixed
//
// Contracts:
// - Operators may write the file before the first start. `open` validates it completely and
//   throws PolicyFileError naming the file, the path inside it and the problem: the daemon refuses
//   to start rather than run with a policy it misread. A missing `status` means `active`; a missing
//   `roles` means none; unknown keys are errors (a typo like `role:` must not silently grant nothing).
// - Every change is one serialized step: re-read the file if someone else changed it since our
//   last read or write (the operator helper's add-user/delete-user edit it while svcd runs), apply
//   the change to a copy, write the copy atomically (temp + fsync + rename, mode 0600), and only
//   then make it current. A failed write leaves memory and disk as they were.
// - Reads (`resolve` of a known principal, `getPrincipal`, `listRoles`…) never wait for a write.
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { BUILTIN_ROLES, SvcError, isPermission } from '@svc/protocol';
import type { Permission } from '@svc/protocol';
import { parse, stringify } from 'yaml';
import { writeFileAtomic } from '../util/atomic-file.ts';
import type { Principal, PrincipalStatus } from './principal.ts';

export interface PrincipalRecord {
  readonly id: string;
  readonly roles: readonly string[];
  readonly status: PrincipalStatus;
  /** OS user its applications, runs and file transfers execute as (App Mesh 3.0 `execution_user`). */
  readonly execution_user?: string | undefined;
}

interface StoredRecord {
  readonly roles: readonly string[];
  readonly status: PrincipalStatus;
  readonly execution_user?: string | undefined;
}

/** POSIX portable user names (useradd's default rule), at most 32 characters. */
export const EXECUTION_USER_PATTERN = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;

export interface PolicyStoreOptions {
  /** Principals to create when absent (never overriding or reviving an existing record): id → roles. */
  seed?: Record<string, readonly string[]> | undefined;
  /** Replaces the file atomically; default `writeFileAtomic`. A seam for failure tests. */
  writeFile?: ((path: string, data: string, mode: number) => Promise<void>) | undefined;
}

/** The policy file is unreadable or invalid; the message names the file and the offending entry. */
export class PolicyFileError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PolicyFileError';
  }
}

interface PolicyState {
  readonly principals: Map<string, StoredRecord>;
  /** Custom roles only. */
  readonly roles: Map<string, readonly Permission[]>;
}

const ROLE_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
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
const EMPTY_PERMISSIONS: ReadonlySet<Permission> = new Set();
const HEADER =
  '# svc authorization policy (CONTRACT §8). svcd rewrites this file on every change;\n' +
  '# edits made while svcd runs are adopted on its next change. Built-in roles are implicit.\n';

function isBuiltinRole(name: string): name is keyof typeof BUILTIN_ROLES {
  return Object.hasOwn(BUILTIN_ROLES, name);
}

function isPlainMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why `id` is not an acceptable principal id, or undefined. */
function principalIdProblem(id: string): string | undefined {
  if (id.length === 0) return 'principal id is empty';
  if (id.length > MAX_PRINCIPAL_ID_LENGTH) return `principal id is longer than ${MAX_PRINCIPAL_ID_LENGTH}`;
  if (CONTROL_CHARACTERS.test(id)) return 'principal id contains control characters';
  return undefined;
}

function emptyState(): PolicyState {
  return { principals: new Map(), roles: new Map() };
}

function copyState(state: PolicyState): PolicyState {
  return { principals: new Map(state.principals), roles: new Map(state.roles) };
}

function roleExists(state: PolicyState, role: string): boolean {
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

function documentOf(state: PolicyState): PolicyDocument {
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
function stateOf(document: PolicyDocument): PolicyState {
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

/**
 * The shared policy of a cluster (CONTRACT §9 `svc/security/…`). When a store has one, every
 * change is made there — atomically, against the latest shared state, retried on a concurrent
 * change — and the local file is only the node's cache of it.
 */
export interface PolicyAuthority {
  /**
   * Applies `change` to the latest shared policy and commits the result unless another node
   * changed the policy meanwhile (then `change` runs again on the newer policy). `change` returns
   * undefined for "nothing to change" (then nothing is written and update resolves undefined) and
   * may throw (a SvcError reaches the caller). Resolves the committed policy. Rejects with
   * SvcError `unavailable` when the registry cannot be reached, `conflict` after repeated races.
   */
  update(
    change: (current: PolicyDocument) => PolicyDocument | undefined,
  ): Promise<PolicyDocument | undefined>;
}

function serializePolicy(state: PolicyState): string {
  const { principals, roles } = documentOf(state);
  return HEADER + stringify({ principals, roles });
}

interface DiskStamp {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

async function stampOf(file: string): Promise<DiskStamp | undefined> {
  try {
    const s = await stat(file);
    return { ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function sameStamp(a: DiskStamp | undefined, b: DiskStamp | undefined): boolean {
  return a?.ino === b?.ino && a?.size === b?.size && a?.mtimeMs === b?.mtimeMs;
}

async function readPolicy(file: string): Promise<{ state: PolicyState; text: string | undefined }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: emptyState(), text: undefined };
    throw new PolicyFileError(`${file}: cannot be read: ${(error as Error).message}`, { cause: error });
  }
  return { state: parsePolicy(text, file), text };
}

function badRequest(message: string): SvcError {
  return new SvcError('bad_request', message);
}

function checkPrincipalId(id: string): void {
  const problem = principalIdProblem(id);
  if (problem !== undefined) throw badRequest(problem);
}

/** Copies into `draft` every record that `edited` changed relative to `base`; whether any was. */
function applyEdits(draft: PolicyState, base: PolicyState, edited: PolicyState): boolean {
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

export class PolicyStore {
  readonly file: string;
  #state: PolicyState;
  #stamp: DiskStamp | undefined;
  /** What the file held at `#stamp` (an edit of the file is its difference from this). */
  #base: PolicyState;
  #authority: PolicyAuthority | undefined;
  #warn: (message: string, fields: Record<string, unknown>) => void = () => undefined;
  readonly #seed: Readonly<Record<string, readonly string[]>>;
  #queue: Promise<unknown> = Promise.resolve();
  /** Permission sets by the role list's key; cleared whenever custom roles change. */
  #permissionSets = new Map<string, ReadonlySet<Permission>>();
  readonly #writeFile: (path: string, data: string, mode: number) => Promise<void>;
  readonly #tombstoneListeners = new Set<(principalId: string) => void>();

  private constructor(
    file: string,
    state: PolicyState,
    stamp: DiskStamp | undefined,
    options: PolicyStoreOptions,
  ) {
    this.file = file;
    this.#writeFile = options.writeFile ?? writeFileAtomic;
    this.#state = state;
    this.#stamp = stamp;
    this.#base = state;
    this.#seed = options.seed ?? {};
  }

  /** Reads and validates the policy (absent = empty), adds missing seed principals, persists if needed. */
  static async open(file: string, options: PolicyStoreOptions = {}): Promise<PolicyStore> {
    const stamp = await stampOf(file);
    const { state, text } = await readPolicy(file);
    let changed = text === undefined;
    for (const [id, roles] of Object.entries(options.seed ?? {})) {
      if (state.principals.has(id)) continue;
      for (const role of roles) {
        if (!roleExists(state, role))
          throw new PolicyFileError(`${file}: seed principal ${id}: unknown role ${role}`);
      }
      state.principals.set(id, { roles: [...roles], status: 'active' });
      changed = true;
    }
    const store = new PolicyStore(file, copyState(state), stamp, options);
    if (changed) {
      await mkdir(dirname(file), { recursive: true, mode: 0o700 });
      await store.#write(state);
    }
    return store;
  }

  /**
   * The principal for a verified token. A principal seen for the first time gets a role-less active
   * record, persisted before this resolves (after adopting any binding written to the file meanwhile).
   */
  async resolve(principalId: string, expiresAt: number): Promise<Principal> {
    const known = this.#state.principals.get(principalId);
    if (known !== undefined) return this.#principal(principalId, known, expiresAt);
    checkPrincipalId(principalId);
    try {
      await this.#mutate((draft) => {
        if (draft.principals.has(principalId)) return false;
        draft.principals.set(principalId, { roles: [], status: 'active' });
        return true;
      });
    } catch (error) {
      // Cluster mode with the registry out of reach: the new principal holds no role either way.
      if (this.#authority === undefined || !(error instanceof SvcError)) throw error;
      if (error.code !== 'unavailable' && error.code !== 'conflict') throw error;
    }
    const record = this.#state.principals.get(principalId) ?? { roles: [], status: 'active' as const };
    return this.#principal(principalId, record, expiresAt);
  }

  getPrincipal(id: string): PrincipalRecord | undefined {
    const record = this.#state.principals.get(id);
    return record === undefined ? undefined : { id, ...record };
  }

  /** All records, tombstoned included, sorted by id. */
  listPrincipals(): PrincipalRecord[] {
    return [...this.#state.principals]
      .map(([id, record]) => ({ id, ...record }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Sets the roles of a principal, creating the record if needed; a tombstoned record becomes active again. */
  async setRoles(id: string, roles: readonly string[]): Promise<PrincipalRecord> {
    return this.setPrincipal(id, { roles });
  }

  /**
   * Sets the roles and/or the execution user of a principal, creating the record if needed (a
   * tombstoned record becomes active again). A field left undefined keeps its value; an
   * `executionUser` of null removes it (the principal then runs as BaseConfig.DefaultExecUser).
   */
  async setPrincipal(
    id: string,
    change: { roles?: readonly string[]; executionUser?: string | null },
  ): Promise<PrincipalRecord> {
    checkPrincipalId(id);
    const { roles, executionUser } = change;
    if (roles !== undefined && (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string'))) {
      throw badRequest('roles must be an array of role names');
    }
    if (typeof executionUser === 'string' && !EXECUTION_USER_PATTERN.test(executionUser))
      throw badRequest('execution_user must be an OS user name (^[A-Za-z_][A-Za-z0-9_.-]{0,31}$)');
    let result: PrincipalRecord = { id, roles: [], status: 'active' };
    await this.#mutate((draft) => {
      const before = draft.principals.get(id);
      const unique: string[] = roles === undefined ? [...(before?.roles ?? [])] : [...new Set<string>(roles)];
      const unknown = unique.filter((role) => !roleExists(draft, role));
      if (unknown.length > 0)
        throw badRequest(`unknown role ${unknown.map((r) => JSON.stringify(r)).join(', ')}`);
      const user = executionUser === undefined ? before?.execution_user : (executionUser ?? undefined);
      const record: StoredRecord = {
        roles: unique,
        status: 'active',
        ...(user === undefined ? {} : { execution_user: user }),
      };
      draft.principals.set(id, record);
      result = { id, ...record };
      return true;
    });
    return result;
  }

  /** Marks a principal deleted, keeping the record (and its roles) for audit. Idempotent. */
  async tombstone(id: string): Promise<PrincipalRecord> {
    let result: PrincipalRecord | undefined;
    // The record as this engine holds it: `delete-user` may have removed it from the file already
    // (spec: the running engine keeps its in-memory principal until this DELETE), and the re-read
    // below would otherwise lose it; the tombstone is still written, for audit.
    const held = this.#state.principals.get(id);
    await this.#mutate((draft) => {
      const record = draft.principals.get(id) ?? held;
      if (record === undefined) throw new SvcError('not_found', `no principal ${JSON.stringify(id)}`);
      result = { id, ...record, status: 'tombstoned' };
      if (record.status === 'tombstoned') return false;
      draft.principals.set(id, { ...record, status: 'tombstoned' });
      return true;
    });
    return result as PrincipalRecord;
  }

  /** Built-in and custom roles with their permissions. */
  listRoles(): Record<string, Permission[]> {
    const roles: Record<string, Permission[]> = {};
    for (const [name, permissions] of Object.entries(BUILTIN_ROLES)) roles[name] = [...permissions];
    for (const [name, permissions] of this.#state.roles) roles[name] = [...permissions];
    return roles;
  }

  /** Creates or replaces a custom role. */
  async setRole(name: string, permissions: readonly string[]): Promise<Permission[]> {
    if (isBuiltinRole(name)) throw badRequest(`built-in role ${name} cannot be changed`);
    if (!ROLE_NAME.test(name)) throw badRequest('role names match ^[A-Za-z0-9_.-]{1,128}$');
    if (!Array.isArray(permissions)) throw badRequest('permissions must be an array');
    const unknown = permissions.filter((p) => !isPermission(p));
    if (unknown.length > 0) {
      throw badRequest(`unknown permission ${unknown.map((p) => JSON.stringify(p)).join(', ')}`);
    }
    const list = [...new Set(permissions as readonly Permission[])];
    await this.#mutate((draft) => {
      draft.roles.set(name, list);
      return true;
    });
    return list;
  }

  /** Deletes a custom role; refused while an active principal holds it. */
  async deleteRole(name: string): Promise<void> {
    if (isBuiltinRole(name)) throw badRequest(`built-in role ${name} cannot be deleted`);
    await this.#mutate((draft) => {
      if (!draft.roles.has(name)) throw new SvcError('not_found', `no role ${JSON.stringify(name)}`);
      const holders = [...draft.principals].filter(
        ([, r]) => r.status === 'active' && r.roles.includes(name),
      );
      if (holders.length > 0) {
        throw new SvcError(
          'conflict',
          `role ${name} is still granted to ${holders.length} active principal(s)`,
        );
      }
      draft.roles.delete(name);
      return true;
    });
  }

  /** Union of the permissions of `roles` under the current role table (unknown roles grant nothing). */
  permissionsOf(roles: readonly string[]): ReadonlySet<Permission> {
    const key = roles.join('\n');
    let set = this.#permissionSets.get(key);
    if (set === undefined) {
      const union = new Set<Permission>();
      for (const role of roles) {
        const granted = isBuiltinRole(role) ? BUILTIN_ROLES[role] : this.#state.roles.get(role);
        for (const permission of granted ?? []) union.add(permission);
      }
      set = union;
      this.#permissionSets.set(key, set);
    }
    return set;
  }

  /** Resolves once every change queued so far is on disk (or failed). */
  async flush(): Promise<void> {
    await this.#queue.then(
      () => undefined,
      () => undefined,
    );
  }

  #principal(id: string, record: StoredRecord, expiresAt: number): Principal {
    return {
      id,
      roles: record.roles,
      status: record.status,
      permissions: record.status === 'active' ? this.permissionsOf(record.roles) : EMPTY_PERMISSIONS,
      expiresAt,
      executionUser: record.execution_user,
    };
  }

  /** Cluster mode: from now on every change is made in `authority` and the file only caches it. */
  useAuthority(
    authority: PolicyAuthority,
    options: { warn?: (message: string, fields: Record<string, unknown>) => void } = {},
  ): void {
    this.#authority = authority;
    if (options.warn !== undefined) this.#warn = options.warn;
  }

  /** Adds this node's seed principals where absent (never overriding a record); for cluster mode. */
  async addSeedPrincipals(): Promise<void> {
    await this.#mutate((draft) => {
      let changed = false;
      for (const [id, roles] of Object.entries(this.#seed)) {
        if (draft.principals.has(id) || !roles.every((role) => roleExists(draft, role))) continue;
        draft.principals.set(id, { roles: [...roles], status: 'active' });
        changed = true;
      }
      return changed;
    });
  }

  /** The policy as a document (custom roles and every principal record). */
  document(): PolicyDocument {
    return documentOf(this.#state);
  }

  /**
   * Cluster mode: the shared policy is now `document`. Enforced at once (tombstone listeners run),
   * then written to the cache file. A local edit of the file not yet shared is shared first.
   */
  adopt(document: PolicyDocument): Promise<void> {
    return this.#enqueue(async () => {
      const authority = this.#authority;
      // A local edit not shared yet is shared first; what that commits arrives as the next document.
      let keepFile = false;
      if (authority !== undefined && !sameStamp(await stampOf(this.file), this.#stamp)) {
        try {
          if (await this.#commitShared(authority, () => false)) return;
        } catch (error) {
          // E.g. an invalid edit: the shared policy is enforced all the same, the edit left for its author.
          this.#warn('policy file edit not shared', { file: this.file, error: (error as Error).message });
          keepFile = true;
        }
      }
      const state = stateOf(document);
      if (serializePolicy(state) === serializePolicy(this.#state)) return;
      this.#publish(state);
      if (!keepFile) await this.#writeCache(state);
    });
  }

  /** One serialized change: adopt external edits, apply `change` to a copy, persist, then publish. */
  #mutate(change: (draft: PolicyState) => boolean): Promise<void> {
    return this.#enqueue(async () => {
      if (this.#authority !== undefined) {
        await this.#commitShared(this.#authority, change);
        return;
      }
      await this.#adoptExternalEdits();
      const draft = copyState(this.#state);
      if (!change(draft)) return;
      await this.#write(draft);
      this.#publish(draft);
    });
  }

  #enqueue(run: () => Promise<void>): Promise<void> {
    const step = this.#queue.then(run);
    this.#queue = step.catch(() => undefined);
    return step;
  }

  /**
   * Cluster mode: applies the file's local edits (since it was last written) and `change` to the
   * shared policy in one commit, then enforces and caches what was committed.
   */
  async #commitShared(authority: PolicyAuthority, change: (draft: PolicyState) => boolean): Promise<boolean> {
    const edits = await this.#localEdits();
    const committed = await authority.update((current) => {
      const draft = stateOf(current);
      const edited = edits !== undefined && applyEdits(draft, edits.base, edits.file);
      return change(draft) || edited ? documentOf(draft) : undefined;
    });
    if (committed === undefined) {
      if (edits !== undefined) {
        this.#stamp = edits.stamp;
        this.#base = edits.file;
      }
      return false;
    }
    const state = stateOf(committed);
    this.#publish(state);
    await this.#writeCache(state);
    return true;
  }

  /** The file as edited by someone else since our last write, or undefined. */
  async #localEdits(): Promise<{ stamp: DiskStamp; file: PolicyState; base: PolicyState } | undefined> {
    const stamp = await stampOf(this.file);
    if (stamp === undefined || sameStamp(stamp, this.#stamp)) return undefined;
    return { stamp, file: await this.#readEdited(), base: this.#base };
  }

  async #readEdited(): Promise<PolicyState> {
    try {
      return (await readPolicy(this.file)).state;
    } catch (error) {
      // Refuse to overwrite an operator's (broken) edit; known principals keep working meanwhile.
      throw new SvcError(
        'internal',
        'the policy file was edited and is now invalid; fix it to allow changes',
        {
          cause: error,
        },
      );
    }
  }

  /** The cache write of cluster mode: the change is committed already, so a failure is only logged. */
  async #writeCache(state: PolicyState): Promise<void> {
    try {
      await this.#write(state);
    } catch (error) {
      this.#warn('policy cache file not written', { file: this.file, error: (error as Error).message });
    }
  }

  async #adoptExternalEdits(): Promise<void> {
    const stamp = await stampOf(this.file);
    if (stamp === undefined || sameStamp(stamp, this.#stamp)) return;
    const state = await this.#readEdited();
    this.#publish(state);
    this.#stamp = stamp;
    this.#base = state;
  }

  /**
   * `listener` runs (synchronously) for every principal that becomes tombstoned, whether by
   * `tombstone` or by an edit of the file adopted later. Returns the unsubscribe function.
   */
  onTombstone(listener: (principalId: string) => void): () => void {
    this.#tombstoneListeners.add(listener);
    return () => this.#tombstoneListeners.delete(listener);
  }

  #publish(state: PolicyState): void {
    if (state.roles !== this.#state.roles) this.#permissionSets.clear();
    const before = this.#state;
    this.#state = state;
    for (const [id, record] of state.principals) {
      if (record.status !== 'tombstoned' || before.principals.get(id)?.status === 'tombstoned') continue;
      for (const listener of this.#tombstoneListeners) listener(id);
    }
  }

  async #write(state: PolicyState): Promise<void> {
    await this.#writeFile(this.file, serializePolicy(state), 0o600);
    this.#stamp = await stampOf(this.file);
    this.#base = state;
  }
}
