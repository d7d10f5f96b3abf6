// The session registry the administrative API lists and revokes from. The identity provider feeds
// it (one entry per sign-in session or grant it wants an operator to see) and supplies how to end
// one. The in-memory implementation is what the provider uses today: entries live as long as the
// svc-identity process, which matches oidc-provider's own in-memory adapter (sessions and grants
// do not survive a restart of the provider either).

export interface SessionRecord {
  /** Opaque, unique id (the provider's session or grant id). */
  readonly id: string;
  /** Token `sub`: a user's user_id, or `client:<client_id>` for a client's own grant. */
  readonly subject: string;
  /** The OAuth client the session was established through, when known. */
  readonly client_id?: string | undefined;
  /** e.g. `browser`, `refresh`, `device`, `password`, `client_credentials`. */
  readonly kind: string;
  /** ISO 8601. */
  readonly created_at: string;
  /** ISO 8601, when the session has a fixed end. */
  readonly expires_at?: string | undefined;
}

export interface SessionRegistry {
  list(): readonly SessionRecord[];
  /** Ends one session; false when no session has this id. */
  revoke(id: string): Promise<boolean>;
  /** Ends every session of `subject` (a user deleted or given a new password); the count ended. */
  revokeSubject(subject: string): Promise<number>;
}

/** What the provider runs to end a session it registered (destroy the session, revoke grants). */
export type RevokeSession = (record: SessionRecord) => Promise<void> | void;

export class InMemorySessionRegistry implements SessionRegistry {
  readonly #sessions = new Map<string, { record: SessionRecord; end: RevokeSession | undefined }>();

  /** Register (or replace) a session; `end` is called when an operator revokes it. */
  add(record: SessionRecord, end?: RevokeSession): void {
    this.#sessions.set(record.id, { record: { ...record }, end });
  }

  /** Forget a session that ended on its own (sign-out, expiry). */
  remove(id: string): boolean {
    return this.#sessions.delete(id);
  }

  list(): readonly SessionRecord[] {
    return [...this.#sessions.values()]
      .map((entry) => entry.record)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  async revoke(id: string): Promise<boolean> {
    const entry = this.#sessions.get(id);
    if (entry === undefined) return false;
    // Run the provider's end first: if it throws, the session stays listed (it may still be live).
    await entry.end?.(entry.record);
    this.#sessions.delete(id);
    return true;
  }

  async revokeSubject(subject: string): Promise<number> {
    let count = 0;
    for (const { record } of [...this.#sessions.values()])
      if (record.subject === subject && (await this.revoke(record.id))) count++;
    return count;
  }
}
