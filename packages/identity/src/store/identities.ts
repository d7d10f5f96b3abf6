// Packaged constants of the static identities (spec: "Identities (built-in mode)"). They must match
// verbatim wherever they appear: credential files, the identity provider, the authorization seed.
// `user_id` is the token `sub`, hence the principal id (CONTRACT §8) seeded in the daemon's policy.

export const STATIC_IDENTITIES = {
  admin: { username: 'admin', email: 'admin@svc.local', user_id: 'admin', role: 'svc-admin' },
  guest: { username: 'guest', email: 'guest@svc.local', user_id: 'guest', role: 'svc-viewer' },
} as const;

export type StaticIdentityName = keyof typeof STATIC_IDENTITIES;

/** The confidential OAuth client of the machine identity (principal `client:svc-automation`). */
export const AUTOMATION_CLIENT_ID = 'svc-automation';

/** OAuth clients (spec: "OAuth clients"). */
export const OAUTH_CLIENT_IDS = ['svc-api', 'svc-cli', 'svc-web', 'svc-mcp-user', 'svc-automation'] as const;
