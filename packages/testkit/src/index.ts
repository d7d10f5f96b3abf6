// @svc/testkit: private helpers for cross-component tests.
export { selfSignedCertificate, startTestIssuer } from './issuer.ts';
export type { Forgery, MintClaims, TestIssuer, TestIssuerOptions } from './issuer.ts';
export {
  BUILTIN_MODE_ENV,
  EPHEMERAL_PORTS_ENV,
  startTestDaemon,
  svcdCommand,
  killManagedProcesses,
  killSpawner,
  spawnerPid,
  TEST_PRINCIPALS,
  DEVELOPER_ROLE,
} from './daemon.ts';
export type { TestDaemon, TestDaemonOptions, TestRole } from './daemon.ts';
export {
  SOAK,
  FUZZ_TIMEOUT_MS,
  expectDocumentedError,
  fuzzParameters,
  seededRandom,
  soakScaled,
  testSeed,
  throwsOnly,
} from './fuzz.ts';
export { openWebSocket, restClient, tcpClient, wsClient } from './clients.ts';
export type { ApiClient, CallOptions, CallResult, PersistentClient, UpgradedWebSocket } from './clients.ts';
export { hostileAppBody, hostileValue, hostileYaml, validAppBody, validName } from './arbitraries.ts';
export { CHROMIUM_EXECUTABLE, CHROMIUM_FLAGS } from './chromium.ts';
export { freePort } from './ports.ts';
export { ETCD_EXECUTABLE, startEtcd } from './etcd.ts';
export type { TestEtcd, TestEtcdTls } from './etcd.ts';
export { startServedDaemon } from './serve.ts';
export type { ServeInfo, BuiltinAuthInfo, BuiltinUser, ExtraUserRequest, ServeOptions } from './serve.ts';
export { waitFor } from './wait-for.ts';
export type { WaitForOptions } from './wait-for.ts';
export { createOsUser, IS_ROOT } from './os-user.ts';
export type { TestOsUser } from './os-user.ts';
