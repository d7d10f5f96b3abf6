// svc-identity's OIDC provider: oidc-provider 9 configured per the spec, plus what the library
// does not do itself (see docs/decisions.md "Built-in identity provider"):
//
//   request ─► front (node:http handler, mounted at <issuer path>)
//               ├─ <path>/interaction/…  ─► sign-in / consent pages (interaction.ts)
//               ├─ key ring due? ─► rebuild the provider with the new key set (keys.ts)
//               ├─ scope param has an unknown scope ─► 400 invalid_request
//               ├─ Basic "<public client>:" (empty secret) ─► header dropped, client_id in the form
//               └─► oidc-provider (current instance; models in one shared MemoryStore)
//                     ├─ grant password (registerGrantType; absent when the flow is off; grants.ts)
//                     └─ grant refresh_token: the library handler wrapped with a reuse window (grants.ts)
//               configuration, lifetimes, features and their pages: provider-configuration.ts
import { randomBytes } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import type { ServerResponse } from 'node:http';
import Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { SessionRecord } from '../admin/sessions.ts';
import type { IdentityStore } from '../store/identity-store.ts';
import { MemoryStore } from './adapter.ts';
import { KNOWN_SCOPES, PUBLIC_CLIENT_IDS, clientMetadata } from './clients.ts';
import { addRefreshReuse, registerPasswordGrant } from './grants.ts';
import { handleInteraction } from './interaction.ts';
import { SigningKeyRing } from './keys.ts';
import { providerConfiguration } from './provider-configuration.ts';
import { defaultWebRedirectUris } from './settings.ts';
import { RefreshReuse, REFRESH_REUSE_MS } from './refresh-reuse.ts';
import { Telemetry } from './telemetry.ts';
import type { SecretBox } from '../credentials/master-key.ts';
import { PasswordSignIn, copyClientAddress, verifyClientAddress } from './sign-in.ts';
import type { IdentityState } from './state-file.ts';
import { SignInThrottle } from './sign-in-throttle.ts';
import { allowLoopbackRedirectPorts } from './loopback-redirect.ts';

export { REFRESH_TOKEN_IDLE_SECONDS } from './provider-configuration.ts';

/** Bound of a form body read by the front (oidc-provider's own limit is 56 KiB). */
const MAX_BODY_BYTES = 56 * 1024;
/** Endpoints (relative to the issuer) whose `scope` parameter is checked. */
const SCOPED_ENDPOINTS = new Set(['/auth', '/token', '/device/auth', '/request']);

export type LogFn = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface IdentityProviderOptions {
  /** e.g. `http://127.0.0.1:6062/auth`. */
  issuer: string;
  store: IdentityStore;
  /** Secret of the confidential client `svc-automation` (from work/auth/secrets/automation-client). */
  automationSecret: string;
  passwordFlow: boolean;
  webRedirectUris?: readonly string[] | undefined;
  /** Clock (epoch ms) of key rotation and the refresh reuse window; tests inject one. */
  now?: (() => number) | undefined;
  /** Key ring; default RS256 keys rotating every 6 hours on `now`. */
  keys?: SigningKeyRing | undefined;
  log?: LogFn | undefined;
  /** Where grants are listed as sessions for the admin API (revoking one ends the grant). */
  sessions?: SessionSink | undefined;
  /** Decrypts users' TOTP secrets (secret-master-key); without it no MFA user can sign in. */
  secrets?: SecretBox | undefined;
  /** Persisted state (keys, grants, tokens, device codes, sessions); default: in memory only. */
  state?: IdentityState | undefined;
  /** Password-guessing limits; default: the documented limits on `now`. */
  throttle?: SignInThrottle | undefined;
  /**
   * The issuer relay key (work/auth/secrets/issuer-relay-key): X-Forwarded-For is believed only on
   * requests that carry it (svc-agent's); without it, never.
   */
  relayKey?: string | undefined;
}

/** The part of the admin API's session registry the provider feeds. */
export interface SessionSink {
  add(record: SessionRecord, end: () => void): void;
  remove(id: string): boolean;
}

export interface IdentityProvider {
  readonly issuer: string;
  readonly keys: SigningKeyRing;
  readonly telemetry: Telemetry;
  /** The node:http request handler (all paths; answers 404 outside the issuer path). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Applies a due key rotation now (also done on each request and by the server's timer). */
  refreshKeys(): void;
  /** A regenerated `svc-automation` secret (admin API): applies to the next request. */
  setAutomationSecret(secret: string): void;
  /** The password check and its throttle (the admin API clears lockouts through it). */
  readonly signIn: PasswordSignIn;
}

function oauthError(res: ServerResponse, status: number, error: string, description: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ error, error_description: description }));
}

/** The first unknown scope of a space-separated list, if any. */
export function unknownScope(scope: string | null | undefined): string | undefined {
  if (scope === null || scope === undefined) return undefined;
  return scope.split(' ').find((s) => s !== '' && !KNOWN_SCOPES.has(s));
}

/** A copy of `req` whose body is `body` (the original stream has been read). */
function withBody(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method ?? 'POST';
  copy.url = req.url ?? '/';
  copy.httpVersion = req.httpVersion;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.headers = { ...req.headers, 'content-length': String(body.length) };
  copyClientAddress(req, copy);
  copy.push(body);
  copy.push(null);
  // A message not marked complete destroys its socket when the stream is destroyed after reading.
  copy.complete = true;
  return copy;
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** `client id` of an `Authorization: Basic` header whose secret is empty, else undefined. */
function basicWithEmptySecret(header: string | undefined): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/]+={0,2})$/i.exec(header ?? '');
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon !== decoded.length - 1) return undefined;
  try {
    return decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, '%20'));
  } catch {
    return undefined;
  }
}

/** Grants listed as sessions for the admin API: revoking one there ends the grant. */
function observeGrants(models: MemoryStore, sessions: SessionSink): void {
  models.observer = {
    saved(grantId, payload, expiresAt) {
      const accountId = typeof payload['accountId'] === 'string' ? payload['accountId'] : undefined;
      const clientId = typeof payload['clientId'] === 'string' ? payload['clientId'] : undefined;
      const iat = typeof payload['iat'] === 'number' ? payload['iat'] * 1000 : Date.now();
      sessions.add(
        {
          id: grantId,
          subject: accountId ?? `client:${clientId ?? 'unknown'}`,
          client_id: clientId,
          kind: 'grant',
          created_at: new Date(iat).toISOString(),
          expires_at: expiresAt === undefined ? undefined : new Date(expiresAt).toISOString(),
        },
        () => models.revokeGrant(grantId),
      );
    },
    removed(grantId) {
      sessions.remove(grantId);
    },
  };
}

export function createIdentityProvider(options: IdentityProviderOptions): IdentityProvider {
  return new OidcIdentityProvider(options);
}

class OidcIdentityProvider implements IdentityProvider {
  readonly issuer: string;
  readonly keys: SigningKeyRing;
  readonly telemetry: Telemetry;
  readonly signIn: PasswordSignIn;
  readonly #issuerPath: string;
  readonly #interactionBase: string;
  readonly #options: IdentityProviderOptions;
  readonly #log: LogFn;
  readonly #state: IdentityState | undefined;
  readonly #models: MemoryStore;
  readonly #reuse: RefreshReuse;
  readonly #cookieKeys: string[];
  /** Requests whose refresh token is not rotated (answered within the reuse window). */
  readonly #noRotation = new WeakSet<object>();
  #clients: Record<string, unknown>[];
  /** The provider instance built for the key set of `#builtVersion` (rebuilt when it changes). */
  #current: { provider: Provider; callback: (req: IncomingMessage, res: ServerResponse) => void };
  #builtVersion: number;

  constructor(options: IdentityProviderOptions) {
    this.#options = options;
    this.issuer = options.issuer;
    const now = options.now ?? Date.now;
    this.#log = options.log ?? (() => undefined);
    const state = options.state;
    this.#state = state;
    this.keys = options.keys ?? new SigningKeyRing({ now, restore: state?.keys });
    this.signIn = new PasswordSignIn(options.store, options.throttle ?? new SignInThrottle({ now }), {
      secrets: options.secrets,
      now,
    });
    this.#models = state?.models ?? new MemoryStore();
    if (options.sessions !== undefined) observeGrants(this.#models, options.sessions);
    this.#reuse = new RefreshReuse(now, REFRESH_REUSE_MS);
    this.telemetry = new Telemetry(now);
    this.#cookieKeys = state?.cookieKeys ?? [randomBytes(32).toString('base64url')];
    this.#issuerPath = new URL(options.issuer).pathname.replace(/\/+$/, '');
    this.#interactionBase = `${this.#issuerPath}/interaction`;
    this.#clients = clientMetadata({
      automationSecret: options.automationSecret,
      passwordFlow: options.passwordFlow,
      webRedirectUris: options.webRedirectUris ?? defaultWebRedirectUris(),
    });

    this.#models.replayGrants();
    this.#current = this.#build();
    this.#builtVersion = this.keys.version;
    this.telemetry.setGauge('active_kid', this.keys.activeKid);
    this.#saveKeys();
  }

  refreshKeys(): void {
    const keys = this.keys;
    keys.update();
    if (keys.version === this.#builtVersion) return;
    this.#current = this.#build();
    this.#builtVersion = keys.version;
    this.#saveKeys();
    this.telemetry.setGauge('active_kid', keys.activeKid);
    this.telemetry.setGauge('key_rotations', keys.rotations);
    this.#log('info', 'signing keys changed', {
      active_kid: keys.activeKid,
      published: keys.publicJwks().keys.length,
    });
  }

  setAutomationSecret(secret: string): void {
    this.#clients = clientMetadata({
      automationSecret: secret,
      passwordFlow: this.#options.passwordFlow,
      webRedirectUris: this.#options.webRedirectUris ?? defaultWebRedirectUris(),
    });
    this.#current = this.#build();
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    this.#dispatch(req, res).catch((error: unknown) => {
      this.telemetry.count('server_errors');
      this.#log('error', 'request failed', { error: error instanceof Error ? error.message : String(error) });
      if (!res.headersSent) oauthError(res, 500, 'server_error', 'internal error');
      else res.destroy();
    });
  }

  #saveKeys(): void {
    void this.#state
      ?.saveKeys(this.keys.snapshot())
      .catch((error: unknown) =>
        this.#log('error', 'cannot save the signing keys', { error: (error as Error).message }),
      );
  }

  #build(): { provider: Provider; callback: (req: IncomingMessage, res: ServerResponse) => void } {
    const provider = new Provider(
      this.issuer,
      providerConfiguration({
        models: this.#models,
        clients: this.#clients,
        keys: this.keys,
        store: this.#options.store,
        cookieKeys: this.#cookieKeys,
        noRotation: this.#noRotation,
        interactionBase: this.#interactionBase,
      }),
    );

    // RFC 8252 §7.3 for svc-web too: the agent's real port, SSH tunnels (loopback-redirect.ts).
    allowLoopbackRedirectPorts(provider);
    if (this.#options.passwordFlow) registerPasswordGrant(provider, this.signIn, this.telemetry);
    addRefreshReuse(provider, this.#reuse, this.#noRotation, this.telemetry);

    provider.on('grant.success', (ctx) => {
      const grantType = (ctx as KoaContextWithOIDC).oidc.params?.['grant_type'];
      this.telemetry.count(`tokens_issued.${String(grantType)}`);
    });
    provider.on('grant.error', (_ctx, error) => {
      const code = (error as { error?: unknown }).error;
      this.telemetry.count(`token_errors.${typeof code === 'string' ? code : 'unknown'}`);
    });
    provider.on('grant.revoked', () => this.telemetry.count('grants_revoked'));
    provider.on('server_error', (_ctx, error) => {
      this.telemetry.count('server_errors');
      this.#log('error', 'identity provider error', {
        error: error instanceof Error ? error.message : String(error),
      });
    });
    return { provider, callback: provider.callback() };
  }

  async #dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const issuerPath = this.#issuerPath;
    const interactionBase = this.#interactionBase;
    const telemetry = this.telemetry;
    telemetry.count('requests');
    verifyClientAddress(req, this.#options.relayKey);
    const url = new URL(req.url ?? '/', 'http://issuer.invalid');
    const path = url.pathname;
    if (path !== issuerPath && !path.startsWith(`${issuerPath}/`)) {
      oauthError(res, 404, 'not_found', 'no such endpoint');
      return;
    }
    this.refreshKeys();
    const { provider, callback } = this.#current;
    if (path.startsWith(`${interactionBase}/`)) {
      await handleInteraction(
        provider,
        this.signIn,
        interactionBase,
        path.slice(interactionBase.length),
        req,
        res,
        {
          loginSucceeded: () => telemetry.count('logins_succeeded'),
          loginFailed: (locked) => telemetry.count(locked ? 'logins_locked' : 'logins_failed'),
        },
      );
      return;
    }
    const inner = path.slice(issuerPath.length) || '/';
    let target = req;
    if (req.method === 'GET' && SCOPED_ENDPOINTS.has(inner)) {
      const unknown = unknownScope(url.searchParams.get('scope'));
      if (unknown !== undefined) {
        telemetry.count('unknown_scope_rejected');
        oauthError(res, 400, 'invalid_request', `unrecognized scope: ${JSON.stringify(unknown)}`);
        return;
      }
    }
    if (
      req.method === 'POST' &&
      /^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')
    ) {
      const body = await readBody(req);
      if (body === undefined) {
        oauthError(res, 413, 'invalid_request', 'request body too large');
        return;
      }
      const form = new URLSearchParams(body.toString('utf8'));
      if (SCOPED_ENDPOINTS.has(inner)) {
        const unknown = form
          .getAll('scope')
          .map(unknownScope)
          .find((s) => s !== undefined);
        if (unknown !== undefined) {
          telemetry.count('unknown_scope_rejected');
          oauthError(res, 400, 'invalid_request', `unrecognized scope: ${JSON.stringify(unknown)}`);
          return;
        }
      }
      let rewritten: Buffer = body;
      // Spec: public clients authenticate with HTTP Basic, their client id and an EMPTY secret; the
      // library refuses an empty Basic secret, so such a header becomes `client_id` in the form.
      const basicClient = basicWithEmptySecret(req.headers.authorization);
      if (basicClient !== undefined && PUBLIC_CLIENT_IDS.has(basicClient)) {
        const named = form.get('client_id');
        if (named !== null && named !== basicClient) {
          oauthError(res, 400, 'invalid_request', 'client_id mismatch');
          return;
        }
        form.set('client_id', basicClient);
        rewritten = Buffer.from(form.toString(), 'utf8');
        delete req.headers.authorization;
      }
      target = withBody(req, rewritten);
    }
    // The provider routes relative to the issuer path; `originalUrl` gives it the mount path back.
    (target as IncomingMessage & { originalUrl?: string }).originalUrl = req.url ?? '/';
    target.url = `${inner}${url.search}`;
    callback(target, res);
  }
}
