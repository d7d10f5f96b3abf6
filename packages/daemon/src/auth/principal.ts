// What the rest of the daemon knows about a verified caller (CONTRACT §8).
import type { Permission } from '@svc/protocol';

export type PrincipalStatus = 'active' | 'tombstoned';

export interface Principal {
  /** Token `sub` for users; `client:<client_id>` for tokens issued to a client itself. */
  readonly id: string;
  readonly roles: readonly string[];
  readonly status: PrincipalStatus;
  /** Union of the permissions of `roles`, resolved against the current role table. */
  readonly permissions: ReadonlySet<Permission>;
  /** `exp` of the token that authenticated this principal, in epoch seconds. */
  readonly expiresAt: number;
  /**
   * The OS user this principal's applications, runs and file transfers execute as (CONTRACT §6:
   * the record's `execution_user`, else `BaseConfig.DefaultExecUser`); undefined = the daemon's user.
   */
  readonly executionUser?: string | undefined;
}

/** Verifies a bearer token and returns the authenticated principal id, or throws SvcError (401/503). */
export interface TokenVerifier {
  verify(token: string): Promise<{ principalId: string; expiresAt: number; clientId?: string }>;
}
