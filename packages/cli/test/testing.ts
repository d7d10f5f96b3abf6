// @svc/cli/testing: running the `svc` command against a test daemon, for other packages' tests.
export { svcEnv, type SvcEnv } from './helpers.ts';
