// Verifies OAuth 2.0 bearer access tokens (JWT, RFC 9068) issued by an OpenID issuer, and derives
// the principal id (CONTRACT §8).
//
//   verify(token)
//     ├─ size / shape check ────────────────────────────── invalid_token
//     ├─ SHA-256(token) in the verified-token LRU? ──────── hit: return (no signature work)
//     ├─ discovery + JWKS loaded? else load (lazily, one shared in-flight load, retried on the
//     │   next request after a failure) ────────────────── unavailable
//     ├─ jwtVerify: asymmetric algs only, iss, aud, exp ─── invalid_token
//     │    └─ unknown kid → one JWKS refetch, shared by concurrent callers, at most one per
//     │       cooldown (30 s); still unknown → invalid_token
//     └─ principal id from claims, cache until `exp`
//
// Error messages never contain the token (nor any part of it).
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { createLocalJWKSet, errors as joseErrors, jwtVerify } from 'jose';
import type { JSONWebKeySet, JWTPayload, JWTVerifyGetKey } from 'jose';
import { SvcError } from '@svc/protocol';
import type { TokenVerifier } from './principal.ts';

export interface FetchResponseLike {
  readonly ok: boolean;
  readonly status: number;
  json(): Promise<unknown>;
}
/** The subset of `fetch` the verifier uses; `globalThis.fetch` satisfies it. */
export type FetchLike = (url: string, init: { signal: AbortSignal }) => Promise<FetchResponseLike>;

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
const MAX_DOCUMENT_BYTES = 1024 * 1024;
const MAX_PRINCIPAL_ID_LENGTH = 256;
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

function invalidToken(message: string, cause?: unknown): SvcError {
  return new SvcError('invalid_token', message, cause === undefined ? undefined : { cause });
}

function unavailable(message: string, cause?: unknown): SvcError {
  return new SvcError(
    'unavailable',
    `token issuer unavailable: ${message}`,
    cause === undefined ? undefined : { cause },
  );
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

/** A GET-JSON client on node:http(s), bounded in size, with an optional extra CA. */
export function nodeFetch(caPem?: string): FetchLike {
  return (url, init) =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const client = target.protocol === 'https:' ? https : target.protocol === 'http:' ? http : undefined;
      if (client === undefined) {
        reject(new Error(`unsupported URL scheme ${target.protocol}`));
        return;
      }
      const request = client.request(
        target,
        {
          method: 'GET',
          headers: { accept: 'application/json' },
          signal: init.signal,
          ...(caPem !== undefined && target.protocol === 'https:' ? { ca: caPem } : {}),
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_DOCUMENT_BYTES) request.destroy(new Error('response larger than 1 MiB'));
            else chunks.push(chunk);
          });
          response.on('error', reject);
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            const body = Buffer.concat(chunks).toString('utf8');
            resolve({
              ok: status >= 200 && status < 300,
              status,
              json: async () => JSON.parse(body) as unknown,
            });
          });
        },
      );
      request.on('error', reject);
      request.end();
    });
}

interface KeySet {
  readonly getKey: JWTVerifyGetKey;
  readonly kids: ReadonlySet<string>;
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

export function createOidcTokenVerifier(options: OidcTokenVerifierOptions): OidcTokenVerifier {
  const issuer = options.issuer;
  const audience = options.audience ?? 'svc-api';
  const fetchJson = options.fetch ?? nodeFetch(options.caPem);
  const clockTolerance = options.clockToleranceSec ?? 5;
  const cooldownMs = options.jwksRefetchCooldownMs ?? 30_000;
  const cacheSize = options.cacheSize ?? 10_000;
  const timeoutMs = options.requestTimeoutMs ?? 5_000;
  const loadRetryMs = options.loadRetryMs ?? 1_000;
  const now = options.now ?? Date.now;
  const discoveryUrl = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;

  let jwksUri: string | undefined;
  let keySet: KeySet | undefined;
  let loading: Promise<KeySet> | undefined;
  let refetching: Promise<KeySet> | undefined;
  let lastRefetchAt = Number.NEGATIVE_INFINITY;
  let lastLoadFailure: { at: number; error: SvcError } | undefined;
  // Map iteration order is insertion order: the first key is the least recently used.
  const cache = new Map<string, CacheEntry>();
  // In front of it, the few most recent tokens by their text: a persistent connection presents the
  // same token on every request, and this spares the SHA-256 of it per request. Cleared with the
  // cache; entries expire with their token like the cache's.
  const recent = new Map<string, CacheEntry>();
  const clearCaches = (): void => {
    cache.clear();
    recent.clear();
  };
  const forgetRecent = (token: string): void => {
    const entry = recent.get(token);
    if (entry === undefined) return;
    entry.recentAs = undefined;
    recent.delete(token);
  };
  const rememberRecent = (token: string, entry: CacheEntry): void => {
    if (recent.size >= RECENT_TOKENS) {
      const oldest = recent.keys().next();
      if (oldest.done !== true) forgetRecent(oldest.value);
    }
    entry.recentAs = token;
    recent.set(token, entry);
  };

  async function getJson(url: string, what: string): Promise<unknown> {
    let response: FetchResponseLike;
    try {
      response = await fetchJson(url, { signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw unavailable(`${what} request to ${url} failed: ${reason}`, error);
    }
    if (!response.ok) throw unavailable(`${what} at ${url} answered HTTP ${response.status}`);
    try {
      return await response.json();
    } catch (error) {
      throw unavailable(`${what} at ${url} is not JSON`, error);
    }
  }

  async function fetchKeySet(uri: string): Promise<KeySet> {
    const body = await getJson(uri, 'JWKS');
    const keys = (body as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) throw unavailable(`JWKS at ${uri} has no "keys" array`);
    const kids = new Set<string>();
    for (const key of keys as unknown[]) {
      const kid = (key as { kid?: unknown } | null)?.kid;
      if (typeof kid === 'string') kids.add(kid);
    }
    try {
      return { getKey: createLocalJWKSet(body as JSONWebKeySet), kids };
    } catch (error) {
      throw unavailable(`JWKS at ${uri} is malformed`, error);
    }
  }

  async function load(): Promise<KeySet> {
    if (jwksUri === undefined) {
      const document = await getJson(discoveryUrl, 'discovery');
      const advertised = (document as { issuer?: unknown } | null)?.issuer;
      if (advertised !== issuer) {
        throw unavailable(
          `discovery document names issuer ${JSON.stringify(advertised)}, expected ${JSON.stringify(issuer)}`,
        );
      }
      const uri = (document as { jwks_uri?: unknown }).jwks_uri;
      if (typeof uri !== 'string' || !/^https?:\/\//.test(uri)) {
        throw unavailable('discovery document has no http(s) jwks_uri');
      }
      jwksUri = uri;
    }
    keySet = await fetchKeySet(jwksUri);
    return keySet;
  }

  /**
   * Keys, loading them on first use (one shared in-flight load). A failed load is retried by the
   * first request after `loadRetryMs` (the issuer may start after the daemon); until then requests
   * fail fast with the same error instead of each hitting a down or misconfigured issuer.
   */
  function currentKeys(): Promise<KeySet> {
    if (keySet !== undefined) return Promise.resolve(keySet);
    if (loading === undefined && lastLoadFailure !== undefined && now() - lastLoadFailure.at < loadRetryMs) {
      return Promise.reject(lastLoadFailure.error);
    }
    loading ??= load()
      .then(
        (keys) => {
          lastLoadFailure = undefined;
          return keys;
        },
        (error: unknown) => {
          const failure = error instanceof SvcError ? error : unavailable('keys could not be loaded', error);
          lastLoadFailure = { at: now(), error: failure };
          throw failure;
        },
      )
      .finally(() => {
        loading = undefined;
      });
    return loading;
  }

  /** A JWKS refetch for an unknown kid, or undefined while the cooldown runs. */
  function refetchKeys(): Promise<KeySet> | undefined {
    if (refetching !== undefined) return refetching;
    if (jwksUri === undefined || now() - lastRefetchAt < cooldownMs) return undefined;
    lastRefetchAt = now();
    const uri = jwksUri;
    refetching = fetchKeySet(uri)
      .then((fresh) => {
        // A key that left the JWKS is no longer trusted: re-verify every cached token.
        if ([...(keySet?.kids ?? [])].some((kid) => !fresh.kids.has(kid))) clearCaches();
        keySet = fresh;
        return fresh;
      })
      .finally(() => {
        refetching = undefined;
      });
    return refetching;
  }

  const getKey: JWTVerifyGetKey = async (header, token) => {
    let keys = await currentKeys();
    if (header.kid !== undefined && !keys.kids.has(header.kid)) {
      keys = (await refetchKeys()) ?? keys;
    }
    return keys.getKey(header, token);
  };

  function remember(token: string, digest: string, result: VerifiedToken): void {
    if (cache.size >= cacheSize) {
      const oldest = cache.entries().next();
      if (oldest.done !== true) {
        cache.delete(oldest.value[0]);
        if (oldest.value[1].recentAs !== undefined) forgetRecent(oldest.value[1].recentAs);
      }
    }
    const entry: CacheEntry = { result, expiresAtMs: result.expiresAt * 1000, digest };
    cache.set(digest, entry);
    rememberRecent(token, entry);
  }

  return {
    verifyCached(token: string): VerifiedToken | undefined {
      const known = recent.get(token);
      if (known === undefined || known.expiresAtMs <= now()) return undefined;
      // Most recently used in the cache too (an entry leaves both together).
      cache.delete(known.digest);
      cache.set(known.digest, known);
      return known.result;
    },
    async verify(token: string): Promise<VerifiedToken> {
      if (typeof token !== 'string' || token.length === 0) throw invalidToken('token missing');
      if (token.length > MAX_TOKEN_LENGTH) throw invalidToken('token too large');
      const known = recent.get(token);
      if (known !== undefined) {
        // Still in the cache (an entry leaves both together): most recently used there too.
        cache.delete(known.digest);
        if (known.expiresAtMs > now()) {
          cache.set(known.digest, known);
          return known.result;
        }
        forgetRecent(token);
      }
      const digest = createHash('sha256').update(token).digest('base64');
      const hit = cache.get(digest);
      if (hit !== undefined) {
        cache.delete(digest);
        if (hit.expiresAtMs > now()) {
          cache.set(digest, hit);
          rememberRecent(token, hit);
          return hit.result;
        }
      }
      if (!JWS_COMPACT.test(token)) throw invalidToken('token is not a compact JWT');

      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, getKey, {
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
      remember(token, digest, result);
      return result;
    },
    clearCache() {
      clearCaches();
    },
  };
}
