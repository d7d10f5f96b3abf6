// An in-memory twin of the IdentityStore seam, for the admin tests only (the real store is
// src/store/user-store.ts). Seeded with the static identities admin and guest.
import { randomUUID } from 'node:crypto';
import { STATIC_IDENTITIES } from '../../src/store/identities.ts';
import type { IdentityStore, UserRecord } from '../../src/store/identity-store.ts';

export class MemoryIdentityStore implements IdentityStore {
  readonly #users = new Map<string, UserRecord>();

  constructor(staticHash: string) {
    for (const identity of Object.values(STATIC_IDENTITIES))
      this.#users.set(identity.user_id, {
        user_id: identity.user_id,
        username: identity.username,
        email: identity.email,
        password_hash: staticHash,
        static: true,
        created_at: '2024-01-01T00:00:00.000Z',
        mfa_enabled: false,
      });
  }

  findByLogin(login: string): UserRecord | undefined {
    const lower = login.toLowerCase();
    return [...this.#users.values()].find(
      (user) => user.username === login || user.email.toLowerCase() === lower,
    );
  }

  findById(userId: string): UserRecord | undefined {
    return this.#users.get(userId);
  }

  list(): readonly UserRecord[] {
    return [...this.#users.values()];
  }

  async create(input: { email: string; passwordHash: string }): Promise<UserRecord> {
    if (this.findByLogin(input.email) !== undefined) throw new Error('email taken');
    const record: UserRecord = {
      user_id: randomUUID(),
      username: input.email,
      email: input.email,
      password_hash: input.passwordHash,
      static: false,
      created_at: new Date().toISOString(),
      mfa_enabled: false,
    };
    this.#users.set(record.user_id, record);
    return record;
  }

  async delete(email: string): Promise<UserRecord | undefined> {
    const record = this.findByLogin(email);
    if (record === undefined) return undefined;
    if (record.static) throw new Error('static identity');
    this.#users.delete(record.user_id);
    return record;
  }

  async setPasswordHash(userId: string, passwordHash: string): Promise<void> {
    const record = this.#mutable(userId);
    this.#users.set(userId, { ...record, password_hash: passwordHash });
  }

  async setMfa(userId: string, enabled: boolean, secret?: string): Promise<void> {
    const { mfa_secret: _previous, ...record } = this.#mutable(userId);
    this.#users.set(
      userId,
      enabled && secret !== undefined
        ? { ...record, mfa_enabled: true, mfa_secret: secret }
        : { ...record, mfa_enabled: enabled },
    );
  }

  #mutable(userId: string): UserRecord {
    const record = this.#users.get(userId);
    if (record === undefined) throw new Error('no such user');
    if (record.static) throw new Error('static identity');
    return record;
  }
}
