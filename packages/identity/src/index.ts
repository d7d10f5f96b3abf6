// @svc/identity: what other packages use of svc-identity. Its programs are bin/svc-identity.ts and
// bin/svc-auth-admin.ts; the provider and the administration UI are not exported, nothing else runs
// them. svcd creates and checks the credential files at first start (bootstrap), encrypts secret_env
// with the master key's one cipher (`enc:v1:`) and reads config/oidc.yaml; svc-agent reads the issuer
// relay key. Light modules only: svcd's and the agent's bundles include what is imported here.
export * from './credentials/index.ts';
export { passwordFlowEnabled, readOidcFile } from './provider/settings.ts';
export {
  AUTOMATION_CLIENT_ID,
  OAUTH_CLIENT_IDS,
  STATIC_IDENTITIES,
  type StaticIdentityName,
} from './store/identities.ts';
