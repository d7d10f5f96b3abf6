// The OAuth clients of the built-in issuer (spec "OAuth clients") as oidc-provider client metadata,
// and the scopes and resource the issuer knows.
import { AUTOMATION_CLIENT_ID } from '../store/identities.ts';

/** The audience of the daemon's API; the daemon requires it in `aud` (CONTRACT §3). */
export const API_AUDIENCE = 'svc-api';
/** The scope that puts `svc-api` in `aud` (spec: colon-separated; a form with `=` fails). */
export const AUDIENCE_SCOPE = `audience:server:client_id:${API_AUDIENCE}`;
/** The resource indicator (RFC 8707, an absolute URI) of the API; clients need not send it. */
export const API_RESOURCE = 'urn:svc:api';
/**
 * Whether a resource indicator (RFC 8707) names svc's API: `urn:svc:api`, or the HTTPS address of
 * an svc front door (`https://<host>[:port]`, with or without the MCP endpoint's `/mcp`), which MCP
 * clients send as the canonical URI of the server they talk to (MCP authorization spec). Every one
 * maps to the same audience, `svc-api`: the issuer does not know the host names operators use.
 */
export function isApiResource(resource: string): boolean {
  return resource === API_RESOURCE || /^https:\/\/[A-Za-z0-9.[\]:-]{1,300}(?:\/mcp)?\/?$/.test(resource);
}
/** Access-token lifetime, seconds (spec: `exp - iat` = 900). */
export const ACCESS_TOKEN_TTL = 900;

/**
 * Scopes the issuer recognises: the set Dex accepts (CONTRACT §8). `groups` and `federated:id` are
 * granted but add no claim (built-in users have no groups and no upstream connector).
 */
export const OIDC_SCOPES = [
  'openid',
  'email',
  'profile',
  'groups',
  'offline_access',
  'federated:id',
] as const;
/** Dex's cross-client scope prefix; `<prefix><client id>` is accepted for each client of the issuer. */
export const CROSS_CLIENT_SCOPE_PREFIX = 'audience:server:client_id:';

export const PASSWORD_GRANT = 'password';
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Public clients (token endpoint auth method `none`): HTTP Basic with an empty secret is accepted. */
export const PUBLIC_CLIENT_IDS: ReadonlySet<string> = new Set([
  'svc-api',
  'svc-cli',
  'svc-web',
  'svc-mcp-user',
]);

/** Every scope the issuer accepts; any other requested scope is answered 400 invalid_request. */
export const KNOWN_SCOPES: ReadonlySet<string> = new Set<string>([
  ...OIDC_SCOPES,
  ...[...PUBLIC_CLIENT_IDS, AUTOMATION_CLIENT_ID].map((id) => `${CROSS_CLIENT_SCOPE_PREFIX}${id}`),
]);

/** RFC 8252 §7.3: for native clients the port of a loopback redirect URI is not compared. */
const LOOPBACK_REDIRECTS = [
  'http://127.0.0.1/callback',
  'http://[::1]/callback',
  'http://localhost/callback',
];
/** MCP clients' loopback callbacks: `/callback` and `/oauth/callback` (mcp-remote, IDE assistants), any port. */
const MCP_REDIRECTS = [
  ...LOOPBACK_REDIRECTS,
  'http://127.0.0.1/oauth/callback',
  'http://[::1]/oauth/callback',
  'http://localhost/oauth/callback',
];

export function clientMetadata(options: {
  automationSecret: string;
  passwordFlow: boolean;
  webRedirectUris: readonly string[];
}): Record<string, unknown>[] {
  const interactive = ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT];
  return [
    // The audience itself: no grants of its own.
    {
      client_id: 'svc-api',
      token_endpoint_auth_method: 'none',
      grant_types: [],
      response_types: [],
      redirect_uris: [],
    },
    {
      client_id: 'svc-cli',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: options.passwordFlow ? [...interactive, PASSWORD_GRANT] : interactive,
      response_types: ['code'],
      redirect_uris: LOOPBACK_REDIRECTS,
    },
    {
      client_id: 'svc-web',
      application_type: 'web',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [...options.webRedirectUris],
      // Sign-out returns to the web UI (end session with client_id and this URI).
      post_logout_redirect_uris: [...options.webRedirectUris],
    },
    {
      client_id: 'svc-mcp-user',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: interactive,
      response_types: ['code'],
      redirect_uris: MCP_REDIRECTS,
    },
    {
      client_id: AUTOMATION_CLIENT_ID,
      client_secret: options.automationSecret,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ];
}
