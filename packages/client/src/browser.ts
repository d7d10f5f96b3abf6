// @svc/client for browsers: fetch for REST, the browser WebSocket for WSS. No TCP.
// A browser WebSocket cannot set headers: the bearer is offered at upgrade as the sub-protocol entry
// `svc-bearer.<token>` next to `svc-ws` (the daemon verifies it and pins the principal; it selects
// only `svc-ws`), and every frame carries it too. The daemon's CA must be trusted by the browser.
// REST (fetch) from a page on another origin is blocked: the daemon serves no CORS headers.
import { SvcClient } from './client.ts';
import type { DemultiplexerOptions } from './demux.ts';
import { FetchTransport } from './fetch-transport.ts';
import { runWorker as runWorkerWith, type RunWorkerOptions, type TaskHandler } from './worker.ts';
import { WssTransport, wsSubprotocols, type WebSocketLike } from './ws-transport.ts';

export * from './common.ts';

export interface BrowserConnectOptions extends DemultiplexerOptions {
  url: string;
  /** Default 'rest'. */
  transport?: 'rest' | 'wss';
  token?: string;
  targetHost?: string;
}

/** Opens a WSS transport; `token` is offered at upgrade as `svc-bearer.<token>` (see wsSubprotocols). */
export function connectWss(
  options: { url: string; token?: string } & DemultiplexerOptions,
): Promise<WssTransport> {
  const url = options.url.replace(/^https:/, 'wss:').replace(/^http:/, 'ws:');
  const protocols = wsSubprotocols(options.token);
  return WssTransport.connect({
    ...options,
    open: () => new WebSocket(url, protocols) as unknown as WebSocketLike,
  });
}

export async function connect(options: BrowserConnectOptions): Promise<SvcClient> {
  const transport =
    (options.transport ?? 'rest') === 'wss'
      ? await connectWss(options)
      : new FetchTransport({ baseUrl: options.url });
  return new SvcClient({
    transport,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.targetHost === undefined ? {} : { targetHost: options.targetHost }),
  });
}

export function runWorker(handler: TaskHandler, options: RunWorkerOptions = {}): Promise<null> {
  return runWorkerWith(handler, { transport: (baseUrl) => new FetchTransport({ baseUrl }), ...options });
}
