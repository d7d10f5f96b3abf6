// svc-identity's OIDC provider: oidc-provider 9 configured per the spec, plus what the library
// does not do itself (see docs/decisions.md "Built-in identity provider"):
//
//   request ─► front (node:http handler, mounted at <issuer path>)
//               ├─ <path>/interaction/…  ─► sign-in / consent pages (interaction.ts)
//               ├─ key ring due? ─► rebuild the provider with the new key set (keys.ts)
//               ├─ scope param has an unknown scope ─► 400 invalid_request
//               ├─ Basic "<public client>:" (empty secret) ─► header dropped, client_id in the form
//               └─► oidc-provider (current instance; models in one shared MemoryStore)
//                     ├─ grant password (registerGrantType; absent when the flow is off)
//                     └─ grant refresh_token: the library handler wrapped with a reuse window
import { randomBytes } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import type { ServerResponse } from 'node:http';
import Provider, { errors } from 'oidc-provider';
import type {
  ClientLike,
  GrantHandler,
  KoaContextWithOIDC,
  OIDCProviderError,
  ResourceServerInfo,
} from 'oidc-provider';
import internals from 'oidc-provider/lib/helpers/weak_cache.js';
import type { SessionRecord } from '../admin/sessions.ts';
import type { IdentityStore } from '../store/identity-store.ts';
import { MemoryStore } from './adapter.ts';
import {
  ACCESS_TOKEN_TTL,
  API_AUDIENCE,
  API_RESOURCE,
  isApiResource,
  AUDIENCE_SCOPE,
  KNOWN_SCOPES,
  OIDC_SCOPES,
  PASSWORD_GRANT,
  PUBLIC_CLIENT_IDS,
  clientMetadata,
} from './clients.ts';
import { escapeHtml, handleInteraction, page } from './interaction.ts';
import { SIGNING_ALG, SigningKeyRing } from './keys.ts';
import { defaultWebRedirectUris } from './settings.ts';
import { RefreshReuse, REFRESH_REUSE_MS } from './refresh-reuse.ts';
import { Telemetry } from './telemetry.ts';
import type { SecretBox } from '../credentials/master-key.ts';
import { PasswordSignIn, clientAddress, copyClientAddress, verifyClientAddress } from './sign-in.ts';
import type { IdentityState } from './state-file.ts';
import type { SignInResult } from './sign-in.ts';
import { SignInThrottle } from './sign-in-throttle.ts';
import { allowLoopbackRedirectPorts, clientOriginAllowed } from './loopback-redirect.ts';

export const REFRESH_TOKEN_IDLE_SECONDS = 168 * 3600;
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

function resourceServerInfo(): ResourceServerInfo {
  return {
    scope: AUDIENCE_SCOPE,
    audience: API_AUDIENCE,
    accessTokenTTL: ACCESS_TOKEN_TTL,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: SIGNING_ALG } },
  };
}

/** `invalid_grant` with this status and description (the library's constructor takes a detail only). */
function grantError(status: number, description: string): OIDCProviderError {
  const error = new errors.InvalidGrant(description);
  error.error_description = description;
  error.status = status;
  error.statusCode = status;
  return error;
}

function failedSignIn(
  result: Exclude<SignInResult, { ok: true }>,
  ctx: KoaContextWithOIDC,
): OIDCProviderError {
  if (result.reason === 'locked') {
    // Too many failed sign-ins for this user from this address, or from this address: 429 until the wait ends.
    const seconds = Math.ceil(result.retryAfterMs / 1000);
    ctx.set('retry-after', String(seconds));
    return grantError(429, `too many failed sign-ins: try again in ${seconds} s`);
  }
  // Spec ("Password rules" 5, "Errors"): a wrong password — including a leftover hash — is 401.
  return grantError(401, 'invalid username or password');
}

export function createIdentityProvider(options: IdentityProviderOptions): IdentityProvider {
  const now = options.now ?? Date.now;
  const log: LogFn = options.log ?? (() => undefined);
  const state = options.state;
  const keys = options.keys ?? new SigningKeyRing({ now, restore: state?.keys });
  const store = options.store;
  const signIn = new PasswordSignIn(store, options.throttle ?? new SignInThrottle({ now }), {
    secrets: options.secrets,
    now,
  });
  const models = state?.models ?? new MemoryStore();
  const sessions = options.sessions;
  if (sessions !== undefined) {
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
  const reuse = new RefreshReuse(now, REFRESH_REUSE_MS);
  const telemetry = new Telemetry(now);
  const cookieKeys = state?.cookieKeys ?? [randomBytes(32).toString('base64url')];
  const issuerPath = new URL(options.issuer).pathname.replace(/\/+$/, '');
  const interactionBase = `${issuerPath}/interaction`;
  const noRotation = new WeakSet<object>();
  let clients = clientMetadata({
    automationSecret: options.automationSecret,
    passwordFlow: options.passwordFlow,
    webRedirectUris: options.webRedirectUris ?? defaultWebRedirectUris(),
  });

  const findAccount = async (_ctx: unknown, id: string) => {
    const user = store.findById(id);
    if (user === undefined) return undefined;
    return {
      accountId: user.user_id,
      claims: () => ({ sub: user.user_id, email: user.email, preferred_username: user.username }),
    };
  };

  function build(): { provider: Provider; callback: (req: IncomingMessage, res: ServerResponse) => void } {
    const provider = new Provider(options.issuer, {
      adapter: models.adapterFor,
      clients,
      jwks: keys.providerJwks(),
      findAccount,
      cookies: { keys: cookieKeys },
      scopes: [...OIDC_SCOPES],
      claims: { openid: ['sub'], email: ['email'], profile: ['preferred_username'] },
      conformIdTokenClaims: false,
      pkce: { required: () => true },
      clientBasedCORS: (ctx: KoaContextWithOIDC, origin: string, client: ClientLike) =>
        clientOriginAllowed(origin, client, ctx.oidc.route),
      rotateRefreshToken: (ctx: object) => !noRotation.has(ctx),
      issueRefreshToken: async (_ctx: unknown, client: ClientLike) =>
        client.grantTypeAllowed('refresh_token'),
      extraTokenClaims: async (_ctx: unknown, token: { accountId?: string }) => {
        if (token.accountId === undefined) return undefined;
        const user = store.findById(token.accountId);
        return user === undefined ? undefined : { email: user.email, preferred_username: user.username };
      },
      ttl: {
        AccessToken: ACCESS_TOKEN_TTL,
        ClientCredentials: ACCESS_TOKEN_TTL,
        IdToken: ACCESS_TOKEN_TTL,
        AuthorizationCode: 60,
        DeviceCode: 600,
        Interaction: 3600,
        Session: 14 * 24 * 3600,
        // Rotation issues a new refresh token on every use, each valid 168 h: an idle expiry.
        RefreshToken: REFRESH_TOKEN_IDLE_SECONDS,
        // Outlives any chain of refresh tokens in practice; a grant older than this must sign in again.
        Grant: 365 * 24 * 3600,
      },
      features: {
        devInteractions: { enabled: false },
        // Own minimal pages: the library's defaults load web fonts from a third-party origin.
        deviceFlow: {
          enabled: true,
          userCodeInputSource: async (
            ctx: KoaContextWithOIDC,
            form: string,
            _out: unknown,
            error?: unknown,
          ) => {
            const message =
              error === undefined
                ? 'Enter the code displayed on your device.'
                : 'The code is not valid or has expired. Try again.';
            ctx.body = page(
              'Connect a device',
              `<p${error === undefined ? '' : ' class="error" role="alert"'}>${message}</p>${form}
<label>Code<input name="user_code" form="op.deviceInputForm" autocomplete="off" autofocus required></label>
<button type="submit" form="op.deviceInputForm">Continue</button>`,
            );
          },
          userCodeConfirmSource: async (
            ctx: KoaContextWithOIDC,
            form: string,
            client: { clientId: string },
            _device: unknown,
            userCode: string,
          ) => {
            ctx.body = page(
              'Confirm the device',
              `<p>Application <b>${escapeHtml(client.clientId)}</b> on a device showing the code <code>${escapeHtml(userCode)}</code> asks to sign in. Continue only if the code matches.</p>${form}
<button type="submit" form="op.deviceConfirmForm" autofocus>Continue</button>
<button type="submit" form="op.deviceConfirmForm" name="abort" value="yes">Abort</button>`,
            );
          },
          successSource: async (ctx: KoaContextWithOIDC) => {
            ctx.body = page('Device connected', '<p>Sign-in complete. You can return to your device.</p>');
          },
        },
        rpInitiatedLogout: {
          enabled: true,
          logoutSource: async (ctx: KoaContextWithOIDC, form: string) => {
            // The library's form posts to the issuer's own (loopback) origin, which a browser
            // reached through the agent cannot open: post to the same path on the page's origin.
            const sameOrigin = form.replace(/action="https?:\/\/[^/"]+\//, 'action="/');
            ctx.body = page(
              'Sign out',
              `<p>Sign out of svc?</p>${sameOrigin}
<button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Sign out</button>
<button type="submit" form="op.logoutForm">Stay signed in</button>`,
            );
          },
          postLogoutSuccessSource: async (ctx: KoaContextWithOIDC) => {
            ctx.body = page('Signed out', '<p>You are signed out.</p>');
          },
        },
        revocation: { enabled: true },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async (ctx: KoaContextWithOIDC, _client: unknown, oneOf?: string[]) => {
            if (oneOf !== undefined) return oneOf.includes(API_RESOURCE) ? API_RESOURCE : oneOf;
            const scope = ctx.oidc.params?.['scope'];
            return typeof scope === 'string' && scope.split(' ').includes(AUDIENCE_SCOPE)
              ? API_RESOURCE
              : undefined;
          },
          getResourceServerInfo: async (_ctx: unknown, resource: string) => {
            if (!isApiResource(resource)) throw new errors.InvalidRequest('unknown resource indicator');
            return resourceServerInfo();
          },
          useGrantedResource: async () => true,
        },
      },
      interactions: {
        url: (_ctx: unknown, interaction: { uid: string }) => `${interactionBase}/${interaction.uid}`,
      },
      renderError: async (ctx: KoaContextWithOIDC, out: Record<string, string>) => {
        ctx.status = ctx.status >= 400 ? ctx.status : 400;
        ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Error</title></head><body><h1>Sign-in error</h1><p>${escapeHtml(out['error'] ?? 'error')}: ${escapeHtml(out['error_description'] ?? '')}</p></body></html>`;
      },
    });

    // RFC 8252 §7.3 for svc-web too: the agent's real port, SSH tunnels (loopback-redirect.ts).
    allowLoopbackRedirectPorts(provider);

    // Password grant (builtin mode only; absent, hence `unsupported_grant_type`, when turned off).
    if (options.passwordFlow) {
      provider.registerGrantType(
        PASSWORD_GRANT,
        async (ctx) => {
          const params = ctx.oidc.params ?? {};
          const client = ctx.oidc.client as ClientLike;
          const username = params['username'];
          const password = params['password'];
          if (typeof username !== 'string' || typeof password !== 'string')
            throw new errors.InvalidRequest('username and password are required');
          const result = await signIn.verify(username, password, clientAddress(ctx.req));
          if (!result.ok) {
            telemetry.count(result.reason === 'locked' ? 'logins_locked' : 'logins_failed');
            throw failedSignIn(result, ctx);
          }
          const user = result.user;
          if (signIn.mfaRequired(user)) {
            // No second factor travels in this grant: only the browser and device flows ask for it.
            telemetry.count('logins_mfa_required');
            throw grantError(
              400,
              'multi-factor authentication is required for this user: sign in with the browser or device flow',
            );
          }
          signIn.succeeded(result.userKey, clientAddress(ctx.req));
          telemetry.count('logins_succeeded');
          const scopeParam = typeof params['scope'] === 'string' ? params['scope'] : 'openid';
          const requested = new Set(scopeParam.split(' ').filter(Boolean));
          const resource = params['resource'];
          if (resource !== undefined && (typeof resource !== 'string' || !isApiResource(resource)))
            throw new errors.InvalidRequest('unknown resource indicator');
          const forApi = requested.has(AUDIENCE_SCOPE) || resource !== undefined;
          const oidcScope = [...requested]
            .filter((s) => (OIDC_SCOPES as readonly string[]).includes(s))
            .join(' ');

          const grant = new provider.Grant({ accountId: user.user_id, clientId: client.clientId });
          if (oidcScope !== '') grant.addOIDCScope(oidcScope);
          if (forApi) grant.addResourceScope(API_RESOURCE, AUDIENCE_SCOPE);
          const grantId = await grant.save();

          const at = new provider.AccessToken({
            accountId: user.user_id,
            client,
            grantId,
            gty: PASSWORD_GRANT,
            scope: forApi ? AUDIENCE_SCOPE : oidcScope,
          });
          if (forApi) at.resourceServer = new provider.ResourceServer(API_RESOURCE, resourceServerInfo());
          const accessToken = await at.save();
          const body: Record<string, unknown> = {
            access_token: accessToken,
            token_type: 'Bearer',
            expires_in: at.expiration,
            scope: at.scope,
          };
          if (requested.has('offline_access') && client.grantTypeAllowed('refresh_token')) {
            const rt = new provider.RefreshToken({
              accountId: user.user_id,
              client,
              grantId,
              gty: PASSWORD_GRANT,
              scope: [...requested].join(' '),
              iiat: Math.floor(Date.now() / 1000),
              rotations: 0,
              ...(forApi ? { resource: API_RESOURCE } : {}),
            });
            body['refresh_token'] = await rt.save();
          }
          ctx.body = body;
        },
        ['username', 'password', 'scope', 'resource'],
        ['resource'],
      );
    }

    // Refresh: rotation on every use, plus a reuse window (Dex's `reuseInterval`): a rotated token
    // presented again within 5 minutes of its rotation answers with the *current* refresh token and
    // a fresh access token instead of revoking the grant; later reuse revokes it (library default).
    const handlers = internals(provider).grantTypeHandlers;
    const refresh = handlers.get('refresh_token') as GrantHandler;
    handlers.set('refresh_token', async (ctx) => {
      const params = ctx.oidc.params ?? {};
      const presented = params['refresh_token'];
      if (typeof presented === 'string') {
        const current = reuse.current(presented);
        if (current !== undefined) {
          params['refresh_token'] = current;
          noRotation.add(ctx);
          telemetry.count('refresh_reuse_answered');
        }
      }
      await refresh(ctx);
      const rotated = ctx.oidc.entities['RotatedRefreshToken'] as { jti?: string } | undefined;
      const issued = (ctx.body as { refresh_token?: unknown } | undefined)?.refresh_token;
      if (rotated?.jti !== undefined && typeof issued === 'string') reuse.record(rotated.jti, issued);
    });

    provider.on('grant.success', (ctx) => {
      const grantType = (ctx as KoaContextWithOIDC).oidc.params?.['grant_type'];
      telemetry.count(`tokens_issued.${String(grantType)}`);
    });
    provider.on('grant.error', (_ctx, error) => {
      const code = (error as { error?: unknown }).error;
      telemetry.count(`token_errors.${typeof code === 'string' ? code : 'unknown'}`);
    });
    provider.on('grant.revoked', () => telemetry.count('grants_revoked'));
    provider.on('server_error', (_ctx, error) => {
      telemetry.count('server_errors');
      log('error', 'identity provider error', {
        error: error instanceof Error ? error.message : String(error),
      });
    });
    return { provider, callback: provider.callback() };
  }

  models.replayGrants();
  let current = build();
  let builtVersion = keys.version;
  telemetry.setGauge('active_kid', keys.activeKid);
  const saveKeys = (): void =>
    void state
      ?.saveKeys(keys.snapshot())
      .catch((error: unknown) =>
        log('error', 'cannot save the signing keys', { error: (error as Error).message }),
      );
  saveKeys();

  function refreshKeys(): void {
    keys.update();
    if (keys.version === builtVersion) return;
    current = build();
    builtVersion = keys.version;
    saveKeys();
    telemetry.setGauge('active_kid', keys.activeKid);
    telemetry.setGauge('key_rotations', keys.rotations);
    log('info', 'signing keys changed', {
      active_kid: keys.activeKid,
      published: keys.publicJwks().keys.length,
    });
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    telemetry.count('requests');
    verifyClientAddress(req, options.relayKey);
    const url = new URL(req.url ?? '/', 'http://issuer.invalid');
    const path = url.pathname;
    if (path !== issuerPath && !path.startsWith(`${issuerPath}/`)) {
      oauthError(res, 404, 'not_found', 'no such endpoint');
      return;
    }
    refreshKeys();
    const { provider, callback } = current;
    if (path.startsWith(`${interactionBase}/`)) {
      await handleInteraction(
        provider,
        signIn,
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

  return {
    issuer: options.issuer,
    signIn,
    keys,
    telemetry,
    refreshKeys,
    setAutomationSecret(secret) {
      clients = clientMetadata({
        automationSecret: secret,
        passwordFlow: options.passwordFlow,
        webRedirectUris: options.webRedirectUris ?? defaultWebRedirectUris(),
      });
      current = build();
    },
    handle(req, res) {
      dispatch(req, res).catch((error: unknown) => {
        telemetry.count('server_errors');
        log('error', 'request failed', { error: error instanceof Error ? error.message : String(error) });
        if (!res.headersSent) oauthError(res, 500, 'server_error', 'internal error');
        else res.destroy();
      });
    },
  };
}
