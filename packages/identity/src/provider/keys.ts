// The signing-key ring of the issuer (spec "Token lifetimes": signing keys 6 hours).
//
//   t=0        t=6h            t=6h+15m(+skew)   t=12h
//   K1 active ─ K2 active ─────────────────────── K3 active …
//              K1 retired (public key still in the JWKS: tokens it signed live ≤ 15 min)
//                              K1 dropped
//
// oidc-provider reads its keys at construction, so the ring only decides *which* keys exist; the
// assembly (provider.ts) re-creates the provider whenever `version` changes. The clock is injected
// so that rotation is testable without waiting six hours.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';

export const SIGNING_ALG = 'RS256';
/** Lifetime of a signing key as the active key (spec: 6 hours). */
export const KEY_ROTATION_MS = 6 * 60 * 60 * 1000;

export interface SigningKey {
  readonly kid: string;
  readonly createdAt: number;
  /** When a newer key took over; undefined for the active key. */
  readonly retiredAt: number | undefined;
  readonly privateJwk: JsonWebKey;
}

export interface KeyRingOptions {
  now?: (() => number) | undefined;
  rotationMs?: number | undefined;
  /** How long a retired public key stays published: the longest token lifetime plus clock skew. */
  retainMs?: number | undefined;
  /** Key generator (tests may inject a faster one); default RSA 2048. */
  generate?: (() => JsonWebKey) | undefined;
  /** Keys saved by an earlier run (`snapshot()`): restored instead of generating a first key. */
  restore?: KeyRingSnapshot | undefined;
}

/** What the state file keeps of the ring (private keys: the file is encrypted). */
export interface KeyRingSnapshot {
  readonly keys: readonly SigningKey[];
  readonly rotations: number;
}

function isSigningKey(value: unknown): value is SigningKey {
  const key = value as Partial<SigningKey> | null;
  return (
    typeof key === 'object' &&
    key !== null &&
    typeof key.kid === 'string' &&
    typeof key.createdAt === 'number' &&
    (key.retiredAt === undefined || typeof key.retiredAt === 'number') &&
    typeof key.privateJwk === 'object' &&
    key.privateJwk !== null &&
    key.privateJwk.kty === 'RSA' &&
    typeof key.privateJwk.d === 'string'
  );
}

function generateRsaJwk(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ format: 'jwk' });
}

function publicPart(jwk: JsonWebKey): JsonWebKey {
  const { kty, n, e, crv, x, y } = jwk;
  return Object.fromEntries(Object.entries({ kty, n, e, crv, x, y }).filter(([, v]) => v !== undefined));
}

export class SigningKeyRing {
  readonly #now: () => number;
  readonly #rotationMs: number;
  readonly #retainMs: number;
  readonly #generate: () => JsonWebKey;
  #keys: SigningKey[] = [];
  #version = 0;
  #rotations = 0;

  constructor(options: KeyRingOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#rotationMs = options.rotationMs ?? KEY_ROTATION_MS;
    this.#retainMs = options.retainMs ?? (900 + 60) * 1000;
    this.#generate = options.generate ?? generateRsaJwk;
    const restored = options.restore?.keys.filter(isSigningKey) ?? [];
    if (restored.length > 0 && restored[0]?.retiredAt === undefined) {
      // JSON drops `retiredAt: undefined`; the active key is the first one.
      this.#keys = restored.map((key) => ({ ...key, retiredAt: key.retiredAt }));
      this.#rotations = options.restore?.rotations ?? 0;
      this.#version = 1;
      this.update();
    } else this.#add(this.#now());
  }

  /** The keys and the rotation count, for the state file. */
  snapshot(): KeyRingSnapshot {
    return { keys: this.#keys.map((key) => ({ ...key })), rotations: this.#rotations };
  }

  #add(at: number): void {
    const jwk = this.#generate();
    const kid = randomUUID();
    this.#keys = [
      { kid, createdAt: at, retiredAt: undefined, privateJwk: { ...jwk, kid, alg: SIGNING_ALG, use: 'sig' } },
      ...this.#keys.map((key) => (key.retiredAt === undefined ? { ...key, retiredAt: at } : key)),
    ];
    this.#version += 1;
  }

  /**
   * Brings the ring up to date with the clock: a new active key when the current one is 6 hours
   * old, retired keys dropped once every token they signed has expired. True when keys changed.
   */
  update(): boolean {
    const now = this.#now();
    const before = this.#version;
    const active = this.#keys[0];
    if (active === undefined || now - active.createdAt >= this.#rotationMs) {
      this.#add(now);
      this.#rotations += 1;
    }
    const kept = this.#keys.filter(
      (key) => key.retiredAt === undefined || now - key.retiredAt < this.#retainMs,
    );
    if (kept.length !== this.#keys.length) {
      this.#keys = kept;
      this.#version += 1;
    }
    return this.#version !== before;
  }

  /** Increases whenever the set of keys changes. */
  get version(): number {
    return this.#version;
  }

  get rotations(): number {
    return this.#rotations;
  }

  get activeKid(): string {
    return (this.#keys[0] as SigningKey).kid;
  }

  /** Milliseconds until the next change (rotation or a retired key's removal). */
  msUntilNextChange(): number {
    const now = this.#now();
    const due = [(this.#keys[0] as SigningKey).createdAt + this.#rotationMs];
    for (const key of this.#keys) if (key.retiredAt !== undefined) due.push(key.retiredAt + this.#retainMs);
    return Math.max(0, Math.min(...due) - now);
  }

  /** Private keys for the provider: the active key first (oidc-provider signs with the first match). */
  providerJwks(): { keys: JsonWebKey[] } {
    return { keys: this.#keys.map((key) => ({ ...key.privateJwk })) };
  }

  /** The public JWKS (what the provider publishes). */
  publicJwks(): { keys: JsonWebKey[] } {
    return {
      keys: this.#keys.map((key) => ({
        ...publicPart(key.privateJwk),
        kid: key.kid,
        alg: SIGNING_ALG,
        use: 'sig',
      })),
    };
  }
}
