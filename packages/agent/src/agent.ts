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
import { Agent as HttpsAgent, type AgentOptions as AgentOptions_, type Server } from 'node:https';
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { SvcError } from '@svc/protocol';
import { createProxyServer } from 'http-proxy-3';
import type { Limits } from '../../daemon/src/config/config.ts';
import type { TlsMaterial } from '../../daemon/src/tls/certificates.ts';
import { AGENT_KEY_HEADER } from '../../daemon/src/transports/agent-relay.ts';
import {
  answerClientError,
  closeIdleHttpConnections,
  guardTlsServer,
} from '../../daemon/src/transports/connection-deadlines.ts';
import { ConnectionGuard } from '../../daemon/src/transports/connection-guard.ts';
import { createBoundedHttpsServer } from '../../daemon/src/transports/rest-transport.ts';
import { svcdCaller } from '@svc/mcp/svcd';
import type { McpEndpoint } from '@svc/mcp';
import type { AgentMetrics } from './metrics.ts';

/** Reported by the MCP server as its version. */
const AGENT_VERSION = '0.1.0';
import { issuerLocation, publicOrigin, refusesProcessKey, routeOf } from './routes.ts';
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

function sendError(res: ServerResponse, error: SvcError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(error.toBody());
  res.writeHead(error.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...error.headers,
  });
  res.end(body);
}

/** Refuse an upgrade on the raw socket with the registry's error body. */
function refuseUpgrade(socket: Duplex, error: SvcError): void {
  const body = JSON.stringify(error.toBody());
  const reason = error.status === 502 ? 'Bad Gateway' : error.status === 404 ? 'Not Found' : 'Bad Request';
  if (socket.writable)
    socket.end(
      `HTTP/1.1 ${error.status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  else socket.destroy();
}

/**
 * The remote address the agent vouches for (any X-Forwarded-For a client sent is replaced, not
 * extended), proven by the key in X-Svc-Agent-Key (to svcd the agent's process key, to the issuer
 * the relay key; a client's copy of that header is always replaced or removed), and the address the
 * client used, so that svcd's
 * RFC 9728 metadata and challenges name the agent rather than the daemon's own port.
 */
function markForwarded(req: IncomingMessage, agentKey: string | undefined): void {
  if (agentKey === undefined || agentKey === '') delete req.headers[AGENT_KEY_HEADER];
  else req.headers[AGENT_KEY_HEADER] = agentKey;
  req.headers['x-forwarded-for'] = req.socket.remoteAddress ?? 'unknown';
  req.headers['x-forwarded-proto'] = 'https';
  if (req.headers.host !== undefined) req.headers['x-forwarded-host'] = req.headers.host;
  else delete req.headers['x-forwarded-host'];
}

/** An HTTPS agent whose connections go to the Unix socket `link` (TLS as usual), or a plain one. */
function linkedAgent(link: string | undefined, options: AgentOptions_): HttpsAgent {
  if (link === undefined) return new HttpsAgent(options);
  return new (class extends HttpsAgent {
    // Node's Agent uses a returned socket as the connection (the callback is for async creation).
    override createConnection(connect: TlsConnectionOptions): Duplex {
      return tlsConnect({ ...connect, path: link });
    }
  })(options);
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { limits, log } = options;
  // Counters exist only with the exporter on (nobody could read them otherwise); prom-client is loaded then.
  const metrics: AgentMetrics | undefined =
    options.metricsPort === undefined ? undefined : new (await import('./metrics.ts')).AgentMetrics();
  const guard = new ConnectionGuard(limits);

  // Upstream TLS verifies the daemon's certificate against the daemon's CA (or the system roots when
  // a configured certificate comes without a CA file). Bounded keep-alive pool.
  const daemonAgent = linkedAgent(options.daemonLink, {
    keepAlive: true,
    maxSockets: 256,
    maxFreeSockets: 32,
    ...(options.tls.ca === undefined ? {} : { ca: options.tls.ca }),
  });
  const daemonProxy = createProxyServer({
    target: options.daemonUrl,
    secure: true,
    agent: daemonAgent,
    ...(options.tls.ca === undefined ? {} : { ca: options.tls.ca }),
    proxyTimeout: limits.requestTimeoutMs,
    connectTimeout: 5_000,
  });
  // The issuer sees its own host name (changeOrigin), so its documents name the issuer exactly as
  // discovery publishes it; its redirects to itself (any 3xx, including the 303 after the login
  // form, which the library's own rewrite skips) are moved to the agent's origin (issuerLocation).
  const issuerProxy = createProxyServer({
    changeOrigin: true,
    proxyTimeout: limits.requestTimeoutMs,
    connectTimeout: 5_000,
  });
  issuerProxy.on('proxyRes', (proxyRes, req) => {
    const location = proxyRes.headers.location;
    const origin = issuerOrigins.get(req);
    if (typeof location === 'string' && origin !== undefined)
      proxyRes.headers.location = issuerLocation(location, origin, req.headers.host);
  });
  /** The issuer origin each in-flight /auth request was sent to. */
  const issuerOrigins = new WeakMap<IncomingMessage, string>();
  for (const [upstream, proxy] of [
    ['daemon', daemonProxy],
    ['issuer', issuerProxy],
  ] as const) {
    proxy.on('error', (error, req, resOrSocket) => {
      metrics?.upstreamErrors.inc({ upstream });
      log('warn', 'upstream request failed', {
        upstream,
        method: req.method,
        error: (error as NodeJS.ErrnoException).code ?? error.message,
      });
      const failure = new SvcError(
        'upstream_unavailable',
        upstream === 'daemon'
          ? 'the agent cannot reach svcd; retry when the daemon is back'
          : 'the agent cannot reach the built-in identity provider; retry when it is back',
        { cause: error },
      );
      if ('writeHead' in resOrSocket) sendError(resOrSocket, failure);
      else refuseUpgrade(resOrSocket, failure);
    });
  }

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

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
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
        if (route.to === 'mcp') await (await mcpEndpoint()).handle(req, res, base);
        else await serveMcpMetadata(req, res, base);
        return;
      }
      // The process key goes to svcd only; the issuer gets the relay key (same header), never it.
      if (route.to === 'daemon') {
        markForwarded(req, options.processKey);
        daemonProxy.web(req, res);
        return;
      }
      markForwarded(req, await relayKey());
      const origin = await issuerOrigin();
      issuerOrigins.set(req, origin);
      issuerProxy.web(req, res, { target: origin });
    })().catch((error: unknown) => {
      sendError(
        res,
        error instanceof SvcError ? error : new SvcError('internal', 'internal error', { cause: error }),
      );
      if (!(error instanceof SvcError)) log('error', 'request failed', { error: String(error) });
    });
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const route = routeOf('GET', req.url ?? '/');
    // WSS is the daemon's (any path but /auth, as on the daemon's own port); the offered
    // sub-protocols, which may carry a bearer, are forwarded untouched and never logged.
    if (route.to === 'issuer') {
      refuseUpgrade(socket, new SvcError('not_found', 'no WebSocket endpoint under /auth'));
      return;
    }
    metrics?.requests.inc({ upstream: 'daemon', transport: 'wss', status: 'upgrade' });
    markForwarded(req, options.processKey);
    daemonProxy.ws(req, socket, head);
  });

  // The MCP endpoint is loaded on its first request: a front door nobody uses for MCP never pays
  // for the SDK. Its tools call svcd's REST API with the caller's own bearer; its waiting output
  // subscriptions hear svcd's events over one WSS connection per principal, with that bearer too.
  let mcp: Promise<McpEndpoint> | undefined;
  const svcd = svcdCaller({ baseUrl: options.daemonUrl, ca: options.tls.ca });
  function mcpEndpoint(): Promise<McpEndpoint> {
    mcp ??= import('@svc/mcp').then(({ createMcpEndpoint, svcdEvents }) =>
      createMcpEndpoint({
        call: svcd,
        events: svcdEvents({ baseUrl: options.daemonUrl, ca: options.tls.ca }),
        version: AGENT_VERSION,
        log: (level, message) => log(level, message, { component: 'mcp' }),
        limits: {
          maxSessions: limits.mcpMaxSessions,
          perPrincipal: limits.mcpMaxSessionsPerPrincipal,
          idleMs: limits.mcpSessionIdleMs,
        },
      }),
    );
    return mcp;
  }

  /** RFC 9728 metadata of /mcp: svcd's document for this origin, its resource naming the endpoint. */
  async function serveMcpMetadata(req: IncomingMessage, res: ServerResponse, base: string): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new SvcError('method_not_allowed', 'GET only');
    const answer = await svcd({
      method: 'GET',
      path: '/.well-known/oauth-protected-resource',
      headers: { 'x-forwarded-host': req.headers.host ?? '', 'x-forwarded-proto': 'https' },
    }).catch((error: unknown) => {
      throw new SvcError(
        'upstream_unavailable',
        'the agent cannot reach svcd; retry when the daemon is back',
        {
          cause: error,
        },
      );
    });
    if (answer.status !== 200) throw new SvcError('upstream_unavailable', `svcd answered ${answer.status}`);
    const document = { ...(JSON.parse(answer.body.toString('utf8')) as object), resource: `${base}/mcp` };
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify(document));
  }

  let relayKeyProblem = false;
  /** The issuer relay key, or undefined (then svc-identity sees every client as the agent's address). */
  async function relayKey(): Promise<string | undefined> {
    try {
      const key = await options.issuerRelayKey?.();
      relayKeyProblem = false;
      return key;
    } catch (error) {
      if (!relayKeyProblem)
        log('warn', 'cannot read the issuer relay key; client addresses are not forwarded to the issuer', {
          error: error instanceof Error ? error.message : String(error),
        });
      relayKeyProblem = true;
      return undefined;
    }
  }

  async function issuerOrigin(): Promise<string> {
    if (options.issuerOrigin === undefined)
      throw new SvcError(
        'external_identity_provider',
        'this svc uses an external identity provider (SVC_AUTH_MODE=external): the agent serves no /auth; sign in at the provider named by GET /svc/auth/config',
      );
    const origin = await options.issuerOrigin();
    if (origin === undefined)
      throw new SvcError(
        'upstream_unavailable',
        'the built-in identity provider has not reported its port yet',
      );
    return origin;
  }

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
      daemonProxy.close();
      issuerProxy.close();
      if (mcp !== undefined) await (await mcp).close();
      daemonAgent.destroy();
      await Promise.all(closed);
    },
  };
}
