// Sign-in (spec "Grants and sign-in" 3): browser authorization code + PKCE with a loopback redirect
// (RFC 8252) on a desktop, device authorization on a headless machine, and the password grant only
// when the caller asks for it and the server advertises `password`. openid-client 6 does the OAuth;
// the issuer comes from the server's public `/svc/auth/config`. Through svc-agent (`https://host:6060`)
// the issuer's endpoints are reached at `{server}/auth/...` (spec "Client token contract" 4: a separate
// access route to the same authentication service), while the issuer that tokens are validated
// against stays the one discovery publishes.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { CliError, EXIT } from './errors.ts';
import type { Api } from './api.ts';
import { jwtExpiry, readSession, writeSession, type Session } from './session.ts';
import type { Ui } from './ui.ts';

export const CLIENT_ID = 'svc-cli';
export const SCOPE = 'openid audience:server:client_id:svc-api';
/** Refresh this long before the access token expires. */
const REFRESH_MARGIN_S = 30;

export interface AuthConfig {
  mode: string;
  issuer: string;
  audience: string;
  flows: string[];
  token_endpoint?: string;
}

export async function authConfig(api: Api): Promise<AuthConfig> {
  const reply = await api.call('GET', '/svc/auth/config', { anonymous: true });
  return reply.json<AuthConfig>();
}

async function discover(issuer: string): Promise<oidc.Configuration> {
  const url = new URL(issuer);
  try {
    return await oidc.discovery(url, CLIENT_ID, undefined, oidc.None(), {
      // The built-in issuer is plain http on loopback (CONTRACT §1, port 6062).
      ...(url.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
    });
  } catch (error) {
    throw new CliError(
      `cannot reach the identity provider ${issuer}: ${(error as Error).message}`,
      EXIT.unreachable,
      'the built-in issuer listens on the server host only; sign in there or use a token (SVC_BEARER_TOKEN)',
    );
  }
}

/**
 * The OAuth configuration for `issuer`, preferring the server's route to it: svc-agent forwards
 * `/auth/*` unchanged to the built-in issuer, so `{server}/auth/.well-known/openid-configuration` is
 * the issuer's own document. It must name exactly the published issuer (no other provider can be
 * slipped in); its endpoints under the issuer are then called through the server. A server without
 * that route (the daemon's own port, or an agent in external mode: 404) means the issuer directly.
 */
async function oauthFor(api: Api | undefined, issuer: string): Promise<oidc.Configuration> {
  if (api === undefined) return discover(issuer);
  let reply;
  try {
    reply = await api.call('GET', '/auth/.well-known/openid-configuration', {
      anonymous: true,
      accept: [404, 405, 502, 503],
    });
  } catch {
    return discover(issuer);
  }
  if (reply.status !== 200) return discover(issuer);
  let metadata: oidc.ServerMetadata;
  try {
    metadata = reply.json<oidc.ServerMetadata>();
  } catch {
    return discover(issuer);
  }
  if (metadata.issuer !== issuer)
    throw new CliError(
      `${api.server}/auth serves the identity provider ${String(metadata.issuer)}, but the server publishes ${issuer}`,
      EXIT.auth,
    );
  const route = `${api.server}/auth`;
  const routed: Record<string, unknown> = { ...metadata };
  for (const [key, value] of Object.entries(metadata))
    if (key !== 'issuer' && typeof value === 'string' && value.startsWith(`${issuer}/`))
      routed[key] = route + value.slice(issuer.length);
  const configuration = new oidc.Configuration(
    routed as oidc.ServerMetadata,
    CLIENT_ID,
    undefined,
    oidc.None(),
  );
  configuration[oidc.customFetch] = httpsFetch(api.cas);
  return configuration;
}

/** fetch for openid-client over node:https with the CLI's trusted CAs (`--ca`, NODE_EXTRA_CA_CERTS). */
function httpsFetch(cas: string[]): oidc.CustomFetch {
  return async (url, options) => {
    const headers: Record<string, string> = {};
    new Headers(options.headers).forEach((value, key) => (headers[key] = value));
    // Whatever BodyInit openid-client passes (URLSearchParams for token requests), as bytes.
    const body =
      options.body === undefined || options.body === null
        ? undefined
        : Buffer.from(await new Response(options.body).arrayBuffer());
    if (options.body instanceof URLSearchParams)
      headers['content-type'] ??= 'application/x-www-form-urlencoded;charset=UTF-8';
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        url,
        { method: options.method, headers, ca: cas, ...(options.signal ? { signal: options.signal } : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.once('error', reject);
          res.once('end', () => {
            const responseHeaders = new Headers();
            for (const [key, value] of Object.entries(res.headers))
              if (value !== undefined)
                responseHeaders.set(key, Array.isArray(value) ? value.join(', ') : value);
            resolve(
              new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: responseHeaders }),
            );
          });
        },
      );
      req.once('error', reject);
      req.end(body);
    });
  };
}

function oauthFailure(error: unknown, what: string): CliError {
  if (error instanceof CliError) return error;
  const e = error as { error?: string; error_description?: string; message?: string };
  const detail = e.error_description ?? e.message ?? String(error);
  if (e.error === 'invalid_grant')
    return new CliError(`${what} refused: ${detail}`, EXIT.auth, 'check the username and password');
  if (e.error === 'access_denied' || e.error === 'expired_token')
    return new CliError(`${what} ended: ${detail}`, EXIT.auth, 'run `svc login` again');
  return new CliError(`${what} failed: ${e.error !== undefined ? `${e.error}: ` : ''}${detail}`, EXIT.auth);
}

function sessionOf(
  server: string,
  issuer: string,
  grant: string,
  tokens: oidc.TokenEndpointResponse,
  previousRefresh?: string,
): Session {
  const expiresIn = tokens.expires_in ?? 0;
  const exp = jwtExpiry(tokens.access_token) ?? Math.floor(Date.now() / 1000) + expiresIn;
  return {
    version: 1,
    server,
    issuer,
    client_id: CLIENT_ID,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token ?? previousRefresh,
    expires_at: exp,
    grant,
  };
}

export type LoginMethod = 'browser' | 'device' | 'password';

export function isDesktop(): boolean {
  if (process.platform === 'darwin' || process.platform === 'win32') return true;
  return Boolean(process.env['DISPLAY']) || Boolean(process.env['WAYLAND_DISPLAY']);
}

export interface LoginOptions {
  method: LoginMethod;
  username?: string | undefined;
  /** Reads the password (stdin or a TTY prompt); never from argv. */
  password?: (() => Promise<string>) | undefined;
  /** Print the browser URL but do not start a browser. */
  openBrowser: boolean;
  /** Ends a wait for the browser or the device code (SIGINT/SIGTERM) with the signal's reason. */
  signal?: AbortSignal | undefined;
}

export async function login(api: Api, ui: Ui, options: LoginOptions): Promise<Session> {
  const config = await authConfig(api);
  if (options.method === 'password' && !config.flows.includes('password'))
    throw new CliError(
      `the server ${api.server} does not offer the password grant (flows: ${config.flows.join(', ')})`,
      EXIT.auth,
      'run `svc login` without --password/--username to sign in with the browser or a device code',
    );
  const issuer = config.issuer;
  const oauth = await oauthFor(api, issuer);
  let session: Session;
  if (options.method === 'password') {
    const username = options.username;
    if (username === undefined || username === '')
      throw new CliError('the password grant needs --username <email>', EXIT.usage);
    const password = await options.password!();
    if (password === '') throw new CliError('empty password', EXIT.usage);
    const tokens = await ui
      .spin('Signing in', () =>
        oidc.genericGrantRequest(oauth, 'password', { username, password, scope: SCOPE }),
      )
      .catch((error: unknown) => {
        throw oauthFailure(error, 'sign-in');
      });
    session = sessionOf(api.server, issuer, 'password', tokens);
  } else if (options.method === 'device') {
    const device = await oidc.initiateDeviceAuthorization(oauth, { scope: SCOPE }).catch((error: unknown) => {
      throw oauthFailure(error, 'device authorization');
    });
    // Through the agent the issuer's own pages are under {server}/auth too (its loopback address
    // is not reachable from where the user's browser may be).
    const routed = (uri: string): string =>
      oauth.serverMetadata().token_endpoint?.startsWith(`${api.server}/auth/`) === true &&
      uri.startsWith(`${issuer}/`)
        ? `${api.server}/auth${uri.slice(issuer.length)}`
        : uri;
    ui.info(`To sign in, open ${routed(device.verification_uri)}`);
    ui.info(`and enter the code: ${device.user_code}`);
    if (device.verification_uri_complete !== undefined)
      ui.info(`(or open ${routed(device.verification_uri_complete)})`);
    const tokens = await ui
      .spin('Waiting for the sign-in in the browser', () =>
        Promise.race([
          oidc.pollDeviceAuthorizationGrant(
            oauth,
            device,
            undefined,
            options.signal === undefined ? {} : { signal: options.signal },
          ),
          // The library notices the signal only at its next poll (seconds apart).
          new Promise<never>((_resolve, reject) =>
            options.signal?.addEventListener(
              'abort',
              () =>
                reject(
                  options.signal?.reason instanceof Error
                    ? options.signal.reason
                    : new CliError('interrupted', EXIT.interrupted),
                ),
              { once: true },
            ),
          ),
        ]),
      )
      .catch((error: unknown) => {
        if (options.signal?.aborted === true) throw options.signal.reason;
        throw oauthFailure(error, 'device sign-in');
      });
    session = sessionOf(api.server, issuer, 'device_code', tokens);
  } else {
    const tokens = await browserLogin(oauth, ui, options.openBrowser, options.signal);
    session = sessionOf(api.server, issuer, 'authorization_code', tokens);
  }
  writeSession(session);
  return session;
}

const CALLBACK_TIMEOUT_MS = 5 * 60_000;

async function browserLogin(
  oauth: oidc.Configuration,
  ui: Ui,
  openBrowser: boolean,
  signal: AbortSignal | undefined,
): Promise<oidc.TokenEndpointResponse> {
  const verifier = oidc.randomPKCECodeVerifier();
  const challenge = await oidc.calculatePKCECodeChallenge(verifier);
  const state = oidc.randomState();
  let settle: { resolve: (t: oidc.TokenEndpointResponse) => void; reject: (e: unknown) => void } | undefined;
  const done = new Promise<oidc.TokenEndpointResponse>((resolve, reject) => (settle = { resolve, reject }));
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const url = new URL(req.url ?? '/', base);
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    oidc
      .authorizationCodeGrant(oauth, url, { pkceCodeVerifier: verifier, expectedState: state })
      .then((tokens) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><title>svc</title><p>Signed in to svc. You can close this window.</p>');
        settle!.resolve(tokens);
      })
      .catch((error: unknown) => {
        res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><title>svc</title><p>Sign-in failed. Return to the terminal.</p>');
        settle!.reject(oauthFailure(error, 'browser sign-in'));
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const redirect = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  const url = oidc.buildAuthorizationUrl(oauth, {
    redirect_uri: redirect,
    scope: SCOPE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  });
  ui.info(`Open this URL in your browser to sign in:\n  ${url.href}`);
  if (openBrowser) startBrowser(url.href);
  const timer = setTimeout(
    () => settle!.reject(new CliError('no sign-in within 5 minutes', EXIT.auth, 'run `svc login` again')),
    CALLBACK_TIMEOUT_MS,
  );
  const onAbort = (): void => settle!.reject(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted === true) onAbort();
  try {
    return await ui.spin('Waiting for the browser', () => done);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    server.closeAllConnections();
    server.close();
  }
}

function startBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined); // the URL is printed anyway
    child.unref();
  } catch {
    // printed above
  }
}

/** How the current command authenticates. */
export type Credentials =
  { kind: 'bearer'; token: string } | { kind: 'session'; session: Session } | { kind: 'none' };

export function credentials(server: string | undefined): Credentials {
  const bearer = process.env['SVC_BEARER_TOKEN'];
  if (bearer !== undefined && bearer !== '') return { kind: 'bearer', token: bearer };
  const session = readSession();
  if (session !== undefined && (server === undefined || sameServer(session.server, server)))
    return { kind: 'session', session };
  return { kind: 'none' };
}

export function sameServer(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}

/** The bearer of `credentials`, refreshing a session token that is (nearly) expired. */
export async function accessToken(creds: Credentials, ui: Ui, api?: Api): Promise<string | undefined> {
  const now = Math.floor(Date.now() / 1000);
  if (creds.kind === 'none') return undefined;
  if (creds.kind === 'bearer') {
    const exp = jwtExpiry(creds.token);
    if (exp !== undefined && exp <= now)
      throw new CliError(
        `SVC_BEARER_TOKEN expired at ${new Date(exp * 1000).toISOString()}`,
        EXIT.auth,
        'mint a new token (svc never refreshes SVC_BEARER_TOKEN)',
      );
    return creds.token;
  }
  const session = creds.session;
  if (session.expires_at - REFRESH_MARGIN_S > now) return session.access_token;
  if (session.refresh_token === undefined)
    throw new CliError('the session expired', EXIT.auth, 'run `svc login` again');
  const refreshToken = session.refresh_token;
  // The refresh goes the way the sign-in went: through the server when it routes /auth (svc-agent).
  const oauth = await oauthFor(
    api !== undefined && sameServer(api.server, session.server) ? api : undefined,
    session.issuer,
  );
  const tokens = await ui
    .spin('Refreshing the session', () => oidc.refreshTokenGrant(oauth, refreshToken))
    .catch((error: unknown) => {
      throw new CliError(
        `the session could not be refreshed: ${(error as { error?: string }).error ?? (error as Error).message}`,
        EXIT.auth,
        'run `svc login` again',
      );
    });
  const next = sessionOf(session.server, session.issuer, session.grant, tokens, session.refresh_token);
  writeSession(next);
  creds.session = next;
  return next.access_token;
}
