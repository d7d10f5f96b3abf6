// Minimal raw clients for tests: HTTPS REST, TLS TCP (framed msgpack) and WSS (sub-protocol svc-ws).
// They speak the wire exactly and add nothing, so tests see what a real client library would.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { WebSocket } from 'ws';
import {
  CLIENT_MAX_BODY_BYTES,
  FrameDecoder,
  decodeResponse,
  encodeFrame,
  encodeRequest,
  WS_SUBPROTOCOL,
  type Request,
  type Response,
} from '@svc/protocol';

/** A transport-neutral result, so one test suite can run over REST, WSS and TCP alike. */
export interface CallResult {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  contentType: string;
  json<T = unknown>(): T;
  text(): string;
}

export interface CallOptions {
  token?: string | undefined;
  query?: Record<string, string>;
  body?: unknown;
  rawBody?: Buffer | string;
  headers?: Record<string, string>;
}

function result(
  status: number,
  headers: Record<string, string>,
  body: Buffer,
  contentType: string,
): CallResult {
  return {
    status,
    headers,
    body,
    contentType,
    json: <T>() => JSON.parse(body.toString('utf8')) as T,
    text: () => body.toString('utf8'),
  };
}

function requestParts(options: CallOptions): { body: Buffer; headers: Record<string, string> } {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  let body = Buffer.alloc(0);
  if (options.rawBody !== undefined) body = Buffer.from(options.rawBody);
  else if (options.body !== undefined) {
    body = Buffer.from(JSON.stringify(options.body));
    headers['content-type'] = 'application/json';
  }
  return { body, headers };
}

export interface ApiClient {
  readonly kind: 'rest' | 'wss' | 'tcp';
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  close(): Promise<void>;
}

export function restClient(baseUrl: string, ca: string): ApiClient {
  return {
    kind: 'rest',
    call(method, path, options = {}) {
      const { body, headers } = requestParts(options);
      const query = options.query === undefined ? '' : `?${new URLSearchParams(options.query).toString()}`;
      const url = new URL(baseUrl);
      return new Promise((resolve, reject) => {
        const req = httpsRequest(
          {
            host: url.hostname,
            port: url.port,
            method,
            path: path + query,
            headers: {
              ...headers,
              'content-length': String(body.length),
              ...(body.length > 1024 * 1024 ? { expect: '100-continue' } : {}),
            },
            ca,
            agent: false,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const h: Record<string, string> = {};
              for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h[k] = v;
              resolve(result(res.statusCode ?? 0, h, Buffer.concat(chunks), h['content-type'] ?? ''));
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        // Like curl, announce a large body with `Expect: 100-continue` and send it only when the
        // server agrees; a server that refuses early (413) never receives it.
        if (body.length > 1024 * 1024) req.on('continue', () => req.end(body));
        else req.end(body);
      });
    },
    async close() {},
  };
}

/** Shared request/response matching of the persistent transports; pushes go to `onPush`. */
class Pending {
  readonly waiters = new Map<string, { resolve: (r: Response) => void; reject: (e: Error) => void }>();
  readonly pushes: Response[] = [];
  onPush: ((r: Response) => void) | undefined;

  deliver(response: Response): void {
    const waiter = this.waiters.get(response.uuid);
    if (waiter !== undefined) {
      this.waiters.delete(response.uuid);
      waiter.resolve(response);
    } else {
      this.pushes.push(response);
      this.onPush?.(response);
    }
  }

  fail(error: Error): void {
    for (const waiter of this.waiters.values()) waiter.reject(error);
    this.waiters.clear();
  }

  register(uuid: string): Promise<Response> {
    return new Promise((resolve, reject) => this.waiters.set(uuid, { resolve, reject }));
  }
}

function wireRequest(method: string, path: string, options: CallOptions): Request {
  const { body, headers } = requestParts(options);
  return {
    uuid: randomUUID(),
    request_uri: path,
    http_method: method,
    client_addr: '',
    headers,
    query: options.query ?? {},
    body,
  };
}

function wireResult(response: Response): CallResult {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(response.headers)) headers[k.toLowerCase()] = v;
  return result(response.http_status, headers, Buffer.from(response.body), response.body_msg_type);
}

export interface PersistentClient extends ApiClient {
  /** Pushes received so far (responses with no pending request). */
  readonly pushes: Response[];
  /** Send raw bytes (frames or garbage) for bad-input tests. */
  sendRaw(bytes: Buffer): void;
  /** Resolves when the server closes the connection. */
  readonly closed: Promise<void>;
}

export async function tcpClient(host: string, port: number, ca: string): Promise<PersistentClient> {
  const socket: TLSSocket = connect({ host, port, ca, servername: host === '127.0.0.1' ? undefined : host });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  const pending = new Pending();
  const decoder = new FrameDecoder({ maxBodyBytes: CLIENT_MAX_BODY_BYTES });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('data', (chunk: Buffer) => {
    for (const body of decoder.push(chunk)) pending.deliver(decodeResponse(body));
  });
  socket.on('error', () => {});
  void closed.then(() => pending.fail(new Error('connection closed')));
  return {
    kind: 'tcp',
    pushes: pending.pushes,
    closed,
    async call(method, path, options = {}) {
      const message = wireRequest(method, path, options);
      const response = pending.register(message.uuid);
      socket.write(encodeFrame(encodeRequest(message)));
      return wireResult(await response);
    },
    sendRaw(bytes) {
      socket.write(bytes);
    },
    async close() {
      socket.destroy();
      await closed;
    },
  };
}

export async function wsClient(
  baseUrl: string,
  ca: string,
  token?: string,
  upgradeHeaders: Record<string, string> = {},
): Promise<PersistentClient> {
  const url = baseUrl.replace(/^https:/, 'wss:');
  const ws = new WebSocket(url, WS_SUBPROTOCOL, {
    ca,
    headers: { ...upgradeHeaders, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  const pending = new Pending();
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  void closed.then(() => pending.fail(new Error('connection closed')));
  ws.on('message', (data: Buffer) => pending.deliver(decodeResponse(data)));
  ws.on('error', () => {});
  return {
    kind: 'wss',
    pushes: pending.pushes,
    closed,
    async call(method, path, options = {}) {
      const message = wireRequest(method, path, options);
      const response = pending.register(message.uuid);
      ws.send(encodeRequest(message));
      return wireResult(await response);
    },
    sendRaw(bytes) {
      ws.send(bytes);
    },
    async close() {
      ws.close();
      await closed;
    },
  };
}

/** A WSS connection that completed its upgrade, with the sub-protocol the server selected. */
export interface UpgradedWebSocket {
  ws: WebSocket;
  selected: string | undefined;
}

/**
 * Opens a raw WSS connection to `baseUrl` (https: or wss:) offering `protocols`, for tests of the
 * upgrade itself. A refused upgrade rejects with an Error naming the status, carrying `status`,
 * `headers` and the response `body`.
 */
export function openWebSocket(
  baseUrl: string,
  ca: string,
  protocols: string[],
  headers: Record<string, string> = {},
): Promise<UpgradedWebSocket> {
  const ws = new WebSocket(baseUrl.replace(/^https:/, 'wss:'), protocols, { ca, headers });
  return new Promise((resolve, reject) => {
    let selected: string | undefined;
    ws.once('upgrade', (res: IncomingMessage) => {
      selected = res.headers['sec-websocket-protocol'];
    });
    ws.once('open', () => resolve({ ws, selected }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const refusal: { status: number | undefined; headers: IncomingHttpHeaders; body: string } = {
          status: res.statusCode,
          headers: res.headers,
          body,
        };
        reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), refusal));
      });
    });
  });
}
