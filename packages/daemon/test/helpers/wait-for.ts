// The bounded wait of the test kit (packages/testkit/src/wait-for.ts), under the path the daemon's
// tests have always imported it from.
export { waitFor } from '@svc/testkit';
export type { WaitForOptions } from '@svc/testkit';
