// The administrative gRPC server (spec "Ports": 5557, mutual TLS, loopback only): the AdminService
// operations over @grpc/grpc-js with a REQUIRED client certificate signed by the admin CA
// (work/auth/admin-tls/). A client without a certificate, or with one from another CA, fails the
// TLS handshake (the client sees code 14 UNAVAILABLE) before any RPC runs.
import * as grpc from '@grpc/grpc-js';
import { SERVICE_NAMES, adminServices, type AdminRpcs } from './grpc-proto.ts';
import { DEFAULT_GRPC_LISTEN, formatListen, parseLoopbackListen } from './listen.ts';
import { AdminError, type AdminService } from './service.ts';
import type { AdminTlsMaterial } from './tls.ts';

export interface AdminGrpcServerOptions {
  service: AdminService;
  tls: AdminTlsMaterial;
  /** `SVC_AUTH_GRPC_LISTEN` (default 127.0.0.1:5557); a non-loopback address is refused. */
  listen?: string | undefined;
  /** Errors that are not AdminError (bugs, I/O) are reported here; the client gets INTERNAL. */
  onError?: ((error: unknown, rpc: string) => void) | undefined;
}

export interface AdminGrpcServer {
  readonly host: string;
  readonly port: number;
  /** `host:port`, the gRPC target for clients. */
  readonly target: string;
  close(): Promise<void>;
}

const STATUS: Record<AdminError['code'], grpc.status> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  NOT_FOUND: grpc.status.NOT_FOUND,
  ALREADY_EXISTS: grpc.status.ALREADY_EXISTS,
  FAILED_PRECONDITION: grpc.status.FAILED_PRECONDITION,
  INTERNAL: grpc.status.INTERNAL,
};

type Handlers = {
  [S in keyof AdminRpcs]: {
    [M in keyof AdminRpcs[S]]: (
      request: AdminRpcs[S][M] extends [infer Q, unknown] ? Q : never,
    ) => Promise<AdminRpcs[S][M] extends [unknown, infer R] ? R : never>;
  };
};

function handlers(service: AdminService): Handlers {
  const mfa = (user: {
    email: string;
    user_id: string;
    mfa_enabled: boolean;
    totp?: { secret: string; uri: string } | undefined;
  }) => ({
    email: user.email,
    user_id: user.user_id,
    enabled: user.mfa_enabled,
    secret: user.totp?.secret ?? '',
    otpauth_uri: user.totp?.uri ?? '',
  });
  return {
    Passwords: {
      ListUsers: async () => ({ users: service.listUsers() }),
      CreateUser: (request) => service.createUser(request.email, request.password),
      DeleteUser: (request) => service.deleteUser(request.email),
      SetPassword: (request) => service.setPassword(request.email, request.password),
      UnlockUser: async (request) => service.unlockUser(request.email),
    },
    Clients: {
      ListClients: async () => ({ clients: await service.listClients() }),
      RegenerateAutomationSecret: () => service.regenerateAutomationSecret(),
    },
    Sessions: {
      ListSessions: async () => ({
        sessions: service.listSessions().map((session) => ({
          id: session.id,
          subject: session.subject,
          client_id: session.client_id ?? '',
          kind: session.kind,
          created_at: session.created_at,
          expires_at: session.expires_at ?? '',
        })),
      }),
      RevokeSession: async (request) => {
        await service.revokeSession(request.id);
        return {};
      },
    },
    Mfa: {
      GetMfa: async (request) => mfa(service.getMfa(request.email)),
      SetMfa: async (request) => mfa(await service.setMfa(request.email, request.enabled)),
    },
  };
}

export async function startAdminGrpcServer(options: AdminGrpcServerOptions): Promise<AdminGrpcServer> {
  const address = parseLoopbackListen(options.listen ?? DEFAULT_GRPC_LISTEN, 'SVC_AUTH_GRPC_LISTEN');
  const server = new grpc.Server();
  const constructors = adminServices();
  const all = handlers(options.service) as unknown as Record<
    string,
    Record<string, (request: unknown) => Promise<unknown>>
  >;
  for (const name of SERVICE_NAMES) {
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const [method, handle] of Object.entries(all[name]!)) {
      implementation[method] = (
        call: grpc.ServerUnaryCall<unknown, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        handle(call.request).then(
          (response) => callback(null, response),
          (error: unknown) => {
            if (error instanceof AdminError) {
              callback({ code: STATUS[error.code], details: error.message });
              return;
            }
            options.onError?.(error, `${name}/${method}`);
            callback({ code: grpc.status.INTERNAL, details: 'internal error' });
          },
        );
      };
    }
    server.addService(constructors[name].service, implementation);
  }
  const credentials = grpc.ServerCredentials.createSsl(
    Buffer.from(options.tls.caCert),
    [{ private_key: Buffer.from(options.tls.serverKey), cert_chain: Buffer.from(options.tls.serverCert) }],
    true, // client certificate required
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(formatListen(address), credentials, (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  const target = formatListen({ host: address.host, port });
  return {
    host: address.host,
    port,
    target,
    async close() {
      // Open client channels would hold tryShutdown forever; calls still running are cancelled.
      server.forceShutdown();
    },
  };
}
