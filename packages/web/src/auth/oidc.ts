// The OAuth 2.0 / OIDC calls of the browser client `svc-web`: discovery, authorization code + PKCE
// (S256), refresh, revocation, end session. Stateless functions over fetch; sign-in.ts keeps the state.
// Through svc-agent the built-in issuer is reached at `{origin}/auth/...` (the agent forwards it
// unchanged), so discovery there must name exactly the issuer svcd publishes, and the endpoints under
// that issuer are rebased onto the page's origin (`routedMetadata`, the CLI does the same).

export const CLIENT_ID = 'svc-web';
/** `offline_access` for a refresh token (silent renewal); the audience scope puts svc-api in `aud`. */
export const SCOPE = 'openid offline_access audience:server:client_id:svc-api';

export interface AuthConfig {
  mode: string;
  issuer: string;
  clients?: { web?: string };
  token_endpoint?: string;
}

export interface ProviderMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  revocation_endpoint?: string;
  end_session_endpoint?: string;
}

export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  idToken: string | undefined;
  /** Epoch milliseconds. */
  expiresAt: number;
}

export class AuthError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * The provider metadata with every endpoint under `issuer` moved under `route` (`{origin}/auth`).
 * Throws when the document names another issuer: no other provider may be slipped in.
 */
export function routedMetadata(metadata: Record<string, unknown>, issuer: string, route: string): ProviderMetadata {
  if (metadata['issuer'] !== issuer)
    throw new AuthError('issuer_mismatch', `the sign-in route serves ${String(metadata['issuer'])}, not ${issuer}`);
  const routed: Record<string, unknown> = { ...metadata };
  for (const [key, value] of Object.entries(metadata))
    if (key !== 'issuer' && typeof value === 'string' && value.startsWith(`${issuer}/`))
      routed[key] = route + value.slice(issuer.length);
  return checkedMetadata(routed);
}

function checkedMetadata(doc: Record<string, unknown>): ProviderMetadata {
  for (const key of ['issuer', 'authorization_endpoint', 'token_endpoint'])
    if (typeof doc[key] !== 'string') throw new AuthError('bad_metadata', `the provider metadata has no ${key}`);
  return doc as unknown as ProviderMetadata;
}

async function json(response: Response, what: string): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new AuthError('bad_response', `${what}: HTTP ${response.status}, not JSON`);
  }
  if (typeof body !== 'object' || body === null) throw new AuthError('bad_response', `${what}: not an object`);
  const record = body as Record<string, unknown>;
  if (!response.ok) {
    const code = typeof record['error'] === 'string' ? record['error'] : `http_${response.status}`;
    const text = typeof record['error_description'] === 'string' ? record['error_description'] : code;
    throw new AuthError(code, `${what}: ${text}`);
  }
  return record;
}

/**
 * svcd's `/svc/auth/config`, then the provider metadata: through `{origin}/auth` (builtin mode behind
 * the agent), else from the issuer itself (external mode; the provider must allow this origin, CORS).
 */
export async function discover(origin: string): Promise<{ config: AuthConfig; provider: ProviderMetadata }> {
  const config = (await json(await fetch(`${origin}/svc/auth/config`), 'auth config')) as unknown as AuthConfig;
  if (typeof config.issuer !== 'string') throw new AuthError('bad_metadata', 'svcd publishes no issuer');
  const routed = await fetch(`${origin}/auth/.well-known/openid-configuration`).catch(() => undefined);
  if (routed?.ok === true)
    return { config, provider: routedMetadata(await json(routed, 'discovery'), config.issuer, `${origin}/auth`) };
  const direct = await json(
    await fetch(`${config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`),
    'discovery',
  );
  if (direct['issuer'] !== config.issuer)
    throw new AuthError('issuer_mismatch', `discovery names ${String(direct['issuer'])}, not ${config.issuer}`);
  return { config, provider: checkedMetadata(direct) };
}

function base64url(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A random URL-safe string of `bytes` random bytes (verifier, state, nonce). */
export function randomToken(bytes = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** RFC 7636 S256 code challenge of `verifier`. */
export async function codeChallenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

export function authorizationUrl(
  provider: ProviderMetadata,
  params: { clientId: string; redirectUri: string; state: string; challenge: string; prompt?: string },
): string {
  const url = new URL(provider.authorization_endpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', params.clientId);
  url.searchParams.set('redirect_uri', params.redirectUri);
  url.searchParams.set('scope', SCOPE);
  url.searchParams.set('state', params.state);
  url.searchParams.set('code_challenge', params.challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  // The code comes back in the fragment, which the browser never sends to a server (no log, no
  // Referer), and the page reads and removes at once.
  url.searchParams.set('response_mode', 'fragment');
  if (params.prompt !== undefined) url.searchParams.set('prompt', params.prompt);
  return url.toString();
}

/** A token endpoint answer as a TokenSet; `now` in epoch ms. */
export function tokenSetOf(body: Record<string, unknown>, now: number, previous?: TokenSet): TokenSet {
  const accessToken = body['access_token'];
  if (typeof accessToken !== 'string' || accessToken === '')
    throw new AuthError('bad_response', 'the token endpoint returned no access token');
  const expiresIn = typeof body['expires_in'] === 'number' && body['expires_in'] > 0 ? body['expires_in'] : 300;
  return {
    accessToken,
    refreshToken: typeof body['refresh_token'] === 'string' ? body['refresh_token'] : previous?.refreshToken,
    idToken: typeof body['id_token'] === 'string' ? body['id_token'] : previous?.idToken,
    expiresAt: now + expiresIn * 1000,
  };
}

async function tokenRequest(provider: ProviderMetadata, form: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(provider.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
    credentials: 'omit',
  });
  return json(response, 'token endpoint');
}

export async function exchangeCode(
  provider: ProviderMetadata,
  params: { clientId: string; redirectUri: string; code: string; verifier: string },
  now: () => number,
): Promise<TokenSet> {
  const body = await tokenRequest(provider, {
    grant_type: 'authorization_code',
    client_id: params.clientId,
    redirect_uri: params.redirectUri,
    code: params.code,
    code_verifier: params.verifier,
  });
  return tokenSetOf(body, now());
}

export async function refreshTokens(
  provider: ProviderMetadata,
  clientId: string,
  tokens: TokenSet,
  now: () => number,
): Promise<TokenSet> {
  if (tokens.refreshToken === undefined) throw new AuthError('no_refresh_token', 'no refresh token');
  const body = await tokenRequest(provider, {
    grant_type: 'refresh_token',
    client_id: clientId,
    refresh_token: tokens.refreshToken,
  });
  return tokenSetOf(body, now(), tokens);
}

/** Revokes the refresh token (the grant with it); failures are ignored: sign-out goes on. */
export async function revoke(provider: ProviderMetadata, clientId: string, token: string): Promise<void> {
  if (provider.revocation_endpoint === undefined) return;
  await fetch(provider.revocation_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, token_type_hint: 'refresh_token', client_id: clientId }),
    credentials: 'omit',
  }).catch(() => undefined);
}

export function endSessionUrl(
  provider: ProviderMetadata,
  params: { clientId: string; postLogoutRedirectUri: string },
): string | undefined {
  if (provider.end_session_endpoint === undefined) return undefined;
  // No id_token_hint: a token never goes into a URL (it would reach logs and history); client_id
  // lets the provider check post_logout_redirect_uri instead, and it asks the user to confirm.
  const url = new URL(provider.end_session_endpoint);
  url.searchParams.set('client_id', params.clientId);
  url.searchParams.set('post_logout_redirect_uri', params.postLogoutRedirectUri);
  return url.toString();
}

/** The authorization answer in a return URL: from the fragment (response_mode=fragment) or the query. */
export function authorizationAnswer(search: string, hash: string): URLSearchParams | undefined {
  for (const part of [hash.replace(/^#/, ''), search.replace(/^\?/, '')]) {
    const params = new URLSearchParams(part);
    if (params.has('state') && (params.has('code') || params.has('error'))) return params;
  }
  return undefined;
}

/** When to renew: 60 s before expiry, or at 3/4 of a short lifetime; never in the past. */
export function renewalDelay(tokens: Pick<TokenSet, 'expiresAt'>, issuedAt: number, now: number): number {
  const lifetime = tokens.expiresAt - issuedAt;
  const margin = Math.min(60_000, lifetime / 4);
  return Math.max(0, tokens.expiresAt - margin - now);
}
