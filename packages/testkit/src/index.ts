// @svc/testkit: private helpers for cross-component tests.
export { startTestIssuer } from './issuer.ts';
export type { Forgery, MintClaims, TestIssuer, TestIssuerOptions } from './issuer.ts';
