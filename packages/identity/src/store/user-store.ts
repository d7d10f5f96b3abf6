// The IdentityStore of the built-in identity: the static identities admin and guest come from the
// credential files (read-only here), users created through the administration transport are kept
// in work/auth/users.yaml (mode 0600; it holds password hashes). Writes are serialized and atomic
// (temp file + rename); the file is validated on load, errors name the file, the line and the rule.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LineCounter, parseDocument, stringify, isMap, isScalar, isSeq, type Node } from 'yaml';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { loadCredentials, type LoadedCredentials } from '../credentials/bootstrap.ts';
import type { Credential } from '../credentials/credential-file.ts';
import { CredentialError } from '../credentials/errors.ts';
import { hashProblem } from '../credentials/password.ts';
import { STATIC_IDENTITIES } from './identities.ts';
import type { IdentityStore, UserRecord } from './identity-store.ts';

export type UserStoreErrorCode = 'exists' | 'static' | 'not-found' | 'invalid';

/** A refused change. `code`: exists (email taken), static (admin/guest), not-found, invalid input. */
export class UserStoreError extends Error {
  readonly code: UserStoreErrorCode;
  constructor(code: UserStoreErrorCode, message: string) {
    super(message);
    this.name = 'UserStoreError';
    this.code = code;
  }
}

export function usersFilePath(workDir: string): string {
  return join(workDir, 'auth', 'users.yaml');
}

const MAX_EMAIL_LENGTH = 254;
const EMAIL_PATTERN = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FIELDS = [
  'user_id',
  'username',
  'email',
  'password_hash',
  'created_at',
  'mfa_enabled',
  'mfa_secret',
] as const;
const MAX_MFA_SECRET_LENGTH = 512;
const STATIC_LOGINS = new Set<string>(
  Object.values(STATIC_IDENTITIES).flatMap((identity) => [identity.username, identity.email.toLowerCase()]),
);
const STATIC_IDS = new Set<string>(Object.values(STATIC_IDENTITIES).map((identity) => identity.user_id));

/** Why `email` is not acceptable for a created user, or undefined. */
export function emailProblem(email: string): string | undefined {
  if (email.length === 0) return 'email must not be empty';
  if (email.length > MAX_EMAIL_LENGTH) return `email must be at most ${MAX_EMAIL_LENGTH} characters`;
  if (!EMAIL_PATTERN.test(email))
    return 'email must be one address of the form local@domain, without spaces or control characters';
  return undefined;
}

function isStaticLogin(login: string): boolean {
  return STATIC_LOGINS.has(login) || STATIC_LOGINS.has(login.toLowerCase());
}

function staticRecord(credential: Credential): UserRecord {
  return {
    user_id: credential.user_id,
    username: credential.username,
    email: credential.email,
    password_hash: credential.password_hash,
    static: true,
    created_at: new Date(0).toISOString(),
    mfa_enabled: false,
  };
}

/** Parse and validate users.yaml; errors name the file, the line and the rule. */
export function parseUsersFile(text: string, file: string): UserRecord[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const lineOf = (node: Node | null | undefined): number | undefined =>
    node?.range == null ? undefined : lineCounter.linePos(node.range[0]).line;
  const first = doc.errors[0];
  if (first !== undefined)
    throw new CredentialError(file, `not valid YAML (${first.code})`, lineCounter.linePos(first.pos[0]).line);
  const root = doc.contents;
  if (root === null) return [];
  if (!isMap(root)) throw new CredentialError(file, 'must be a mapping with the key "users"', lineOf(root));
  for (const pair of root.items) {
    const key = (pair.key as { value?: unknown } | null)?.value;
    if (key !== 'users')
      throw new CredentialError(file, 'unknown top-level key (expected "users")', lineOf(pair.key));
  }
  const seq = root.get('users', true);
  if (seq === undefined || seq === null || (isScalar(seq) && seq.value === null)) return [];
  if (!isSeq(seq)) throw new CredentialError(file, 'users must be a list', lineOf(seq));
  const users: UserRecord[] = [];
  const ids = new Set<string>();
  const emails = new Set<string>();
  seq.items.forEach((item, index) => {
    const where = `users[${index}]`;
    const line = lineOf(item as Node);
    if (!isMap(item)) throw new CredentialError(file, `${where} must be a mapping`, line);
    const record: Record<string, unknown> = {};
    for (const pair of item.items) {
      const key = (pair.key as { value?: unknown } | null)?.value;
      const keyLine = lineOf(pair.key as Node) ?? line;
      if (typeof key !== 'string' || !(FIELDS as readonly string[]).includes(key))
        throw new CredentialError(file, `${where}: unknown field (expected ${FIELDS.join(', ')})`, keyLine);
      record[key] = (pair.value as { value?: unknown } | null)?.value;
    }
    const fieldLine = (name: string): number | undefined => {
      const pair = item.items.find((p) => (p.key as { value?: unknown } | null)?.value === name);
      return lineOf((pair?.value ?? pair?.key) as Node | undefined) ?? line;
    };
    const str = (name: (typeof FIELDS)[number]): string => {
      const value = record[name];
      if (value === undefined) throw new CredentialError(file, `${where}: missing field ${name}`, line);
      if (typeof value !== 'string')
        throw new CredentialError(file, `${where}.${name} must be a string`, fieldLine(name));
      return value;
    };
    const user_id = str('user_id');
    if (!UUID_PATTERN.test(user_id))
      throw new CredentialError(file, `${where}.user_id must be a lower-case UUID`, fieldLine('user_id'));
    if (STATIC_IDS.has(user_id) || ids.has(user_id))
      throw new CredentialError(file, `${where}.user_id is already in use`, fieldLine('user_id'));
    const email = str('email');
    const problem = emailProblem(email);
    if (problem !== undefined) throw new CredentialError(file, `${where}.${problem}`, fieldLine('email'));
    if (isStaticLogin(email) || emails.has(email.toLowerCase()))
      throw new CredentialError(
        file,
        `${where}.email is already in use (or names a static identity)`,
        fieldLine('email'),
      );
    const username = str('username');
    if (username !== email)
      throw new CredentialError(
        file,
        `${where}.username must equal the email of a created user`,
        fieldLine('username'),
      );
    const password_hash = str('password_hash');
    const hash = hashProblem(password_hash);
    if (hash !== undefined) throw new CredentialError(file, `${where}.${hash}`, fieldLine('password_hash'));
    const created_at = str('created_at');
    if (Number.isNaN(Date.parse(created_at)) || !/^\d{4}-\d\d-\d\dT/.test(created_at))
      throw new CredentialError(
        file,
        `${where}.created_at must be an ISO 8601 time`,
        fieldLine('created_at'),
      );
    const mfa = record['mfa_enabled'];
    if (mfa !== undefined && typeof mfa !== 'boolean')
      throw new CredentialError(file, `${where}.mfa_enabled must be true or false`, fieldLine('mfa_enabled'));
    const mfaSecret = record['mfa_secret'];
    if (
      mfaSecret !== undefined &&
      (typeof mfaSecret !== 'string' ||
        !mfaSecret.startsWith('enc:v1:') ||
        mfaSecret.length > MAX_MFA_SECRET_LENGTH)
    )
      throw new CredentialError(
        file,
        `${where}.mfa_secret must be an encrypted value (enc:v1:…)`,
        fieldLine('mfa_secret'),
      );
    ids.add(user_id);
    emails.add(email.toLowerCase());
    users.push({
      user_id,
      username,
      email,
      password_hash,
      static: false,
      created_at,
      mfa_enabled: mfa === true,
      ...(typeof mfaSecret === 'string' ? { mfa_secret: mfaSecret } : {}),
    });
  });
  return users;
}

export function formatUsersFile(users: readonly UserRecord[]): string {
  const header =
    '# Users created through the administration transport (svc-identity). Mode 0600: holds bcrypt hashes.\n';
  return (
    header +
    stringify({
      users: users.map((u) => ({
        user_id: u.user_id,
        username: u.username,
        email: u.email,
        password_hash: u.password_hash,
        created_at: u.created_at,
        mfa_enabled: u.mfa_enabled,
        ...(u.mfa_secret === undefined ? {} : { mfa_secret: u.mfa_secret }),
      })),
    })
  );
}

export interface UserStoreOptions {
  /** The static identities; default: loadCredentials(workDir, {mode: 'builtin'}). */
  credentials?: LoadedCredentials;
}

export class UserStore implements IdentityStore {
  readonly file: string;
  #statics: readonly UserRecord[];
  #users: readonly UserRecord[];
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(file: string, statics: readonly UserRecord[], users: readonly UserRecord[]) {
    this.file = file;
    this.#statics = statics;
    this.#users = users;
  }

  /** Load the static identities and users.yaml (missing: no created users). */
  static async open(workDir: string, options: UserStoreOptions = {}): Promise<UserStore> {
    const credentials = options.credentials ?? (await loadCredentials(workDir, { mode: 'builtin' }));
    const file = usersFilePath(workDir);
    let users: UserRecord[] = [];
    try {
      users = parseUsersFile(await readFile(file, 'utf8'), file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return new UserStore(file, [staticRecord(credentials.admin), staticRecord(credentials.viewer)], users);
  }

  findByLogin(login: string): UserRecord | undefined {
    const lower = login.toLowerCase();
    return this.list().find((u) => u.username === login || u.email.toLowerCase() === lower);
  }

  findById(userId: string): UserRecord | undefined {
    return this.list().find((u) => u.user_id === userId);
  }

  list(): readonly UserRecord[] {
    return [...this.#statics, ...this.#users];
  }

  create(input: { email: string; passwordHash: string }): Promise<UserRecord> {
    return this.#mutate((users) => {
      const problem = emailProblem(input.email);
      if (problem !== undefined) throw new UserStoreError('invalid', problem);
      const hash = hashProblem(input.passwordHash);
      if (hash !== undefined) throw new UserStoreError('invalid', hash);
      if (isStaticLogin(input.email))
        throw new UserStoreError('static', 'the static identities admin and guest cannot be created');
      const lower = input.email.toLowerCase();
      if (users.some((u) => u.email.toLowerCase() === lower))
        throw new UserStoreError('exists', 'a user with this email exists');
      const record: UserRecord = {
        user_id: randomUUID(),
        username: input.email,
        email: input.email,
        password_hash: input.passwordHash,
        static: false,
        created_at: new Date().toISOString(),
        mfa_enabled: false,
      };
      return { users: [...users, record], result: record };
    });
  }

  delete(email: string): Promise<UserRecord | undefined> {
    return this.#mutate((users) => {
      if (isStaticLogin(email))
        throw new UserStoreError('static', 'the static identities admin and guest cannot be deleted');
      const lower = email.toLowerCase();
      const found = users.find((u) => u.email.toLowerCase() === lower);
      if (found === undefined) return { users, result: undefined };
      return { users: users.filter((u) => u !== found), result: found };
    });
  }

  setPasswordHash(userId: string, passwordHash: string): Promise<void> {
    return this.#update(userId, (u) => {
      const hash = hashProblem(passwordHash);
      if (hash !== undefined) throw new UserStoreError('invalid', hash);
      return { ...u, password_hash: passwordHash };
    });
  }

  setMfa(userId: string, enabled: boolean, secret?: string): Promise<void> {
    return this.#update(userId, (u) => {
      const { mfa_secret: _previous, ...rest } = u;
      return enabled && secret !== undefined
        ? { ...rest, mfa_enabled: true, mfa_secret: secret }
        : { ...rest, mfa_enabled: enabled };
    });
  }

  #update(userId: string, change: (user: UserRecord) => UserRecord): Promise<void> {
    return this.#mutate((users) => {
      if (STATIC_IDS.has(userId))
        throw new UserStoreError('static', 'the static identities admin and guest cannot be changed here');
      const index = users.findIndex((u) => u.user_id === userId);
      const user = users[index];
      if (user === undefined) throw new UserStoreError('not-found', 'no such user');
      const next = [...users];
      next[index] = change(user);
      return { users: next, result: undefined };
    });
  }

  /** Serialized: compute the next list, write it, then adopt it (a failed write changes nothing). */
  #mutate<T>(
    change: (users: readonly UserRecord[]) => { users: readonly UserRecord[]; result: T },
  ): Promise<T> {
    const run = this.#queue.then(async () => {
      const { users, result } = change(this.#users);
      if (users !== this.#users) {
        await writeFileAtomic(this.file, formatUsersFile(users), { mode: 0o600, ownerFromDirectory: true });
        this.#users = users;
      }
      return result;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
