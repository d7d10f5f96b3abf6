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
  refuseSessionTickets(server);
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

/** The native secure context's ticket-key hook (Node's own; see refuseSessionTickets). */
interface TicketKeyHook {
  enableTicketKeyCallback(): void;
  onticketkeycallback: (name: Buffer, iv: Buffer, encrypt: boolean) => [number, ...Buffer[]];
}

const NO_KEY = Buffer.alloc(16);

/**
 * The TCP listener issues no TLS session tickets. A TLS 1.3 server sends its tickets after the
 * handshake, and a client whose reader thread runs SSL_read while another thread writes its first
 * request breaks OpenSSL's one-thread-per-connection rule exactly then: App Mesh 3.0's Python SDK
 * does this on every subscribing TCP connection (its reader starts before the first request), and
 * about 3 % of those connections failed (bad record MAC, unexpected message, or a lost answer).
 * Without tickets nothing arrives after the handshake but answers. A TCP connection is long-lived,
 * so resumption bought nothing. Node has no option for OpenSSL's ticket count, so the context's
 * ticket-key callback declines every ticket (0: do not issue, do not accept; a client offering one
 * gets a full handshake). The callback must answer an array of the status and four 16-byte
 * buffers (Node checks their types). test/security/l3-tcp-no-session-tickets.test.ts proves it.
 */
function refuseSessionTickets(server: Server): void {
  // `_sharedCreds` is the server's SecureContext (Node's own tests use it the same way).
  const context = (server as unknown as { _sharedCreds: { context: TicketKeyHook } })._sharedCreds.context;
  context.enableTicketKeyCallback();
  context.onticketkeycallback = () => [0, NO_KEY, NO_KEY, NO_KEY, NO_KEY];
}
