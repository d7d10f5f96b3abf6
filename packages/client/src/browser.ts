// @svc/client for browsers: fetch for REST, the browser WebSocket for WSS. No TCP.
// A browser WebSocket cannot set headers: the upgrade carries no bearer, and every frame carries
// it instead (the daemon authenticates each frame). The page's origin must be allowed to reach
// the daemon, and the daemon's CA must be trusted by the browser.
import { SvcClient } from './client.ts';
import type { DemultiplexerOptions } from './demux.ts';
import { FetchTransport } from './fetch-transport.ts';
import { runWorker as runWorkerWith, type RunWorkerOptions, type TaskHandler } from './worker.ts';
import { WS_SUBPROTOCOL, WssTransport, type WebSocketLike } from './ws-transport.ts';

export * from './common.ts';

export interface BrowserConnectOptions extends DemultiplexerOptions {
  url: string;
  /** Default 'rest'. */
  transport?: 'rest' | 'wss';
  token?: string;
  targetHost?: string;
}

export function connectWss(options: { url: string } & DemultiplexerOptions): Promise<WssTransport> {
  const url = options.url.replace(/^https:/, 'wss:').replace(/^http:/, 'ws:');
  return WssTransport.connect({
    ...options,
    open: () => new WebSocket(url, WS_SUBPROTOCOL) as unknown as WebSocketLike,
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
