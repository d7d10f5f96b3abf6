// The agent's Prometheus side: its own registry (proxy counters, connections, the standard process
// metrics) and the exporter on SVC_METRICS_PORT, which scrapes svcd's GET /svc/metrics with the
// agent's process key and appends its own series. svcd's series are prefixed svc_/svcd_, the
// agent's svc_agent_ and the standard unprefixed process_/nodejs_, so names never collide.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Limits } from '@svc/platform/config';
import { PROCESS_KEY_HEADER } from '@svc/protocol';
import type { Log } from './agent.ts';

/** Bound of svcd's metrics text read by one scrape (one series per app and state: far below). */
const MAX_DAEMON_TEXT_BYTES = 16 * 1024 * 1024;
const SCRAPE_TIMEOUT_MS = 10_000;

export class AgentMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'svc_agent_requests_total',
    help: 'Requests handled by the agent, by upstream (daemon, issuer, web, refuse), transport and status',
    labelNames: ['upstream', 'transport', 'status'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'svc_agent_request_duration_seconds',
    help: 'Time from request to the end of the response, by upstream',
    labelNames: ['upstream'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly upstreamErrors = new Counter({
    name: 'svc_agent_upstream_errors_total',
    help: 'Requests and upgrades the agent could not forward (answered 502), by upstream',
    labelNames: ['upstream'] as const,
    registers: [this.registry],
  });
  readonly connections = new Gauge({
    name: 'svc_agent_connections',
    help: 'Open client connections of the agent listener (HTTPS and upgraded WSS)',
    registers: [this.registry],
  });
  readonly daemonUp = new Gauge({
    name: 'svc_agent_daemon_scrape_up',
    help: '1 when the last scrape of svcd GET /svc/metrics succeeded, else 0',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Count a plain HTTP request once its response is done. */
  observe(upstream: string, res: ServerResponse): void {
    const end = this.duration.startTimer({ upstream });
    res.once('close', () => {
      end();
      this.requests.inc({ upstream, transport: 'rest', status: String(res.statusCode) });
    });
  }

  createExporter(options: {
    daemonUrl: string;
    ca: string | undefined;
    processKey: string | undefined;
    limits: Limits;
    log: Log;
  }): Server {
    const server = createServer(
      { headersTimeout: options.limits.headersTimeoutMs, requestTimeout: options.limits.requestTimeoutMs },
      (req, res) => {
        const path = (req.url ?? '/').split('?', 1)[0];
        if (req.method !== 'GET' || path !== '/metrics') {
          const body = JSON.stringify({
            error: 'not_found',
            message: 'the exporter serves GET /metrics only',
          });
          res.writeHead(404, { 'content-type': 'application/json' }).end(body);
          return;
        }
        void this.#render(options).then(
          (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
          (error: unknown) => {
            options.log('error', 'metrics rendering failed', { error: String(error) });
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: 'internal', message: 'metrics rendering failed' }));
          },
        );
      },
    );
    server.maxConnections = 64;
    return server;
  }

  async #render(options: {
    daemonUrl: string;
    ca: string | undefined;
    processKey: string | undefined;
    log: Log;
  }): Promise<string> {
    let daemonText = '';
    try {
      daemonText = await scrapeDaemon(options.daemonUrl, options.ca, options.processKey);
      this.daemonUp.set(1);
    } catch (error) {
      this.daemonUp.set(0);
      options.log('warn', 'scrape of svcd /svc/metrics failed', { error: (error as Error).message });
    }
    const own = await this.registry.metrics();
    return daemonText === '' ? own : `${daemonText.replace(/\n*$/, '\n')}${own}`;
  }
}

/** GET {daemon}/svc/metrics with the agent's process key over a direct loopback connection. */
function scrapeDaemon(
  daemonUrl: string,
  ca: string | undefined,
  processKey: string | undefined,
): Promise<string> {
  if (processKey === undefined) return Promise.reject(new Error('no SVC_PROCESS_KEY (not run by svcd)'));
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL('/svc/metrics', daemonUrl),
      {
        method: 'GET',
        headers: { [PROCESS_KEY_HEADER]: processKey },
        timeout: SCRAPE_TIMEOUT_MS,
        ...(ca === undefined ? {} : { ca }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_DAEMON_TEXT_BYTES) {
            req.destroy(new Error('svcd metrics text exceeds its bound'));
            return;
          }
          chunks.push(chunk);
        });
        res.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) resolve(text);
          else reject(new Error(`svcd answered ${res.statusCode}: ${text.slice(0, 200)}`));
        });
        res.once('error', reject);
      },
    );
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.once('error', reject);
    req.end();
  });
}
