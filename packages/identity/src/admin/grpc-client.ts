// A promise-based client of the administrative gRPC API, authenticated by the client certificate
// of work/auth/admin-tls/ (the administration UI is its user).
import * as grpc from '@grpc/grpc-js';
import { SERVICE_NAMES, adminServices, type AdminRpcs, type AdminServiceName } from './grpc-proto.ts';

export interface AdminClientCredentials {
  /** PEM of the CA that signed the server certificate. */
  caCert: string;
  /** PEM client certificate and key; omit both to connect without one (tests: it is refused). */
  clientCert?: string | undefined;
  clientKey?: string | undefined;
}

export type AdminClient = {
  [S in keyof AdminRpcs]: {
    [M in keyof AdminRpcs[S]]: (
      request: AdminRpcs[S][M] extends [infer Q, unknown] ? Q : never,
    ) => Promise<AdminRpcs[S][M] extends [unknown, infer R] ? R : never>;
  };
} & { close(): void };

/** A gRPC error as the client sees it: `code` is the numeric status (grpc.status). */
export interface AdminRpcError extends Error {
  code: grpc.status;
  details: string;
}

export function isAdminRpcError(error: unknown): error is AdminRpcError {
  return error instanceof Error && typeof (error as Partial<AdminRpcError>).code === 'number';
}

export interface AdminClientOptions {
  /** Deadline of each call in milliseconds (default 10 s). */
  deadlineMs?: number | undefined;
}

export function createAdminClient(
  target: string,
  credentials: AdminClientCredentials,
  options: AdminClientOptions = {},
): AdminClient {
  const channelCredentials = grpc.credentials.createSsl(
    Buffer.from(credentials.caCert),
    credentials.clientKey === undefined ? null : Buffer.from(credentials.clientKey),
    credentials.clientCert === undefined ? null : Buffer.from(credentials.clientCert),
  );
  const constructors = adminServices();
  const deadlineMs = options.deadlineMs ?? 10_000;
  const clients: grpc.Client[] = [];
  const result: Record<string, unknown> = {};
  let channel: grpc.Channel | undefined;
  for (const name of SERVICE_NAMES as readonly AdminServiceName[]) {
    // One channel shared by the four service stubs.
    // TLS server name `localhost` (a DNS SAN of the server certificate, beside the IP SANs): an IP
    // address as SNI is deprecated by Node (DEP0123, RFC 6066).
    const stub = new constructors[name](
      target,
      channelCredentials,
      channel === undefined ? { 'grpc.ssl_target_name_override': 'localhost' } : { channelOverride: channel },
    );
    channel ??= stub.getChannel() as grpc.Channel;
    clients.push(stub);
    const methods: Record<string, (request: unknown) => Promise<unknown>> = {};
    for (const method of Object.keys(constructors[name].service)) {
      type UnaryCall = (
        request: unknown,
        metadata: grpc.Metadata,
        callOptions: grpc.CallOptions,
        callback: (error: grpc.ServiceError | null, response: unknown) => void,
      ) => void;
      const call = (stub as unknown as Record<string, UnaryCall>)[method]!.bind(stub);
      methods[method] = (request) =>
        new Promise((resolve, reject) =>
          call(request, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (error, response) =>
            error ? reject(error) : resolve(response),
          ),
        );
    }
    result[name] = methods;
  }
  result['close'] = () => {
    for (const client of clients) client.close();
  };
  return result as AdminClient;
}
