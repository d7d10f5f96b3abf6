// In-memory storage of the provider's models (sessions, interactions, grants, codes, tokens). One
// store outlives every provider instance the assembly creates (key rotation re-creates the provider),
// so sign-ins, grants and refresh tokens survive a rotation. svc-identity persists it
// (state-file.ts: `snapshot()` after each change, `load()` at start) so that they survive a restart.
import type { Adapter, AdapterPayload } from 'oidc-provider';

export interface Entry {
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
  /** Called after every change (the state file schedules a write). */
  onChange: (() => void) | undefined;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Ends a grant: every model issued under it (tokens, codes) and the grant itself. */
  revokeGrant(grantId: string): void {
    for (const stored of this.#grants.get(grantId) ?? []) this.#entries.delete(stored);
    this.#grants.delete(grantId);
    this.#entries.delete(`Grant:${grantId}`);
    this.observer?.removed(grantId);
    this.onChange?.();
  }

  /** Live entries (`<model>:<id>` → entry), oldest first, for the state file. */
  snapshot(): [string, Entry][] {
    const now = this.#now();
    return [...this.#entries].filter(([, entry]) => entry.expiresAt === undefined || entry.expiresAt > now);
  }

  /** Adds entries read back from the state file (expired ones are skipped), rebuilding the indexes. */
  load(entries: Iterable<[string, Entry]>): void {
    const now = this.#now();
    for (const [key, entry] of entries) {
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) continue;
      const colon = key.indexOf(':');
      if (colon <= 0) continue;
      this.#entries.set(key, entry);
      this.#index(key.slice(0, colon), key.slice(colon + 1), entry.payload);
    }
  }

  /** Tells the observer about every stored grant (after `load`, so that they are listed as sessions). */
  replayGrants(): void {
    for (const [key, entry] of this.snapshot())
      if (key.startsWith('Grant:'))
        this.observer?.saved(key.slice('Grant:'.length), entry.payload, entry.expiresAt);
  }

  #index(model: string, id: string, payload: AdapterPayload): void {
    const key = `${model}:${id}`;
    if (typeof payload.grantId === 'string') {
      const set = this.#grants.get(payload.grantId) ?? new Set<string>();
      set.add(key);
      this.#grants.set(payload.grantId, set);
    }
    if (typeof payload.userCode === 'string') this.#userCodes.set(payload.userCode, id);
    if (typeof payload.uid === 'string') this.#uids.set(payload.uid, id);
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
        this.#index(model, id, payload);
        this.onChange?.();
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
        this.onChange?.();
      },
      destroy: async (id) => {
        this.#entries.delete(key(id));
        if (model === 'Grant') this.observer?.removed(id);
        this.onChange?.();
      },
      revokeByGrantId: async (grantId) => {
        this.revokeGrant(grantId);
      },
    };
  };
}
