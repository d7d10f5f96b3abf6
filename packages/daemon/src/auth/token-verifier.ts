// Verifies OAuth 2.0 bearer access tokens (JWT, RFC 9068) issued by an OpenID issuer, and derives
// the principal id (CONTRACT §8).
//
//   verify(token)
//     ├─ size / shape check ────────────────────────────── invalid_token
//     ├─ SHA-256(token) in the verified-token LRU? ──────── hit: return (no signature work)
//     ├─ discovery + JWKS loaded (issuer-keys.ts)? else load (lazily, one shared in-flight load, retried on the
//     │   next request after a failure) ────────────────── unavailable
//     ├─ jwtVerify: asymmetric algs only, iss, aud, exp ─── invalid_token
//     │    └─ unknown kid → one JWKS refetch, shared by concurrent callers, at most one per
//     │       cooldown (30 s); still unknown → invalid_token
//     └─ principal id from claims, cache until `exp`
//
// Error messages never contain the token (nor any part of it).
import { createHash } from 'node:crypto';
import { errors as joseErrors, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { SvcError } from '@svc/protocol';
import { IssuerKeys, nodeFetch, type FetchLike } from './issuer-keys.ts';
import type { TokenVerifier } from './principal.ts';

export { nodeFetch, type FetchLike, type FetchResponseLike } from './issuer-keys.ts';

export interface OidcTokenVerifierOptions {
  /** Issuer identifier; must equal the discovery document's `issuer` exactly. */
  issuer: string;
  /** Required `aud` (the token's `aud` may be an array containing it). Default `svc-api`. */
  audience?: string | undefined;
  /** HTTP client for discovery and JWKS; default a node:http(s) client honouring `caPem`. */
  fetch?: FetchLike | undefined;
  /** Allowed clock skew for `exp`/`nbf`/`iat`, seconds. Default 5. */
  clockToleranceSec?: number | undefined;
  /**
   * Required JWT header `typ`, e.g. `at+jwt` (RFC 9068 §4) where the issuer marks access tokens so
   * (the built-in issuer does); stops an ID token minted for a client named like the audience from
   * passing as an access token. Default: not checked (many external issuers send `JWT`).
   */
  requiredTyp?: string | undefined;
  /** Extra trusted CA (PEM) for an HTTPS issuer with a private certificate. */
  caPem?: string | undefined;
  /** Minimum time between unknown-kid JWKS refetches. Default 30 000 ms. */
  jwksRefetchCooldownMs?: number | undefined;
  /** Bound of the verified-token cache. Default 10 000 entries. */
  cacheSize?: number | undefined;
  /** After a failed discovery/JWKS load, requests fail fast with the same error this long. Default 1 000 ms. */
  loadRetryMs?: number | undefined;
  /** Timeout of one discovery or JWKS request. Default 5 000 ms. */
  requestTimeoutMs?: number | undefined;
  /** Clock in epoch milliseconds; tests inject one. Default `Date.now`. */
  now?: (() => number) | undefined;
}

export interface VerifiedToken {
  readonly principalId: string;
  readonly expiresAt: number;
  readonly clientId?: string;
}

/** Asymmetric signature algorithms only: never `none`, never HS* (the public key is public). */
export const ALLOWED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** Longer bearers are refused before any work (a real access token is 1–2 KB). */
export const MAX_TOKEN_LENGTH = 16 * 1024;
const MAX_PRINCIPAL_ID_LENGTH = 256;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

function invalidToken(message: string, cause?: unknown): SvcError {
  return new SvcError('invalid_token', message, cause === undefined ? undefined : { cause });
}

/** Maps a jose failure to a fixed, token-free message. */
function fromJoseError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  if (error instanceof joseErrors.JWTExpired) return invalidToken('token expired', error);
  if (error instanceof joseErrors.JWTClaimValidationFailed && error.claim === 'typ') {
    return invalidToken('token is not an access token (header typ)', error);
  }
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    return invalidToken(`token claim "${error.claim}" rejected (${error.reason})`, error);
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return invalidToken('token algorithm not allowed', error);
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
    return invalidToken('token signature invalid', error);
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return invalidToken('token signed by an unknown key', error);
  if (error instanceof joseErrors.JWKSMultipleMatchingKeys) {
    return invalidToken('token names no key id and several keys match', error);
  }
  if (error instanceof joseErrors.JOSEError) return invalidToken('token is not a valid JWT', error);
  return invalidToken('token rejected', error);
}

function optionalString(payload: JWTPayload, claim: string): string | undefined {
  const value = payload[claim];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * The principal id of a verified token (CONTRACT §8; decision in docs/decisions.md).
 *
 * A token is a *client* token — principal `client:<client_id>` — when any of:
 *  1. `gty` is `client_credentials` or `client-credentials` (Auth0 style);
 *  2. it has no `sub` but names a client (`client_id`, else `azp`);
 *  3. `sub` equals the client id (`client_id`, else `azp`) — RFC 9068 §2.2, which oidc-provider
 *     (the built-in issuer) follows for client-credentials tokens.
 * Otherwise it is a user token and the principal is `sub`. A user `sub` starting with `client:`
 * is refused: it would impersonate a client principal.
 */
export function principalFromClaims(payload: JWTPayload): { principalId: string; clientId?: string } {
  const sub = optionalString(payload, 'sub');
  const clientId = optionalString(payload, 'client_id') ?? optionalString(payload, 'azp');
  const gty = payload['gty'];
  const clientGrant = gty === 'client_credentials' || gty === 'client-credentials';

  let principalId: string;
  if (clientGrant || sub === undefined || sub === clientId) {
    if (clientId === undefined) {
      throw invalidToken(clientGrant ? 'client token names no client_id' : 'token has no subject');
    }
    principalId = `client:${clientId}`;
  } else if (sub.startsWith('client:')) {
    throw invalidToken('token subject uses the reserved prefix "client:"');
  } else {
    principalId = sub;
  }
  if (principalId.length > MAX_PRINCIPAL_ID_LENGTH || CONTROL_CHARACTERS.test(principalId)) {
    throw invalidToken('token subject is too long or contains control characters');
  }
  return clientId === undefined ? { principalId } : { principalId, clientId };
}

/** Tokens remembered by their text in front of the digest cache (at most 32 × 16 KiB). */
const RECENT_TOKENS = 32;

interface CacheEntry {
  readonly result: VerifiedToken;
  readonly expiresAtMs: number;
  /** Its key in the cache (SHA-256 of the token). */
  readonly digest: string;
  /** The token's text while the entry is also among the recent ones (dropped with the entry). */
  recentAs?: string | undefined;
}

export interface OidcTokenVerifier extends TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
  /**
   * The verification of a token presented recently and not expired, without any work (no digest,
   * no promise); undefined otherwise — then `verify` decides.
   */
  verifyCached(token: string): VerifiedToken | undefined;
  /** Drops every cached verification (for example after a key compromise). */
  clearCache(): void;
}

/** Where `verify` found a token: its cached result, or else the digest to remember its verification under. */
type Lookup = { readonly result: VerifiedToken } | { readonly result: undefined; readonly digest: string };

/** Verified tokens by SHA-256 of their text, least recently used dropped first, until their `exp`. */
class VerifiedTokenCache {
  readonly #size: number;
  readonly #now: () => number;
  // Map iteration order is insertion order: the first key is the least recently used.
  readonly #cache = new Map<string, CacheEntry>();
  // In front of it, the few most recent tokens by their text: a persistent connection presents the
  // same token on every request, and this spares the SHA-256 of it per request. Cleared with the
  // cache; entries expire with their token like the cache's.
  readonly #recent = new Map<string, CacheEntry>();

  constructor(size: number, now: () => number) {
    this.#size = size;
    this.#now = now;
  }

  clear(): void {
    this.#cache.clear();
    this.#recent.clear();
  }

  /** The result of a recent, unexpired token, without any work (no digest); undefined otherwise. */
  recent(token: string): VerifiedToken | undefined {
    const known = this.#recent.get(token);
    if (known === undefined || known.expiresAtMs <= this.#now()) return undefined;
    // Most recently used in the cache too (an entry leaves both together).
    this.#cache.delete(known.digest);
    this.#cache.set(known.digest, known);
    return known.result;
  }

  /** The result of an unexpired cached token (then most recently used), else its digest; expired entries leave. */
  lookup(token: string): Lookup {
    const known = this.#recent.get(token);
    if (known !== undefined) {
      // Still in the cache (an entry leaves both together): most recently used there too.
      this.#cache.delete(known.digest);
      if (known.expiresAtMs > this.#now()) {
        this.#cache.set(known.digest, known);
        return { result: known.result };
      }
      this.#forgetRecent(token);
    }
    const digest = createHash('sha256').update(token).digest('base64');
    const hit = this.#cache.get(digest);
    if (hit !== undefined) {
      this.#cache.delete(digest);
      if (hit.expiresAtMs > this.#now()) {
        this.#cache.set(digest, hit);
        this.#rememberRecent(token, hit);
        return { result: hit.result };
      }
    }
    return { result: undefined, digest };
  }

  remember(token: string, digest: string, result: VerifiedToken): void {
    if (this.#cache.size >= this.#size) {
      const oldest = this.#cache.entries().next();
      if (oldest.done !== true) {
        this.#cache.delete(oldest.value[0]);
        if (oldest.value[1].recentAs !== undefined) this.#forgetRecent(oldest.value[1].recentAs);
      }
    }
    const entry: CacheEntry = { result, expiresAtMs: result.expiresAt * 1000, digest };
    this.#cache.set(digest, entry);
    this.#rememberRecent(token, entry);
  }

  #forgetRecent(token: string): void {
    const entry = this.#recent.get(token);
    if (entry === undefined) return;
    entry.recentAs = undefined;
    this.#recent.delete(token);
  }

  #rememberRecent(token: string, entry: CacheEntry): void {
    if (this.#recent.size >= RECENT_TOKENS) {
      const oldest = this.#recent.keys().next();
      if (oldest.done !== true) this.#forgetRecent(oldest.value);
    }
    entry.recentAs = token;
    this.#recent.set(token, entry);
  }
}

export function createOidcTokenVerifier(options: OidcTokenVerifierOptions): OidcTokenVerifier {
  const issuer = options.issuer;
  const audience = options.audience ?? 'svc-api';
  const clockTolerance = options.clockToleranceSec ?? 5;
  const now = options.now ?? Date.now;
  const cache = new VerifiedTokenCache(options.cacheSize ?? 10_000, now);
  const keys = new IssuerKeys({
    issuer,
    fetch: options.fetch ?? nodeFetch(options.caPem),
    requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
    loadRetryMs: options.loadRetryMs ?? 1_000,
    refetchCooldownMs: options.jwksRefetchCooldownMs ?? 30_000,
    now,
    onKeyWithdrawn: () => cache.clear(),
  });

  return {
    verifyCached(token: string): VerifiedToken | undefined {
      return cache.recent(token);
    },
    async verify(token: string): Promise<VerifiedToken> {
      if (typeof token !== 'string' || token.length === 0) throw invalidToken('token missing');
      if (token.length > MAX_TOKEN_LENGTH) throw invalidToken('token too large');
      const cached = cache.lookup(token);
      if (cached.result !== undefined) return cached.result;
      if (!JWS_COMPACT.test(token)) throw invalidToken('token is not a compact JWT');

      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys.getKey, {
          issuer,
          audience,
          algorithms: [...ALLOWED_ALGORITHMS],
          requiredClaims: ['exp'],
          ...(options.requiredTyp === undefined ? {} : { typ: options.requiredTyp }),
          clockTolerance,
          currentDate: new Date(now()),
        }));
      } catch (error) {
        throw fromJoseError(error);
      }
      const { principalId, clientId } = principalFromClaims(payload);
      const expiresAt = payload.exp as number; // required above
      const result: VerifiedToken = Object.freeze(
        clientId === undefined ? { principalId, expiresAt } : { principalId, expiresAt, clientId },
      );
      cache.remember(token, cached.digest, result);
      return result;
    },
    clearCache() {
      cache.clear();
    },
  };
}
