// In-memory storage of the provider's models (sessions, interactions, grants, codes, tokens). One
// store outlives every provider instance the assembly creates (key rotation re-creates the provider),
// so sign-ins, grants and refresh tokens survive a rotation. State is lost when svc-identity
// restarts: users sign in again (tokens already issued stay valid until they expire).
import type { Adapter, AdapterPayload } from 'oidc-provider';

interface Entry {
  payload: AdapterPayload;
  expiresAt: number | undefined;
}

/** Bound on stored entries; the oldest are evicted first (a flood of abandoned interactions). */
const MAX_ENTRIES = 100_000;

/** Told when grants appear and disappear (the admin API lists them as sessions). */
export interface GrantObserver {
  saved(grantId: string, payload: AdapterPayload, expiresAt: number | undefined): void;
  removed(grantId: string): void;
}

export class MemoryStore {
  readonly #entries = new Map<string, Entry>();
  readonly #grants = new Map<string, Set<string>>();
  readonly #userCodes = new Map<string, string>();
  readonly #uids = new Map<string, string>();
  readonly #now: () => number;
  observer: GrantObserver | undefined;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Ends a grant: every model issued under it (tokens, codes) and the grant itself. */
  revokeGrant(grantId: string): void {
    for (const stored of this.#grants.get(grantId) ?? []) this.#entries.delete(stored);
    this.#grants.delete(grantId);
    this.#entries.delete(`Grant:${grantId}`);
    this.observer?.removed(grantId);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The adapter factory for oidc-provider's `adapter` setting. */
  adapterFor = (model: string): Adapter => {
    const key = (id: string): string => `${model}:${id}`;
    const get = (id: string): AdapterPayload | undefined => {
      const entry = this.#entries.get(key(id));
      if (entry === undefined) return undefined;
      if (entry.expiresAt !== undefined && entry.expiresAt <= this.#now()) {
        this.#entries.delete(key(id));
        return undefined;
      }
      return entry.payload;
    };
    return {
      upsert: async (id, payload, expiresIn) => {
        if (this.#entries.size >= MAX_ENTRIES) {
          const oldest = this.#entries.keys().next();
          if (oldest.done !== true) this.#entries.delete(oldest.value);
        }
        const expiresAt = expiresIn > 0 ? this.#now() + expiresIn * 1000 : undefined;
        this.#entries.set(key(id), { payload: { ...payload }, expiresAt });
        if (model === 'Grant') this.observer?.saved(id, payload, expiresAt);
        if (typeof payload.grantId === 'string') {
          const set = this.#grants.get(payload.grantId) ?? new Set<string>();
          set.add(key(id));
          this.#grants.set(payload.grantId, set);
        }
        if (typeof payload.userCode === 'string') this.#userCodes.set(payload.userCode, id);
        if (typeof payload.uid === 'string') this.#uids.set(payload.uid, id);
      },
      find: async (id) => get(id),
      findByUserCode: async (userCode) => {
        const id = this.#userCodes.get(userCode);
        return id === undefined ? undefined : get(id);
      },
      findByUid: async (uid) => {
        const id = this.#uids.get(uid);
        return id === undefined ? undefined : get(id);
      },
      consume: async (id) => {
        const entry = this.#entries.get(key(id));
        if (entry !== undefined)
          entry.payload = { ...entry.payload, consumed: Math.floor(this.#now() / 1000) };
      },
      destroy: async (id) => {
        this.#entries.delete(key(id));
        if (model === 'Grant') this.observer?.removed(id);
      },
      revokeByGrantId: async (grantId) => {
        this.revokeGrant(grantId);
      },
    };
  };
}
