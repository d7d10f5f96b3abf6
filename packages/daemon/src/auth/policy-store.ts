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
// - Cluster mode (`useAuthority`, cluster/security-sync.ts): a change is decided on the shared
//   policy and committed there (with any local edit of the file, record by record); the file is
//   then only the node's cache, and `adopt` enforces what the registry holds at once.
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { BUILTIN_ROLES, SvcError, isPermission } from '@svc/protocol';
import type { Permission } from '@svc/protocol';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import {
  EXECUTION_USER_PATTERN,
  PolicyFileError,
  ROLE_NAME,
  applyEdits,
  copyState,
  documentOf,
  isBuiltinRole,
  principalIdProblem,
  roleExists,
  serializePolicy,
  stateOf,
  type PolicyDocument,
  type PolicyState,
  type StoredRecord,
} from './policy-document.ts';
import { PolicyFile } from './policy-file.ts';
import type { Principal, PrincipalStatus } from './principal.ts';

export {
  EXECUTION_USER_PATTERN,
  PolicyFileError,
  checkPolicyRecords,
  parsePolicy,
  type PolicyDocument,
  type PolicyDocumentPrincipal,
} from './policy-document.ts';

export interface PrincipalRecord {
  readonly id: string;
  readonly roles: readonly string[];
  readonly status: PrincipalStatus;
  /** OS user its applications, runs and file transfers execute as (App Mesh 3.0 `execution_user`). */
  readonly execution_user?: string | undefined;
}

export interface PolicyStoreOptions {
  /** Principals to create when absent (never overriding or reviving an existing record): id → roles. */
  seed?: Record<string, readonly string[]> | undefined;
  /** Replaces the file atomically; default `writeFileAtomic`. A seam for failure tests. */
  writeFile?: ((path: string, data: string, mode: number) => Promise<void>) | undefined;
}

const EMPTY_PERMISSIONS: ReadonlySet<Permission> = new Set();

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

function badRequest(message: string): SvcError {
  return new SvcError('bad_request', message);
}

function checkPrincipalId(id: string): void {
  const problem = principalIdProblem(id);
  if (problem !== undefined) throw badRequest(problem);
}

export class PolicyStore {
  readonly file: string;
  #state: PolicyState;
  /** The file on disk: what it held at our last read or write, to notice edits by others. */
  readonly #onDisk: PolicyFile;
  #authority: PolicyAuthority | undefined;
  #warn: (message: string, fields: Record<string, unknown>) => void = () => undefined;
  readonly #seed: Readonly<Record<string, readonly string[]>>;
  #queue: Promise<unknown> = Promise.resolve();
  /** Permission sets by the role list's key; cleared whenever custom roles change. */
  #permissionSets = new Map<string, ReadonlySet<Permission>>();
  /** resolveKnown's last principal per record (records are replaced, never changed, on a change). */
  readonly #resolved = new WeakMap<StoredRecord, { roles: PolicyState['roles']; principal: Principal }>();
  readonly #tombstoneListeners = new Set<(principalId: string) => void>();

  private constructor(onDisk: PolicyFile, state: PolicyState, options: PolicyStoreOptions) {
    this.file = onDisk.path;
    this.#onDisk = onDisk;
    this.#state = state;
    this.#seed = options.seed ?? {};
  }

  /** Reads and validates the policy (absent = empty), adds missing seed principals, persists if needed. */
  static async open(file: string, options: PolicyStoreOptions = {}): Promise<PolicyStore> {
    const {
      file: onDisk,
      state,
      text,
    } = await PolicyFile.read(
      file,
      options.writeFile ??
        (async (path, data, mode) => {
          await writeFileAtomic(path, data, { mode });
        }),
    );
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
    const store = new PolicyStore(onDisk, copyState(state), options);
    if (changed) {
      await mkdir(dirname(file), { recursive: true, mode: 0o700 });
      await onDisk.write(state);
    }
    return store;
  }

  /**
   * The principal for a verified token. A principal seen for the first time gets a role-less active
   * record, persisted before this resolves (after adopting any binding written to the file meanwhile).
   */
  async resolve(principalId: string, expiresAt: number): Promise<Principal> {
    const known = this.resolveKnown(principalId, expiresAt);
    if (known !== undefined) return known;
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

  /**
   * The principal of an id that has a record, synchronously (undefined when it has none: `resolve`
   * then creates it). The same object for the same record, roles table and token expiry, so that
   * the requests of one token cost no allocation here; every policy change makes new records.
   */
  resolveKnown(principalId: string, expiresAt: number): Principal | undefined {
    const record = this.#state.principals.get(principalId);
    if (record === undefined) return undefined;
    const roles = this.#state.roles;
    const memo = this.#resolved.get(record);
    if (memo !== undefined && memo.roles === roles && memo.principal.expiresAt === expiresAt)
      return memo.principal;
    const principal = this.#principal(principalId, record, expiresAt);
    this.#resolved.set(record, { roles, principal });
    return principal;
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
   * Cluster mode: the shared policy is now `source` (a document, or a function reading it). Enforced
   * at once (tombstone listeners run), then written to the cache file. A local edit of the file not
   * yet shared is shared first. A reader runs in turn with this store's own changes, so what it
   * reads is never older than a change this store committed before (no flicker back).
   */
  adopt(source: PolicyDocument | (() => Promise<PolicyDocument>)): Promise<void> {
    return this.#enqueue(async () => {
      const authority = this.#authority;
      // A local edit not shared yet is shared first; what that commits arrives as the next document.
      let keepFile = false;
      if (authority !== undefined && (await this.#onDisk.changed())) {
        try {
          if (await this.#commitShared(authority, () => false)) return;
        } catch (error) {
          // E.g. an invalid edit: the shared policy is enforced all the same, the edit left for its author.
          this.#warn('policy file edit not shared', { file: this.file, error: (error as Error).message });
          keepFile = true;
        }
      }
      const state = stateOf(typeof source === 'function' ? await source() : source);
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
      await this.#onDisk.write(draft);
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
    const edits = await this.#onDisk.edits();
    const committed = await authority.update((current) => {
      const draft = stateOf(current);
      const edited = edits !== undefined && applyEdits(draft, edits.base, edits.file);
      return change(draft) || edited ? documentOf(draft) : undefined;
    });
    if (committed === undefined) {
      if (edits !== undefined) this.#onDisk.accept(edits);
      return false;
    }
    const state = stateOf(committed);
    this.#publish(state);
    await this.#writeCache(state);
    return true;
  }

  /** The cache write of cluster mode: the change is committed already, so a failure is only logged. */
  async #writeCache(state: PolicyState): Promise<void> {
    try {
      await this.#onDisk.write(state);
    } catch (error) {
      this.#warn('policy cache file not written', { file: this.file, error: (error as Error).message });
    }
  }

  async #adoptExternalEdits(): Promise<void> {
    const edits = await this.#onDisk.edits();
    if (edits === undefined) return;
    this.#publish(edits.file);
    this.#onDisk.accept(edits);
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
}
