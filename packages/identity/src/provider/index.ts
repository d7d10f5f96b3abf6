// The built-in OIDC provider of svc-identity (issue 4).
export { createIdentityProvider, unknownScope, REFRESH_TOKEN_IDLE_SECONDS } from './provider.ts';
export type { IdentityProvider, IdentityProviderOptions, LogFn } from './provider.ts';
export { startIdentityServer } from './server.ts';
export type { IdentityServer, IdentityServerOptions } from './server.ts';
export { SigningKeyRing, KEY_ROTATION_MS, SIGNING_ALG } from './keys.ts';
export type { KeyRingOptions, KeyRingSnapshot, SigningKey } from './keys.ts';
export { IdentityState, MAX_PERSISTED_MODELS, identityStateDir } from './state-file.ts';
export { SignInThrottle, DEFAULT_THROTTLE_LIMITS } from './sign-in-throttle.ts';
export type { ThrottleLimits } from './sign-in-throttle.ts';
export { PasswordSignIn, clientAddress, verifyClientAddress } from './sign-in.ts';
export { TotpVerifier, newTotpSecret, totpCode } from './totp.ts';
export { RefreshReuse, REFRESH_REUSE_MS } from './refresh-reuse.ts';
export { Telemetry, createTelemetryServer } from './telemetry.ts';
export { MemoryStore } from './adapter.ts';
export {
  ACCESS_TOKEN_TTL,
  API_AUDIENCE,
  API_RESOURCE,
  AUDIENCE_SCOPE,
  KNOWN_SCOPES,
  PUBLIC_CLIENT_IDS,
  clientMetadata,
} from './clients.ts';
export {
  DEFAULT_WEB_REDIRECT_URIS,
  SettingsError,
  loadIdentitySettings,
  passwordFlowEnabled,
  readOidcFile,
} from './settings.ts';
export type { IdentitySettings } from './settings.ts';
