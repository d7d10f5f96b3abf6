// TLS TCP API: 8-byte header (magic 0x07C707F8, big-endian body length) + msgpack body. A bad
// magic, an oversized length or an undecodable message closes that connection only, after logging.
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { FrameDecoder, FrameError, encodeFrameHeader } from '@svc/protocol';
import type { Dispatch } from '../api/dispatcher.ts';
import type { Limits } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { TlsMaterial } from '../tls/certificates.ts';
import type { ConnectionGuard } from './connection-guard.ts';
import { guardTlsServer } from './connection-deadlines.ts';
import { loggerAsListenerLog } from './rest-transport.ts';
import { WireSession, preAuthFrameBytes } from './wire-session.ts';
import { turnWriteBatch } from './write-batch.ts';

export interface TcpTransportOptions {
  tls: TlsMaterial;
  dispatch: Dispatch;
  limits: Limits;
  guard: ConnectionGuard;
  logger: Logger;
}

export function createTcpServer(options: TcpTransportOptions): Server {
  const { limits, guard, logger } = options;
  const server = createServer({
    key: options.tls.key,
    cert: options.tls.cert,
    minVersion: 'TLSv1.2',
    handshakeTimeout: limits.headersTimeoutMs,
  });
  server.maxConnections = limits.maxConnections;
  // Counted from accept; a handshake that fails or exceeds handshakeTimeout destroys the socket.
  guardTlsServer(server, { guard, listener: 'tcp', log: loggerAsListenerLog(logger) });
  server.on('secureConnection', (socket: TLSSocket) => {
    const remote = socket.remoteAddress ?? 'unknown';
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    // Small frames until the connection authenticates (bearer or process key), then the limit.
    const decoder = new FrameDecoder({ maxBodyBytes: preAuthFrameBytes(limits) });
    const hold = turnWriteBatch(socket);
    const session = new WireSession({
      transport: 'tcp',
      remoteAddress: remote,
      dispatch: options.dispatch,
      logger,
      idleTimeoutMs: limits.idleTimeoutMs,
      onAuthenticated: () => (decoder.maxBodyBytes = limits.maxFrameBytes),
      sink: {
        // The writes of one event-loop turn leave together (write-batch.ts).
        write: (bytes) => {
          hold();
          socket.write(encodeFrameHeader(bytes.byteLength));
          socket.write(bytes);
        },
        bufferedBytes: () => socket.writableLength,
        pause: () => socket.pause(),
        resume: () => socket.resume(),
        close: () => socket.destroy(),
        drained: () =>
          new Promise((resolve) => {
            if (socket.writableLength === 0 || socket.destroyed) resolve();
            else {
              socket.once('drain', resolve);
              socket.once('close', resolve);
            }
          }),
      },
    });
    // A peer that starts a frame and then stalls is cut off after the request timeout.
    let partialSince: number | undefined;
    const stallTimer = setInterval(
      () => {
        if (partialSince !== undefined && Date.now() - partialSince > limits.requestTimeoutMs) {
          logger.warn('closing connection stalled mid-frame', { remote });
          socket.destroy();
        }
      },
      Math.min(limits.requestTimeoutMs, 5_000),
    );
    stallTimer.unref();
    socket.on('data', (chunk: Buffer) => {
      let bodies: Buffer[];
      try {
        bodies = decoder.push(chunk);
      } catch (error) {
        const reason = error instanceof FrameError ? error.reason : 'invalid_frame';
        logger.warn('rejected TCP frame; closing connection', {
          remote,
          reason,
          detail: (error as Error).message,
        });
        socket.destroy();
        return;
      }
      for (const body of bodies) session.receive(body);
      partialSince = decoder.bufferedBytes > 0 ? (partialSince ?? Date.now()) : undefined;
    });
    socket.on('error', (error) => logger.debug('TCP socket error', { remote, error }));
    socket.once('close', () => {
      clearInterval(stallTimer);
      session.markClosed();
    });
  });
  return server;
}
