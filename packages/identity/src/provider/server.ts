// Binds svc-identity's listeners: the issuer (loopback, `/auth`) and the telemetry `/healthz`.
// A timer applies key rotations when due even without traffic (requests also check).
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createIdentityProvider } from './provider.ts';
import type { IdentityProvider, IdentityProviderOptions } from './provider.ts';
import { createTelemetryServer } from './telemetry.ts';

export interface IdentityServerOptions extends Omit<IdentityProviderOptions, 'issuer'> {
  host?: string | undefined;
  issuerPort: number;
  telemetryPort: number;
  /** Issuer path; default `/auth` (CONTRACT §8). */
  path?: string | undefined;
}

export interface IdentityServer {
  readonly issuer: string;
  readonly ports: { issuer: number; telemetry: number };
  readonly provider: IdentityProvider;
  close(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function trackSockets(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

export async function startIdentityServer(options: IdentityServerOptions): Promise<IdentityServer> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/auth';
  const holder: { provider?: IdentityProvider } = {};
  const issuerServer = createServer((req, res) => {
    if (holder.provider === undefined) {
      res.writeHead(503).end();
      return;
    }
    holder.provider.handle(req, res);
  });
  const issuerSockets = trackSockets(issuerServer);
  const issuerPort = await listen(issuerServer, options.issuerPort, host);
  const issuer = `http://${host.includes(':') ? `[${host}]` : host}:${issuerPort}${path}`;
  const ready = createIdentityProvider({ ...options, issuer });
  holder.provider = ready;

  const telemetryServer = createTelemetryServer(ready.telemetry, () => ({
    issuer,
    password_flow: options.passwordFlow,
    published_keys: ready.keys.publicJwks().keys.length,
  }));
  const telemetrySockets = trackSockets(telemetryServer);
  let telemetryPort: number;
  try {
    telemetryPort = await listen(telemetryServer, options.telemetryPort, host);
  } catch (error) {
    issuerServer.close();
    throw error;
  }

  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    // Bounded so that a clock change is noticed within a minute.
    timer = setTimeout(
      () => {
        ready.refreshKeys();
        schedule();
      },
      Math.min(Math.max(ready.keys.msUntilNextChange(), 1000), 60_000),
    );
    timer.unref();
  };
  schedule();

  let closing: Promise<void> | undefined;
  return {
    issuer,
    ports: { issuer: issuerPort, telemetry: telemetryPort },
    provider: ready,
    close() {
      closing ??= (async () => {
        clearTimeout(timer);
        const closed = Promise.all(
          [issuerServer, telemetryServer].map(
            (server) => new Promise<void>((resolve) => server.close(() => resolve())),
          ),
        );
        for (const socket of [...issuerSockets, ...telemetrySockets]) socket.destroy();
        await closed;
        await options.state?.close();
      })();
      return closing;
    },
  };
}
