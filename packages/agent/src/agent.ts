// svc-agent's front door: one HTTPS listener that forwards REST and WSS to the daemon, /auth/* to the
// built-in issuer (builtin mode), serves the web UI files at `/`, and (when configured) the
// Prometheus exporter on its own port. The agent authenticates nobody: bearers pass through to the
// daemon, which decides. It sets X-Forwarded-For (the remote address) on everything it forwards, so
// the daemon can tell a forwarded request from a direct loopback one (process keys are refused).
//
//   client ──HTTPS/WSS──► agent :6060 ──┬─ /svc/*, /openapi.json, RFC 9728, WSS ──► svcd REST (TLS, daemon CA)
//                                       ├─ /auth/* ─────────────────────────────► svc-identity 127.0.0.1:6062
//                                       ├─ /mcp (MCP, packages/mcp, in this process; tools call svcd REST)
//                                       └─ / (GET, HEAD) ───────────────────────► packages/web/dist files
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Limits } from '@svc/platform/config';
import {
  answerClientError,
  closeIdleHttpConnections,
  ConnectionGuard,
  createBoundedHttpsServer,
  guardTlsServer,
} from '@svc/platform/connections';
import type { TlsMaterial } from '@svc/platform/tls';
import { SvcError } from '@svc/protocol';
import { McpRoute } from './mcp-route.ts';
import type { AgentMetrics } from './metrics.ts';
import { publicOrigin, refusesProcessKey, routeOf } from './routes.ts';
import { Upstreams, refuseUpgrade, sendError } from './upstreams.ts';
import { serveWebFile } from './web-files.ts';

export type Log = (
  level: 'debug' | 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface AgentOptions {
  listenAddress: string;
  port: number;
  /** Prometheus exporter port; undefined = off. */
  metricsPort: number | undefined;
  tls: TlsMaterial;
  /** The daemon's REST base URL (SVC_DAEMON_URL). */
  daemonUrl: string;
  /**
   * svcd's Unix socket for the agent (SVC_AGENT_LINK, daemon transports/agent-link.ts): the proxy's
   * connections go there (TLS, verified against `daemonUrl`'s host), never competing with
   * anonymous peers for svcd's connection slots. Undefined: loopback TCP to `daemonUrl`.
   */
  daemonLink?: string | undefined;
  /** Origin of the built-in issuer (`http://127.0.0.1:6062`), resolved per request; undefined in external mode. */
  issuerOrigin: (() => Promise<string | undefined>) | undefined;
  /** The agent's own process key (SVC_PROCESS_KEY): its credential for the daemon's GET /svc/metrics. */
  processKey: string | undefined;
  /**
   * The issuer relay key (work/auth/secrets/issuer-relay-key), read for each request relayed to
   * /auth: svc-identity believes the X-Forwarded-For of a request that carries it (issue 25 M4).
   */
  issuerRelayKey?: (() => Promise<string | undefined>) | undefined;
  limits: Limits;
  webRoot: string;
  log: Log;
}

export interface RunningAgent {
  readonly ports: { agent: number; metrics?: number };
  close(): Promise<void>;
}

function listen(server: Server | HttpServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** What the request and upgrade handlers answer with. */
interface FrontDoor {
  readonly options: AgentOptions;
  readonly metrics: AgentMetrics | undefined;
  readonly upstreams: Upstreams;
  readonly mcp: McpRoute;
}

function handleRequest(front: FrontDoor, req: IncomingMessage, res: ServerResponse): void {
  const { options, metrics, upstreams, mcp } = front;
  const { limits, log } = options;
  const route = routeOf(req.method ?? 'GET', req.url ?? '/');
  metrics?.observe(route.to, res);
  void (async () => {
    if (route.to === 'refuse') {
      const code =
        route.status === 405 ? 'method_not_allowed' : route.status === 400 ? 'bad_request' : 'not_found';
      throw new SvcError(code, route.message);
    }
    if (route.to === 'web') {
      await serveWebFile(options.webRoot, route.file, req, res);
      return;
    }
    // Bodies are bounded as in the daemon, refused before anything is forwarded.
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limits.maxBodyBytes) {
      req.resume();
      throw new SvcError('payload_too_large', `request body exceeds ${limits.maxBodyBytes} bytes`);
    }
    // A process key is relayed only for a client on this host (svcd checks the relayed address too).
    if (refusesProcessKey(req.headers, req.socket.remoteAddress))
      throw new SvcError(
        'process_key_transport',
        'a process key is accepted only from this host; svc-agent does not relay it from another address',
      );
    if (route.to === 'mcp' || route.to === 'mcp-metadata') {
      const base = publicOrigin(req.headers.host);
      if (base === undefined) throw new SvcError('bad_request', 'the Host header is missing or malformed');
      if (route.to === 'mcp') await mcp.handle(req, res, base);
      else await mcp.metadata(req, res, base);
      return;
    }
    // The process key goes to svcd only; the issuer gets the relay key (same header), never it.
    if (route.to === 'daemon') {
      upstreams.daemon(req, res);
      return;
    }
    await upstreams.issuer(req, res);
  })().catch((error: unknown) => {
    sendError(
      res,
      error instanceof SvcError ? error : new SvcError('internal', 'internal error', { cause: error }),
    );
    if (!(error instanceof SvcError)) log('error', 'request failed', { error: String(error) });
  });
}

function handleUpgrade(front: FrontDoor, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  socket.on('error', () => socket.destroy());
  const route = routeOf('GET', req.url ?? '/');
  // WSS is the daemon's (any path but /auth, as on the daemon's own port); the offered
  // sub-protocols, which may carry a bearer, are forwarded untouched and never logged.
  if (route.to === 'issuer') {
    refuseUpgrade(socket, new SvcError('not_found', 'no WebSocket endpoint under /auth'));
    return;
  }
  front.metrics?.requests.inc({ upstream: 'daemon', transport: 'wss', status: 'upgrade' });
  front.upstreams.daemonUpgrade(req, socket, head);
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { limits, log } = options;
  // Counters exist only with the exporter on (nobody could read them otherwise); prom-client is loaded then.
  const metrics: AgentMetrics | undefined =
    options.metricsPort === undefined ? undefined : new (await import('./metrics.ts')).AgentMetrics();
  const guard = new ConnectionGuard(limits);
  const upstreams = new Upstreams(options, metrics);
  const mcp = new McpRoute(options);
  const front: FrontDoor = { options, metrics, upstreams, mcp };

  const server = createBoundedHttpsServer(options.tls, limits);
  const sockets = new Set<Socket>();
  // Counted from accept (the guard), TLS failures and handshake timeouts destroyed, idle closed.
  guardTlsServer(server, { guard, listener: 'agent', log, firstRequestMs: limits.handshakeTimeoutMs });
  server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return; // refused by the guard
    sockets.add(socket);
    metrics?.connections.inc();
    socket.once('close', () => {
      sockets.delete(socket);
      metrics?.connections.dec();
    });
  });
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) =>
    answerClientError(error, socket, log),
  );
  closeIdleHttpConnections(server, limits.idleTimeoutMs);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => handleRequest(front, req, res));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    handleUpgrade(front, req, socket, head),
  );

  const agentPort = await listen(server, options.port, options.listenAddress);
  let metricsServer: HttpServer | undefined;
  let metricsPort: number | undefined;
  if (options.metricsPort !== undefined && metrics !== undefined) {
    metricsServer = metrics.createExporter({
      daemonUrl: options.daemonUrl,
      ca: options.tls.ca,
      processKey: options.processKey,
      limits,
      log,
    });
    metricsPort = await listen(metricsServer, options.metricsPort, options.listenAddress);
  }

  return {
    ports: metricsPort === undefined ? { agent: agentPort } : { agent: agentPort, metrics: metricsPort },
    async close() {
      const closed = [new Promise<void>((resolve) => server.close(() => resolve()))];
      if (metricsServer !== undefined) {
        const m = metricsServer;
        closed.push(new Promise<void>((resolve) => m.close(() => resolve())));
        m.closeAllConnections();
      }
      for (const socket of sockets) socket.destroy();
      upstreams.close();
      await mcp.close();
      upstreams.destroyPool();
      await Promise.all(closed);
    },
  };
}
