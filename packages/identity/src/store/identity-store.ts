// The identity store as the provider, the admin gRPC API and the helper script see it. The static
// identities come from the credential files (read-only here); users created through the admin
// transport are persisted in work/auth/users.yaml (atomic writes). Implemented in ./user-store.ts.

export interface UserRecord {
  /** Token `sub`: the packaged constant for static identities, a random UUID for created users. */
  readonly user_id: string;
  readonly username: string;
  readonly email: string;
  /** bcrypt, cost 10 (`$2[aby]$10$` + 53 characters). */
  readonly password_hash: string;
  /** admin and guest: cannot be changed through the administration UI or add-user/delete-user. */
  readonly static: boolean;
  readonly created_at: string;
  readonly mfa_enabled: boolean;
  /** The TOTP secret, encrypted with secret-master-key (`enc:v1:…`); set while MFA is enrolled. */
  readonly mfa_secret?: string | undefined;
}

export interface IdentityStore {
  /** By username or email, case-insensitive on the email. */
  findByLogin(login: string): UserRecord | undefined;
  findById(userId: string): UserRecord | undefined;
  list(): readonly UserRecord[];
  /** Throws when the email is taken or names a static identity. */
  create(input: { email: string; passwordHash: string }): Promise<UserRecord>;
  /** Removes a created user; throws for a static identity; undefined when none. */
  delete(email: string): Promise<UserRecord | undefined>;
  setPasswordHash(userId: string, passwordHash: string): Promise<void>;
  /** MFA on with the encrypted TOTP secret `secret`, or off (`enabled` false: the secret is removed). */
  setMfa(userId: string, enabled: boolean, secret?: string): Promise<void>;
}
