// A TLS TCP client of svcd (framed msgpack) that hands every push to a callback as it is decoded,
// instead of collecting it (the testkit's client keeps every push, too much for 10^5–10^6 events).
import { randomUUID } from 'node:crypto';
import { connect } from 'node:tls';
import {
  CLIENT_MAX_BODY_BYTES,
  EVENT_REQUEST_URI,
  FrameDecoder,
  decodeResponse,
  encodeFrame,
  encodeRequest,
  type Response,
} from '@svc/protocol';

export interface PushClient {
  call(
    method: string,
    path: string,
    token: string,
    options?: { query?: Record<string, string>; body?: unknown; rawBody?: Buffer },
  ): Promise<Response>;
  close(): Promise<void>;
}

/** `onPush(push)` runs for every `/svc/event` Response, synchronously from the socket's data handler. */
export async function pushClient(port: number, ca: string, onPush: (push: Response) => void): Promise<PushClient> {
  const socket = connect({ host: '127.0.0.1', port, ca });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  socket.setNoDelay(true);
  const waiters = new Map<string, { resolve: (r: Response) => void; reject: (e: Error) => void }>();
  const decoder = new FrameDecoder({ maxBodyBytes: CLIENT_MAX_BODY_BYTES });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void closed.then(() => {
    for (const w of waiters.values()) w.reject(new Error('connection closed'));
    waiters.clear();
  });
  socket.on('error', () => {});
  socket.on('data', (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) {
      const response = decodeResponse(frame);
      const waiter = waiters.get(response.uuid);
      if (waiter !== undefined) {
        waiters.delete(response.uuid);
        waiter.resolve(response);
      } else if (response.request_uri === EVENT_REQUEST_URI) onPush(response);
    }
  });
  return {
    call(method, path, token, options = {}) {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      let body = options.rawBody ?? Buffer.alloc(0);
      if (options.body !== undefined) {
        body = Buffer.from(JSON.stringify(options.body));
        headers['content-type'] = 'application/json';
      }
      const uuid = randomUUID();
      const answer = new Promise<Response>((resolve, reject) => waiters.set(uuid, { resolve, reject }));
      socket.write(
        encodeFrame(
          encodeRequest({ uuid, request_uri: path, http_method: method, client_addr: '', headers, query: options.query ?? {}, body }),
        ),
      );
      return answer;
    },
    async close() {
      socket.destroy();
      await closed;
    },
  };
}

/** Throws unless the wire response is 2xx. */
export function okPush(response: Response, what: string): Response {
  if (response.http_status < 200 || response.http_status > 299)
    throw new Error(`${what}: HTTP ${response.http_status} ${Buffer.from(response.body).toString('utf8').slice(0, 300)}`);
  return response;
}
