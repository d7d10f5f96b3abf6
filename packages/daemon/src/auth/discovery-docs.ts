// The two public discovery documents (spec "Authentication and discovery"):
// - GET /svc/auth/config: what a client needs to sign in;
// - GET /.well-known/oauth-protected-resource: RFC 9728 protected resource metadata.
// Both are pure functions of the configuration.

export type AuthMode = 'builtin' | 'external';

/** Sign-in flows a client may use, named after their OAuth grant. */
export type AuthFlow =
  'authorization_code' | 'device_code' | 'refresh_token' | 'client_credentials' | 'password';

export const OAUTH_CLIENTS = { cli: 'svc-cli', web: 'svc-web' } as const;

/** Scopes a public client asks for (App Mesh 3.0's default set; the issuer accepts Dex's set). */
export const DEFAULT_CLIENT_SCOPES = ['openid', 'profile', 'email', 'groups', 'offline_access'] as const;

export interface AuthConfigDocument {
  mode: AuthMode;
  issuer: string;
  audience: string;
  flows: AuthFlow[];
  clients: typeof OAUTH_CLIENTS;
  /** App Mesh 3.0 fields: the public client's id, the scopes to request, whether refresh tokens are issued. */
  public_client_id: string;
  scopes: string[];
  refresh_token: boolean;
  /** The token endpoint clients should use when it differs from discovery (the agent's `/auth/token`). */
  token_endpoint?: string;
}

/**
 * `GET /svc/auth/config`. `password` is listed only in builtin mode while the password grant is
 * enabled (spec: external mode never advertises it, whatever `passwordFlow` says).
 */
export function authConfigDocument(options: {
  mode: AuthMode;
  issuer: string;
  audience: string;
  passwordFlow: boolean;
  tokenEndpoint?: string | undefined;
}): AuthConfigDocument {
  const flows: AuthFlow[] = ['authorization_code', 'device_code', 'refresh_token', 'client_credentials'];
  if (options.mode === 'builtin' && options.passwordFlow) flows.push('password');
  const document: AuthConfigDocument = {
    mode: options.mode,
    issuer: options.issuer,
    audience: options.audience,
    flows,
    clients: OAUTH_CLIENTS,
    public_client_id: OAUTH_CLIENTS.cli,
    scopes: [...DEFAULT_CLIENT_SCOPES],
    refresh_token: flows.includes('refresh_token'),
  };
  if (options.tokenEndpoint !== undefined) document.token_endpoint = options.tokenEndpoint;
  return document;
}

export interface ProtectedResourceDocument {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: ['header'];
  scopes_supported: string[];
  resource_name: string;
}

/** RFC 9728 §2 metadata of the API at `resource` (its base URL, e.g. `https://host:6060`). */
export function protectedResourceDocument(options: {
  resource: string;
  issuer: string;
  audience: string;
}): ProtectedResourceDocument {
  return {
    resource: options.resource,
    authorization_servers: [options.issuer],
    // Bearer only in the Authorization header: never a query parameter or form body (RFC 6750 §2.1).
    bearer_methods_supported: ['header'],
    // The audience scope uses the colon form the issuer understands (spec: password-grant form).
    scopes_supported: ['openid', `audience:server:client_id:${options.audience}`],
    resource_name: 'svc',
  };
}

/**
 * The metadata URL for a resource (RFC 9728 §3.1): the well-known path is inserted between the
 * origin and the resource's path, so `https://h:6060` → `https://h:6060/.well-known/oauth-protected-resource`.
 */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

/** host[:port] as a proxy may forward it: a DNS name or IPv4 address, or a bracketed IPv6 address. */
const FORWARDED_HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The base URL a client used: svc-agent forwards the client's Host as `X-Forwarded-Host` (with
 * `X-Forwarded-Proto: https`), so RFC 9728 documents and challenges name the agent's address, the
 * one the client can reach. Without (or with a malformed) forwarded host: the daemon's own URL. A
 * direct client setting the header only changes the URL in its own answer.
 */
export function publicBaseUrl(headers: Readonly<Record<string, string>>, own: string): string {
  const host = headers['x-forwarded-host'];
  if (host === undefined || headers['x-forwarded-proto'] !== 'https' || !FORWARDED_HOST.test(host))
    return own;
  return `https://${host}`;
}
