// The signing keys of an OpenID issuer, for token-verifier.ts: discovery document → `jwks_uri` →
// JWKS, loaded lazily (one shared in-flight load, retried on the next request after a failure), and
// refetched on an unknown `kid` (shared by concurrent callers, at most one per cooldown).
import http from 'node:http';
import https from 'node:https';
import { createLocalJWKSet } from 'jose';
import type { JSONWebKeySet, JWTVerifyGetKey } from 'jose';
import { SvcError } from '@svc/protocol';

export interface FetchResponseLike {
  readonly ok: boolean;
  readonly status: number;
  json(): Promise<unknown>;
}
/** The subset of `fetch` the verifier uses; `globalThis.fetch` satisfies it. */
export type FetchLike = (url: string, init: { signal: AbortSignal }) => Promise<FetchResponseLike>;

const MAX_DOCUMENT_BYTES = 1024 * 1024;

function unavailable(message: string, cause?: unknown): SvcError {
  return new SvcError(
    'unavailable',
    `token issuer unavailable: ${message}`,
    cause === undefined ? undefined : { cause },
  );
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

export interface IssuerKeysOptions {
  /** Issuer identifier; must equal the discovery document's `issuer` exactly. */
  readonly issuer: string;
  readonly fetch: FetchLike;
  /** Timeout of one discovery or JWKS request. */
  readonly requestTimeoutMs: number;
  /** After a failed load, requests fail fast with the same error this long. */
  readonly loadRetryMs: number;
  /** Minimum time between unknown-kid JWKS refetches. */
  readonly refetchCooldownMs: number;
  readonly now: () => number;
  /** Runs when a refetched JWKS lacks a key the previous one had (that key is no longer trusted). */
  readonly onKeyWithdrawn: () => void;
}

export class IssuerKeys {
  readonly #options: IssuerKeysOptions;
  readonly #discoveryUrl: string;
  #jwksUri: string | undefined;
  #keySet: KeySet | undefined;
  #loading: Promise<KeySet> | undefined;
  #refetching: Promise<KeySet> | undefined;
  #lastRefetchAt = Number.NEGATIVE_INFINITY;
  #lastLoadFailure: { at: number; error: SvcError } | undefined;

  constructor(options: IssuerKeysOptions) {
    this.#options = options;
    this.#discoveryUrl = `${options.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  }

  /** jose's key lookup: an unknown `kid` triggers one refetch (unless the cooldown runs). */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    let keys = await this.#currentKeys();
    if (header.kid !== undefined && !keys.kids.has(header.kid)) {
      keys = (await this.#refetchKeys()) ?? keys;
    }
    return keys.getKey(header, token);
  };

  async #getJson(url: string, what: string): Promise<unknown> {
    let response: FetchResponseLike;
    try {
      response = await this.#options.fetch(url, {
        signal: AbortSignal.timeout(this.#options.requestTimeoutMs),
      });
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

  async #fetchKeySet(uri: string): Promise<KeySet> {
    const body = await this.#getJson(uri, 'JWKS');
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

  async #load(): Promise<KeySet> {
    const issuer = this.#options.issuer;
    if (this.#jwksUri === undefined) {
      const document = await this.#getJson(this.#discoveryUrl, 'discovery');
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
      this.#jwksUri = uri;
    }
    this.#keySet = await this.#fetchKeySet(this.#jwksUri);
    return this.#keySet;
  }

  /**
   * Keys, loading them on first use (one shared in-flight load). A failed load is retried by the
   * first request after `loadRetryMs` (the issuer may start after the daemon); until then requests
   * fail fast with the same error instead of each hitting a down or misconfigured issuer.
   */
  #currentKeys(): Promise<KeySet> {
    if (this.#keySet !== undefined) return Promise.resolve(this.#keySet);
    const { now, loadRetryMs } = this.#options;
    const failure = this.#lastLoadFailure;
    if (this.#loading === undefined && failure !== undefined && now() - failure.at < loadRetryMs) {
      return Promise.reject(failure.error);
    }
    this.#loading ??= this.#load()
      .then(
        (keys) => {
          this.#lastLoadFailure = undefined;
          return keys;
        },
        (error: unknown) => {
          const loadError =
            error instanceof SvcError ? error : unavailable('keys could not be loaded', error);
          this.#lastLoadFailure = { at: now(), error: loadError };
          throw loadError;
        },
      )
      .finally(() => {
        this.#loading = undefined;
      });
    return this.#loading;
  }

  /** A JWKS refetch for an unknown kid, or undefined while the cooldown runs. */
  #refetchKeys(): Promise<KeySet> | undefined {
    if (this.#refetching !== undefined) return this.#refetching;
    const { now, refetchCooldownMs } = this.#options;
    if (this.#jwksUri === undefined || now() - this.#lastRefetchAt < refetchCooldownMs) return undefined;
    this.#lastRefetchAt = now();
    const uri = this.#jwksUri;
    this.#refetching = this.#fetchKeySet(uri)
      .then((fresh) => {
        // A key that left the JWKS is no longer trusted: re-verify every cached token.
        if ([...(this.#keySet?.kids ?? [])].some((kid) => !fresh.kids.has(kid)))
          this.#options.onKeyWithdrawn();
        this.#keySet = fresh;
        return fresh;
      })
      .finally(() => {
        this.#refetching = undefined;
      });
    return this.#refetching;
  }
}
