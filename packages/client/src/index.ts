// @svc/client for Node: HTTPS REST (node:https), TCP TLS and WSS (the `ws` package) transports.
import { TARGET_HOST_HEADER } from '@svc/protocol';
import { WebSocket as NodeWebSocket } from 'ws';
import { SvcClient } from './client.ts';
import type { DemultiplexerOptions } from './demux.ts';
import { RestTransport } from './rest-transport.ts';
import { TcpTransport } from './tcp-transport.ts';
import type { Transport } from './transport.ts';
import { runWorker as runWorkerWith, type RunWorkerOptions, type TaskHandler } from './worker.ts';
import { WS_SUBPROTOCOL, WssTransport, type WebSocketLike } from './ws-transport.ts';

export * from './common.ts';
export { RestTransport } from './rest-transport.ts';
export type { RestTransportOptions } from './rest-transport.ts';
export { TcpTransport } from './tcp-transport.ts';
export type { TcpTransportOptions } from './tcp-transport.ts';

export interface ConnectOptions extends DemultiplexerOptions {
  /** REST/WSS base, `https://host:port` (daemon 6058 or agent 6060). */
  url: string;
  /** Default 'rest'. Subscriptions and waitForAsyncRun need 'tcp' or 'wss'. */
  transport?: 'rest' | 'tcp' | 'wss';
  /** TCP API port (default 6059); the host is the url's. */
  tcpPort?: number;
  /** PEM of the CA to trust (the daemon's generated CA); default the system store + NODE_EXTRA_CA_CERTS. */
  ca?: string | Buffer;
  token?: string;
  /** Forward every request to this instance (`host[:port]` of its TCP API) through the gateway at `url`. */
  targetHost?: string;
}

/** Opens a WSS connection (Node): the bearer and X-Target-Host go in the upgrade and in every frame. */
export function connectWss(
  options: {
    url: string;
    ca?: string | Buffer;
    token?: string;
    targetHost?: string;
  } & DemultiplexerOptions,
): Promise<WssTransport> {
  const url = options.url.replace(/^https:/, 'wss:').replace(/^http:/, 'ws:');
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  if (options.targetHost !== undefined) headers[TARGET_HOST_HEADER] = options.targetHost;
  return WssTransport.connect({
    ...options,
    open: () =>
      new NodeWebSocket(url, WS_SUBPROTOCOL, {
        headers,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      }) as unknown as WebSocketLike,
  });
}

/** Connects a client over the chosen transport. */
export async function connect(options: ConnectOptions): Promise<SvcClient> {
  const url = new URL(options.url);
  let transport: Transport;
  switch (options.transport ?? 'rest') {
    case 'rest':
      transport = new RestTransport({
        baseUrl: options.url,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      });
      break;
    case 'tcp':
      transport = await TcpTransport.connect({
        ...options,
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: options.tcpPort ?? 6059,
      });
      break;
    case 'wss':
      transport = await connectWss(options);
      break;
  }
  return new SvcClient({
    transport,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.targetHost === undefined ? {} : { targetHost: options.targetHost }),
  });
}

/**
 * The worker loop for a managed process (Node): reads SVC_PROCESS_KEY, SVC_APPLICATION_NAME and
 * SVC_DAEMON_URL, talks HTTPS to SVC_DAEMON_URL trusting `ca` (or NODE_EXTRA_CA_CERTS).
 */
export function runWorker(
  handler: TaskHandler,
  options: RunWorkerOptions & { ca?: string | Buffer } = {},
): Promise<null> {
  const { ca, ...rest } = options;
  return runWorkerWith(handler, {
    transport: (baseUrl) => new RestTransport({ baseUrl, ...(ca === undefined ? {} : { ca }) }),
    ...rest,
  });
}
