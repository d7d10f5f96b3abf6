// The administrative operations behind the gRPC API (transport-independent): users ("Passwords"),
// OAuth clients, sessions and MFA state. Errors are AdminError with a gRPC status name; their
// messages never carry a password, a hash or a secret.
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import {
  AUTOMATION_SECRET_BYTES,
  automationSecretPath,
  hashPassword,
  newPasswordProblem,
} from '../credentials/index.ts';
import { AUTOMATION_CLIENT_ID, OAUTH_CLIENT_IDS, STATIC_IDENTITIES } from '../store/identities.ts';
import type { IdentityStore, UserRecord } from '../store/identity-store.ts';
import type { SecretBox } from '../credentials/master-key.ts';
import { newTotpSecret } from '../provider/totp.ts';
import type { SessionRecord, SessionRegistry } from './sessions.ts';

/** gRPC status names used by the API (the numeric codes are mapped in grpc-server.ts). */
export type AdminErrorCode =
  'INVALID_ARGUMENT' | 'NOT_FOUND' | 'ALREADY_EXISTS' | 'FAILED_PRECONDITION' | 'INTERNAL';

export class AdminError extends Error {
  override readonly name = 'AdminError';
  readonly code: AdminErrorCode;
  constructor(code: AdminErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** A user as the API shows it: never the password hash. */
export interface AdminUser {
  readonly user_id: string;
  readonly username: string;
  readonly email: string;
  readonly static: boolean;
  readonly created_at: string;
  readonly mfa_enabled: boolean;
}

export interface OAuthClientInfo {
  readonly client_id: string;
  readonly type: 'public' | 'confidential';
  readonly purpose: string;
  /** Confidential clients: whether the secret file exists, and when it was last written (ISO 8601). */
  readonly secret_present: boolean;
  readonly secret_updated_at: string;
}

/** The spec's table "OAuth clients". */
const CLIENTS: Record<
  (typeof OAUTH_CLIENT_IDS)[number],
  { type: 'public' | 'confidential'; purpose: string }
> = {
  'svc-api': { type: 'public', purpose: 'audience target' },
  'svc-cli': { type: 'public', purpose: 'command-line and native clients (RFC 8252)' },
  'svc-web': { type: 'public', purpose: 'browser authorization code with PKCE' },
  'svc-mcp-user': { type: 'public', purpose: 'MCP clients (no dynamic registration)' },
  'svc-automation': { type: 'confidential', purpose: 'client_credentials for CI and unattended jobs' },
};

const EMAIL_PATTERN = /^[^\s@<>"',;]+@[^\s@<>"',;]+\.[^\s@<>"',;.]+$/;
const MAX_EMAIL_LENGTH = 254;

export interface AdminServiceOptions {
  store: IdentityStore;
  sessions: SessionRegistry;
  /** The work directory (`work/`): the automation secret is `work/auth/secrets/automation-client`. */
  workDir: string;
  /** Called after a new svc-automation secret is written, so that the provider uses it at once. */
  onAutomationSecretChanged?: ((secret: string) => void | Promise<void>) | undefined;
  /** Encrypts TOTP secrets at rest (secret-master-key); without it MFA cannot be enabled. */
  secrets?: SecretBox | undefined;
  /** The issuer's sign-in lockouts: clears those of a user, returns how many were in force. */
  signInLocks?: { clear(user: UserRecord): number } | undefined;
  /** One line per change, for the process log: event name and non-secret fields. */
  audit?: ((event: string, fields: Record<string, string>) => void) | undefined;
}

export function toAdminUser(record: UserRecord): AdminUser {
  return {
    user_id: record.user_id,
    username: record.username,
    email: record.email,
    static: record.static,
    created_at: record.created_at,
    mfa_enabled: record.mfa_enabled,
  };
}

function isStaticLogin(login: string): boolean {
  const lower = login.trim().toLowerCase();
  return Object.values(STATIC_IDENTITIES).some(
    (identity) => identity.email.toLowerCase() === lower || identity.username.toLowerCase() === lower,
  );
}

export class AdminService {
  readonly #options: AdminServiceOptions;

  constructor(options: AdminServiceOptions) {
    this.#options = options;
  }

  #audit(event: string, fields: Record<string, string>): void {
    this.#options.audit?.(event, fields);
  }

  listUsers(): AdminUser[] {
    return this.#options.store
      .list()
      .map(toAdminUser)
      .sort((a, b) => Number(b.static) - Number(a.static) || a.email.localeCompare(b.email));
  }

  /** A created (non-static) user by email or username: NOT_FOUND, or FAILED_PRECONDITION for admin/guest. */
  #changeable(login: string): UserRecord {
    const key = login.trim();
    if (key === '') throw new AdminError('INVALID_ARGUMENT', 'email is required');
    const record = this.#options.store.findByLogin(key);
    if (record?.static === true || (record === undefined && isStaticLogin(key)))
      throw new AdminError(
        'FAILED_PRECONDITION',
        `${record?.username ?? key} is a static identity and cannot be changed`,
      );
    if (record === undefined) throw new AdminError('NOT_FOUND', `no user ${key}`);
    return record;
  }

  getUser(login: string): AdminUser {
    const record = this.#options.store.findByLogin(login.trim());
    if (record === undefined) throw new AdminError('NOT_FOUND', `no user ${login.trim()}`);
    return toAdminUser(record);
  }

  /** "Create a password": a new user who can sign in at once, with no role. */
  async createUser(emailInput: string, password: string): Promise<AdminUser> {
    const email = emailInput.trim();
    if (email.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(email))
      throw new AdminError('INVALID_ARGUMENT', 'email must be an email address (name@domain)');
    if (isStaticLogin(email))
      throw new AdminError('FAILED_PRECONDITION', `${email} is a static identity and cannot be changed`);
    const problem = newPasswordProblem(password);
    if (problem !== undefined) throw new AdminError('INVALID_ARGUMENT', problem);
    if (this.#options.store.findByLogin(email) !== undefined)
      throw new AdminError('ALREADY_EXISTS', `a user with email ${email} exists`);
    const passwordHash = await hashPassword(password);
    let record: UserRecord;
    try {
      record = await this.#options.store.create({ email, passwordHash });
    } catch (error) {
      // A concurrent create of the same email won the race.
      if (this.#options.store.findByLogin(email) !== undefined)
        throw new AdminError('ALREADY_EXISTS', `a user with email ${email} exists`);
      throw new AdminError('INTERNAL', `cannot create the user: ${(error as Error).message}`);
    }
    this.#audit('user created', { user_id: record.user_id, email: record.email });
    return toAdminUser(record);
  }

  /** Removes a created user and ends their sessions. */
  async deleteUser(login: string): Promise<AdminUser> {
    const record = this.#changeable(login);
    const removed = await this.#options.store.delete(record.email);
    if (removed === undefined) throw new AdminError('NOT_FOUND', `no user ${record.email}`);
    const ended = await this.#options.sessions.revokeSubject(removed.user_id);
    this.#audit('user deleted', {
      user_id: removed.user_id,
      email: removed.email,
      sessions_ended: String(ended),
    });
    return toAdminUser(removed);
  }

  /** A new password for a created user; their sessions end (they sign in again with it). */
  async setPassword(login: string, password: string): Promise<AdminUser> {
    const record = this.#changeable(login);
    const problem = newPasswordProblem(password);
    if (problem !== undefined) throw new AdminError('INVALID_ARGUMENT', problem);
    await this.#options.store.setPasswordHash(record.user_id, await hashPassword(password));
    const ended = await this.#options.sessions.revokeSubject(record.user_id);
    this.#audit('password set', { user_id: record.user_id, sessions_ended: String(ended) });
    return toAdminUser(this.#options.store.findById(record.user_id) ?? record);
  }

  /** Ends a user's sign-in lockout (any user, static identities included: admin is the usual target). */
  unlockUser(login: string): { email: string; user_id: string; locks_cleared: number } {
    const key = login.trim();
    if (key === '') throw new AdminError('INVALID_ARGUMENT', 'email is required');
    const record = this.#options.store.findByLogin(key);
    if (record === undefined) throw new AdminError('NOT_FOUND', `no user ${key}`);
    const cleared = this.#options.signInLocks?.clear(record) ?? 0;
    this.#audit('sign-in lockout cleared', { user_id: record.user_id, locks_cleared: String(cleared) });
    return { email: record.email, user_id: record.user_id, locks_cleared: cleared };
  }

  getMfa(login: string): AdminUser {
    return this.getUser(login);
  }

  /**
   * MFA on: a new TOTP secret (replacing any earlier one), stored encrypted and returned this once
   * with its otpauth:// URI for enrolment. MFA off: the secret is removed.
   */
  async setMfa(
    login: string,
    enabled: boolean,
  ): Promise<AdminUser & { totp?: { secret: string; uri: string } | undefined }> {
    const record = this.#changeable(login);
    let totp: { secret: string; uri: string } | undefined;
    if (enabled) {
      const box = this.#options.secrets;
      if (box === undefined)
        throw new AdminError(
          'FAILED_PRECONDITION',
          'MFA needs secret-master-key, which svc-identity has not loaded',
        );
      totp = newTotpSecret(record.email);
      await this.#options.store.setMfa(record.user_id, true, box.encrypt(totp.secret));
    } else await this.#options.store.setMfa(record.user_id, false);
    this.#audit('mfa set', { user_id: record.user_id, mfa_enabled: String(enabled) });
    const user = toAdminUser(
      this.#options.store.findById(record.user_id) ?? { ...record, mfa_enabled: enabled },
    );
    return { ...user, totp };
  }

  async listClients(): Promise<OAuthClientInfo[]> {
    const secret = await stat(automationSecretPath(this.#options.workDir)).catch(() => undefined);
    return OAUTH_CLIENT_IDS.map((clientId) => {
      const { type, purpose } = CLIENTS[clientId];
      const own = clientId === AUTOMATION_CLIENT_ID && secret !== undefined;
      return {
        client_id: clientId,
        type,
        purpose,
        secret_present: own,
        secret_updated_at: own ? secret.mtime.toISOString() : '',
      };
    });
  }

  /**
   * A new random secret for svc-automation, written to work/auth/secrets/automation-client (temp file
   * + rename, mode 0600). The secret is not returned: the operator reads the file on the owner host
   * (`automation-token` does). The client's principal `client:svc-automation` is unchanged.
   */
  async regenerateAutomationSecret(): Promise<OAuthClientInfo> {
    const secret = randomBytes(AUTOMATION_SECRET_BYTES).toString('hex');
    try {
      await writeFileAtomic(automationSecretPath(this.#options.workDir), secret + '\n', {
        mode: 0o600,
        ownerFromDirectory: true,
      });
    } catch (error) {
      throw new AdminError(
        'INTERNAL',
        `cannot write the automation-client secret file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    await this.#options.onAutomationSecretChanged?.(secret);
    this.#audit('automation secret regenerated', { client_id: AUTOMATION_CLIENT_ID });
    return (await this.listClients()).find((client) => client.client_id === AUTOMATION_CLIENT_ID)!;
  }

  listSessions(): SessionRecord[] {
    return [...this.#options.sessions.list()];
  }

  async revokeSession(id: string): Promise<void> {
    if (id.trim() === '') throw new AdminError('INVALID_ARGUMENT', 'session id is required');
    if (!(await this.#options.sessions.revoke(id))) throw new AdminError('NOT_FOUND', `no session ${id}`);
    this.#audit('session revoked', { session_id: id });
  }
}
