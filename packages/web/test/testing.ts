// @svc/web/testing: the web UI in a real browser against a real stack, for other packages' tests.
export { SIGN_OUT, startWebHarness, type WebHarness } from './harness.ts';
