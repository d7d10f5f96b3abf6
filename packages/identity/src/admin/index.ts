// Administrative gRPC API (mutual TLS, loopback 5557) and administration UI (Unix socket
// work/auth/admin-ui.sock, mode 0600) of the
// built-in identity (issue 4). See packages/identity/README.md, "Administration".
export {
  DEFAULT_GRPC_LISTEN,
  TCP_ADMIN_UI_LISTEN,
  defaultAdminUiListen,
  ListenAddressError,
  formatListen,
  isLoopbackHost,
  parseLoopbackListen,
  type ListenAddress,
} from './listen.ts';
export {
  ADMIN_TLS_FILES,
  adminTlsDir,
  generateAdminTls,
  loadOrCreateAdminTls,
  type AdminTlsMaterial,
} from './tls.ts';
export {
  InMemorySessionRegistry,
  type RevokeSession,
  type SessionRecord,
  type SessionRegistry,
} from './sessions.ts';
export {
  AdminError,
  AdminService,
  toAdminUser,
  type AdminErrorCode,
  type AdminServiceOptions,
  type AdminUser,
  type OAuthClientInfo,
} from './service.ts';
export { ADMIN_PROTO_PATH, type AdminRpcs, type MfaState, type SessionMessage } from './grpc-proto.ts';
export { startAdminGrpcServer, type AdminGrpcServer, type AdminGrpcServerOptions } from './grpc-server.ts';
export {
  createAdminClient,
  isAdminRpcError,
  type AdminClient,
  type AdminClientCredentials,
  type AdminClientOptions,
  type AdminRpcError,
} from './grpc-client.ts';
export { startAdminUi, type AdminUi, type AdminUiOptions } from './ui/server.ts';
export {
  adminUiEnabled,
  adminUiPortsFile,
  runAdminUiProgram,
  type AdminUiProgram,
  type AdminUiProgramOptions,
} from './program.ts';
