// Observation points of the forwarding tests: a listening socket that only counts accepted
// connections (proves that a refusal happened before any connection was opened), a TLS TCP API
// stand-in that records the requests it receives (proves what a target sees), and a free port.
import { readFile } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { FrameDecoder, decodeRequest, encodeFrame, encodeResponse, type Request } from '@svc/protocol';

export interface AcceptRecorder {
  readonly address: string;
  accepts(): number;
  close(): Promise<void>;
}

/** A plain TCP listener that counts accepts and closes each connection at once. */
export async function acceptRecorder(): Promise<AcceptRecorder> {
  let count = 0;
  const server = createNetServer((socket) => {
    count++;
    socket.destroy();
  });
  const port = await listen(server);
  return {
    address: `127.0.0.1:${port}`,
    accepts: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface RecordingTarget {
  readonly address: string;
  readonly requests: Request[];
  close(): Promise<void>;
}

/**
 * A TLS TCP API stand-in with a real daemon's certificate (`work/ssl` of `workDir`): records every
 * request and answers 200 `{"recorded": true}`.
 */
export async function recordingTarget(workDir: string): Promise<RecordingTarget> {
  const requests: Request[] = [];
  const server = createTlsServer({
    cert: await readFile(join(workDir, 'ssl', 'server.pem')),
    key: await readFile(join(workDir, 'ssl', 'server-key.pem')),
  });
  const sockets = new Set<TLSSocket>();
  server.on('secureConnection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const decoder = new FrameDecoder();
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      for (const body of decoder.push(chunk)) {
        const request = decodeRequest(body);
        requests.push(request);
        socket.write(
          encodeFrame(
            encodeResponse({
              uuid: request.uuid,
              request_uri: request.request_uri,
              http_status: 200,
              body_msg_type: 'application/json',
              headers: {},
              body: Buffer.from('{"recorded":true}'),
            }),
          ),
        );
      }
    });
  });
  const port = await listen(server);
  return {
    address: `127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** A TCP listener that accepts and then says nothing (a TLS handshake never completes). */
export async function silentListener(): Promise<AcceptRecorder> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  const port = await listen(server);
  return {
    address: `127.0.0.1:${port}`,
    accepts: () => count,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}
