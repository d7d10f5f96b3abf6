// What the agent forwards to, and how: svcd (REST and WSS, over a bounded keep-alive pool, on svcd's
// agent link when there is one) and the built-in issuer (/auth). Every forwarded request carries the
// agent's `X-Forwarded-*` and its proof in X-Svc-Agent-Key (the process key to svcd, the relay key
// to the issuer, never the other way round); an upstream that cannot be reached is answered
// 502 `upstream_unavailable`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import type { Duplex } from 'node:stream';
import { AGENT_KEY_HEADER, SvcError } from '@svc/protocol';
import { createProxyServer, type ProxyServer } from 'http-proxy-3';
import type { AgentOptions } from './agent.ts';
import type { AgentMetrics } from './metrics.ts';
import { issuerLocation } from './routes.ts';

export function sendError(res: ServerResponse, error: SvcError): void {
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
export function refuseUpgrade(socket: Duplex, error: SvcError): void {
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
function linkedAgent(link: string | undefined, options: HttpsAgentOptions): HttpsAgent {
  if (link === undefined) return new HttpsAgent(options);
  return new (class extends HttpsAgent {
    // Node's Agent uses a returned socket as the connection (the callback is for async creation).
    override createConnection(connect: TlsConnectionOptions): Duplex {
      return tlsConnect({ ...connect, path: link });
    }
  })(options);
}

export class Upstreams {
  readonly #options: AgentOptions;
  readonly #daemonAgent: HttpsAgent;
  readonly #daemonProxy: ProxyServer;
  readonly #issuerProxy: ProxyServer;
  /** The issuer origin each in-flight /auth request was sent to. */
  readonly #issuerOrigins = new WeakMap<IncomingMessage, string>();
  #relayKeyProblem = false;

  constructor(options: AgentOptions, metrics: AgentMetrics | undefined) {
    this.#options = options;
    const { limits, log } = options;
    // Upstream TLS verifies the daemon's certificate against the daemon's CA (or the system roots when
    // a configured certificate comes without a CA file). Bounded keep-alive pool.
    this.#daemonAgent = linkedAgent(options.daemonLink, {
      keepAlive: true,
      maxSockets: 256,
      maxFreeSockets: 32,
      ...(options.tls.ca === undefined ? {} : { ca: options.tls.ca }),
    });
    this.#daemonProxy = createProxyServer({
      target: options.daemonUrl,
      secure: true,
      agent: this.#daemonAgent,
      ...(options.tls.ca === undefined ? {} : { ca: options.tls.ca }),
      proxyTimeout: limits.requestTimeoutMs,
      connectTimeout: 5_000,
    });
    // The issuer sees its own host name (changeOrigin), so its documents name the issuer exactly as
    // discovery publishes it; its redirects to itself (any 3xx, including the 303 after the login
    // form, which the library's own rewrite skips) are moved to the agent's origin (issuerLocation).
    this.#issuerProxy = createProxyServer({
      changeOrigin: true,
      proxyTimeout: limits.requestTimeoutMs,
      connectTimeout: 5_000,
    });
    this.#issuerProxy.on('proxyRes', (proxyRes, req) => {
      const location = proxyRes.headers.location;
      const origin = this.#issuerOrigins.get(req);
      if (typeof location === 'string' && origin !== undefined)
        proxyRes.headers.location = issuerLocation(location, origin, req.headers.host);
    });
    for (const [upstream, proxy] of [
      ['daemon', this.#daemonProxy],
      ['issuer', this.#issuerProxy],
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
  }

  /** Forwards a request to svcd, relayed with the agent's process key. */
  daemon(req: IncomingMessage, res: ServerResponse): void {
    markForwarded(req, this.#options.processKey);
    this.#daemonProxy.web(req, res);
  }

  /** Forwards a WebSocket upgrade to svcd, relayed with the agent's process key. */
  daemonUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    markForwarded(req, this.#options.processKey);
    this.#daemonProxy.ws(req, socket, head);
  }

  /** Forwards a request to the built-in issuer with the relay key (never the process key). */
  async issuer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    markForwarded(req, await this.#relayKey());
    const origin = await this.#issuerOrigin();
    this.#issuerOrigins.set(req, origin);
    this.#issuerProxy.web(req, res, { target: origin });
  }

  close(): void {
    this.#daemonProxy.close();
    this.#issuerProxy.close();
  }

  /** Closes the pooled connections to svcd. */
  destroyPool(): void {
    this.#daemonAgent.destroy();
  }

  /** The issuer relay key, or undefined (then svc-identity sees every client as the agent's address). */
  async #relayKey(): Promise<string | undefined> {
    try {
      const key = await this.#options.issuerRelayKey?.();
      this.#relayKeyProblem = false;
      return key;
    } catch (error) {
      if (!this.#relayKeyProblem)
        this.#options.log(
          'warn',
          'cannot read the issuer relay key; client addresses are not forwarded to the issuer',
          { error: error instanceof Error ? error.message : String(error) },
        );
      this.#relayKeyProblem = true;
      return undefined;
    }
  }

  async #issuerOrigin(): Promise<string> {
    const issuerOrigin = this.#options.issuerOrigin;
    if (issuerOrigin === undefined)
      throw new SvcError(
        'external_identity_provider',
        'this svc uses an external identity provider (SVC_AUTH_MODE=external): the agent serves no /auth; sign in at the provider named by GET /svc/auth/config',
      );
    const origin = await issuerOrigin();
    if (origin === undefined)
      throw new SvcError(
        'upstream_unavailable',
        'the built-in identity provider has not reported its port yet',
      );
    return origin;
  }
}
