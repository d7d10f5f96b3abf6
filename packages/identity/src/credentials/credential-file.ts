// The `initial-admin-credentials` / `initial-viewer-credentials` files (spec: "Bootstrap secret
// files"): lines `username=`, `email=`, `user_id=`, `password_hash=` and optionally `password=`
// (plaintext, kept only for print-initial-password; plaintext and hash are not cross-validated).
// The identity fields must equal the packaged constants verbatim. Errors name the file, the line
// and the rule, never a secret.
import { join } from 'node:path';
import { STATIC_IDENTITIES, type StaticIdentityName } from '../store/identities.ts';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { CredentialError } from './errors.ts';
import { hashProblem, passwordProblem } from './password.ts';
import { readSecretFile } from './secret-files.ts';

/** File names inside work/auth/secrets/. */
export const SECRET_FILE_NAMES = {
  admin: 'initial-admin-credentials',
  guest: 'initial-viewer-credentials',
  automation: 'automation-client',
  masterKey: 'secret-master-key',
} as const;

export const CREDENTIAL_FILE_NAMES: Record<StaticIdentityName, string> = {
  admin: SECRET_FILE_NAMES.admin,
  guest: SECRET_FILE_NAMES.guest,
};

export function secretsDir(workDir: string): string {
  return join(workDir, 'auth', 'secrets');
}

export function credentialFilePath(workDir: string, identity: StaticIdentityName): string {
  return join(secretsDir(workDir), CREDENTIAL_FILE_NAMES[identity]);
}

export interface Credential {
  readonly identity: StaticIdentityName;
  readonly username: string;
  readonly email: string;
  readonly user_id: string;
  readonly password_hash: string;
  /** The plaintext, while it has not been forgotten. */
  readonly password?: string;
}

const KEYS = ['username', 'email', 'user_id', 'password_hash', 'password'] as const;
type Key = (typeof KEYS)[number];

/** Parse and validate the content of a credential file of `identity`. */
export function parseCredentialFile(text: string, file: string, identity: StaticIdentityName): Credential {
  const expected = STATIC_IDENTITIES[identity];
  const values = new Map<Key, { value: string; line: number }>();
  const lines = text.split('\n');
  // A final newline ends the last line rather than starting an empty one.
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((raw, index) => {
    const line = index + 1;
    const content = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (content.trim() === '' || content.startsWith('#')) return;
    const eq = content.indexOf('=');
    if (eq < 0) throw new CredentialError(file, 'line must have the form key=value', line);
    const key = content.slice(0, eq);
    if (!(KEYS as readonly string[]).includes(key))
      throw new CredentialError(
        file,
        `unknown key (expected one of ${KEYS.map((k) => `${k}=`).join(', ')})`,
        line,
      );
    const previous = values.get(key as Key);
    if (previous !== undefined)
      throw new CredentialError(file, `duplicate ${key}= line (first on line ${previous.line})`, line);
    values.set(key as Key, { value: content.slice(eq + 1), line });
  });
  for (const key of ['username', 'email', 'user_id'] as const) {
    const entry = values.get(key);
    if (entry === undefined) throw new CredentialError(file, `missing ${key}= line`);
    if (entry.value !== expected[key])
      throw new CredentialError(
        file,
        `${key} must be "${expected[key]}" verbatim (the packaged ${identity} identity)`,
        entry.line,
      );
  }
  const hash = values.get('password_hash');
  if (hash === undefined) throw new CredentialError(file, 'missing password_hash= line');
  const problem = hashProblem(hash.value);
  if (problem !== undefined) throw new CredentialError(file, problem, hash.line);
  const password = values.get('password');
  if (password !== undefined) {
    const pwProblem = passwordProblem(password.value);
    if (pwProblem !== undefined) throw new CredentialError(file, pwProblem, password.line);
  }
  return {
    identity,
    username: expected.username,
    email: expected.email,
    user_id: expected.user_id,
    password_hash: hash.value,
    ...(password === undefined ? {} : { password: password.value }),
  };
}

/** The file content of `credential` (lines in the spec's order). */
export function formatCredentialFile(credential: Omit<Credential, 'identity'>): string {
  const lines = [
    `username=${credential.username}`,
    `email=${credential.email}`,
    `user_id=${credential.user_id}`,
    `password_hash=${credential.password_hash}`,
  ];
  if (credential.password !== undefined) lines.push(`password=${credential.password}`);
  return lines.join('\n') + '\n';
}

/** Read (checking the secret-file rules first) and validate a credential file. */
export async function readCredentialFile(file: string, identity: StaticIdentityName): Promise<Credential> {
  return parseCredentialFile(await readSecretFile(file), file, identity);
}

/**
 * Validate and write a credential file through a temp file + rename (mode 0600, owned by the
 * directory owner). With `exclusive`, only creates: resolves false when the file exists.
 */
export async function writeCredentialFile(
  file: string,
  credential: Credential,
  options: { exclusive?: boolean } = {},
): Promise<boolean> {
  const text = formatCredentialFile(credential);
  // Validate what is written by the same rules as what is read.
  parseCredentialFile(text, file, credential.identity);
  return writeFileAtomic(file, text, {
    mode: 0o600,
    ownerFromDirectory: true,
    exclusive: options.exclusive ?? false,
  });
}

/** A credential of `identity` with the packaged identity fields. */
export function newCredential(
  identity: StaticIdentityName,
  passwordHash: string,
  password?: string,
): Credential {
  const { username, email, user_id } = STATIC_IDENTITIES[identity];
  return {
    identity,
    username,
    email,
    user_id,
    password_hash: passwordHash,
    ...(password === undefined ? {} : { password }),
  };
}
