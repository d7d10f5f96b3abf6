// @svc/identity/testing: the helpers other packages' tests sign in with (a form-driving browser
// stand-in, the full stack of svcd + svc-identity + svc-agent).
export { FormBrowser, formOf, signInAndConsent } from './provider/helpers.ts';
export { ADMIN_EMAIL, startAuthStack, type AuthStack } from './full-stack/stack.ts';
