// A scripted svc TCP server for the timing-sensitive demultiplexer tests: a real local TLS socket
// that speaks the framing and msgpack of the daemon, whose every answer the test decides.
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { selfSignedCertificate } from '@svc/testkit';
import {
  FrameDecoder,
  decodeRequest,
  encodeFrame,
  encodeResponse,
  EVENT_REQUEST_URI,
  type Request,
  type Response,
} from '@svc/protocol';

export interface ScriptedConnection {
  /** Sends one Response frame. */
  send(response: Response): void;
  /** Sends bytes as they are (several frames in one write, garbage...). */
  sendRaw(bytes: Buffer): void;
  /** Resets the connection (the client sees a disconnect). */
  destroy(): void;
}

export interface FakeServer extends AsyncDisposable {
  readonly port: number;
  readonly ca: string;
  /** Requests received so far, in order. */
  readonly requests: Request[];
  /** Called for every request; the test answers through `connection` (or not at all). */
  onRequest: (request: Request, connection: ScriptedConnection) => void;
  /** Resolves with the next connection accepted. */
  nextConnection(): Promise<ScriptedConnection>;
  close(): Promise<void>;
}

export function response(request: Request, status: number, body: unknown): Response {
  return {
    uuid: request.uuid,
    request_uri: request.request_uri,
    http_status: status,
    body_msg_type: 'application/json',
    headers: {},
    body: Buffer.from(JSON.stringify(body)),
  };
}

export function push(
  subscriptionId: string,
  sequence: number,
  eventType = 'STDOUT',
  data: object = {},
): Response {
  return {
    uuid: crypto.randomUUID(),
    request_uri: EVENT_REQUEST_URI,
    http_status: 200,
    body_msg_type: 'application/json',
    headers: { 'X-Subscription-Id': subscriptionId, 'X-Event-Type': eventType, 'X-App-Name': 'app' },
    body: Buffer.from(
      JSON.stringify({
        subscription_id: subscriptionId,
        event_type: eventType,
        app_name: 'app',
        timestamp: Date.now(),
        sequence,
        data,
      }),
    ),
  };
}

export function frame(message: Response): Buffer {
  return encodeFrame(encodeResponse(message));
}

let certificate: Promise<{ key: string; cert: string }> | undefined;

export async function startFakeServer(): Promise<FakeServer> {
  certificate ??= selfSignedCertificate('svc fake server');
  const { key, cert } = await certificate;
  const sockets = new Set<TLSSocket>();
  const waiting: ((c: ScriptedConnection) => void)[] = [];
  const accepted: ScriptedConnection[] = [];
  const server: Server = createServer({ key, cert }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.setNoDelay(true);
    const connection: ScriptedConnection = {
      send: (message) => socket.write(frame(message)),
      sendRaw: (bytes) => socket.write(bytes),
      destroy: () => socket.destroy(),
    };
    const decoder = new FrameDecoder();
    socket.on('data', (chunk: Buffer) => {
      for (const body of decoder.push(chunk)) {
        const request = decodeRequest(body);
        fake.requests.push(request);
        fake.onRequest(request, connection);
      }
    });
    const waiter = waiting.shift();
    if (waiter !== undefined) waiter(connection);
    else accepted.push(connection);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const fake: FakeServer = {
    port: address.port,
    ca: cert,
    requests: [],
    onRequest: () => {},
    nextConnection: () => {
      const ready = accepted.shift();
      return ready !== undefined ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    [Symbol.asyncDispose]: () => fake.close(),
  };
  return fake;
}
