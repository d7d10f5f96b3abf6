// First-start creation and validation of work/auth/secrets/ (spec: "Bootstrap secret files",
// "Administrator credential"). bootstrapCredentials creates what is missing and never replaces an
// existing file; loadCredentials only reads and validates (the identity provider calls it at each
// start, which is how a pending password from set-/rotate-initial-password becomes active).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  SECRET_FILE_NAMES,
  credentialFilePath,
  newCredential,
  readCredentialFile,
  secretsDir,
  writeCredentialFile,
  type Credential,
} from './credential-file.ts';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { CredentialError } from './errors.ts';
import { generatePassword, hashPassword, passwordProblem } from './password.ts';
import { readSecretFile, secretFileExists } from './secret-files.ts';

export type AuthMode = 'builtin' | 'external';

export interface LoadedCredentials {
  readonly admin: Credential;
  readonly viewer: Credential;
  /** The secret of the confidential client `svc-automation`. */
  readonly automationSecret: string;
}

export interface BootstrapOptions {
  mode: AuthMode;
  /** `SVC_ADMIN_PASSWORD_FILE`: used as the admin password only while no admin credential exists. */
  adminPasswordFile?: string | undefined;
}

export interface BootstrapResult {
  /** Names of the files this call created (never their content). */
  readonly created: readonly string[];
}

/** Bytes of a generated automation-client secret (hex-encoded: 64 characters). */
export const AUTOMATION_SECRET_BYTES = 32;
const AUTOMATION_SECRET_PATTERN = /^[A-Za-z0-9._~+/=-]{32,512}$/;

export function automationSecretPath(workDir: string): string {
  return join(secretsDir(workDir), SECRET_FILE_NAMES.automation);
}

/**
 * Create `work/auth/secrets/` (0700) and the missing credential files: the admin credential (from
 * `adminPasswordFile` when given, else a random 48-character password), the viewer credential
 * (random) and `automation-client` (random). Existing files are left alone (checked later by
 * loadCredentials). Does nothing in external mode.
 */
export async function bootstrapCredentials(
  workDir: string,
  options: BootstrapOptions,
): Promise<BootstrapResult> {
  if (options.mode !== 'builtin') return { created: [] };
  const dir = secretsDir(workDir);
  const existed = await secretFileExists(dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (!existed) await chmod(dir, 0o700);
  const created: string[] = [];

  const adminFile = credentialFilePath(workDir, 'admin');
  if (!(await secretFileExists(adminFile))) {
    const password =
      options.adminPasswordFile === undefined || options.adminPasswordFile === ''
        ? generatePassword()
        : await readAdminPasswordFile(options.adminPasswordFile);
    const credential = newCredential('admin', await hashPassword(password), password);
    if (await writeCredentialFile(adminFile, credential, { exclusive: true }))
      created.push(SECRET_FILE_NAMES.admin);
  }
  const viewerFile = credentialFilePath(workDir, 'guest');
  if (!(await secretFileExists(viewerFile))) {
    const password = generatePassword();
    const credential = newCredential('guest', await hashPassword(password), password);
    if (await writeCredentialFile(viewerFile, credential, { exclusive: true }))
      created.push(SECRET_FILE_NAMES.guest);
  }
  const automationFile = automationSecretPath(workDir);
  if (!(await secretFileExists(automationFile))) {
    const secret = randomBytes(AUTOMATION_SECRET_BYTES).toString('hex');
    if (
      await writeFileAtomic(automationFile, secret + '\n', {
        mode: 0o600,
        ownerFromDirectory: true,
        exclusive: true,
      })
    )
      created.push(SECRET_FILE_NAMES.automation);
  }
  return { created };
}

/**
 * Read the password of `SVC_ADMIN_PASSWORD_FILE`: the content with one trailing newline removed,
 * one line of at most 72 bytes. Errors name the variable, the file and the rule, not the content.
 */
export async function readAdminPasswordFile(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CredentialError(
      file,
      `SVC_ADMIN_PASSWORD_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const password = text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new CredentialError(file, `SVC_ADMIN_PASSWORD_FILE: ${problem}`);
  return password;
}

/** Read and validate the automation-client secret (one line, 32 to 512 URL-safe characters). */
export async function readAutomationSecret(workDir: string): Promise<string> {
  const file = automationSecretPath(workDir);
  const text = await readSecretFile(file);
  const secret = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (!AUTOMATION_SECRET_PATTERN.test(secret))
    throw new CredentialError(
      file,
      'automation-client must hold one line of 32 to 512 characters from A-Za-z0-9._~+/=-',
      1,
    );
  return secret;
}

/**
 * Read and validate every credential file (secret-file rules, format, hash, identity fields).
 * Throws a CredentialError naming the file, the line and the rule. Builtin mode only.
 */
export async function loadCredentials(
  workDir: string,
  options: { mode: AuthMode },
): Promise<LoadedCredentials> {
  if (options.mode !== 'builtin')
    throw new CredentialError(secretsDir(workDir), 'credential files are used in builtin mode only');
  const dir = secretsDir(workDir);
  try {
    if (!(await stat(dir)).isDirectory()) throw new CredentialError(dir, 'must be a directory');
  } catch (error) {
    if (error instanceof CredentialError) throw error;
    throw new CredentialError(
      dir,
      `secrets directory is missing (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const admin = await readCredentialFile(credentialFilePath(workDir, 'admin'), 'admin');
  const viewer = await readCredentialFile(credentialFilePath(workDir, 'guest'), 'guest');
  const automationSecret = await readAutomationSecret(workDir);
  return { admin, viewer, automationSecret };
}
