// TLS TCP API: 8-byte header (magic 0x07C707F8, big-endian body length) + msgpack body. A bad
// magic, an oversized length or an undecodable message closes that connection only, after logging.
// Each header is admitted against the in-flight budgets (inflight-budget.ts) before a byte of its
// body is kept: above what the connection's payer could ever have in flight it closes the
// connection; when it only does not fit now, the socket is not read until it does.
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { FrameError, encodeFrameHeader } from '@svc/protocol';
import { BudgetedFrames, type DecodedFrame } from './budgeted-frames.ts';
import type { InflightBudget } from './inflight-budget.ts';
import type { Dispatch } from '../api/dispatcher.ts';
import type { Limits } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import type { TlsMaterial } from '@svc/platform/tls';
import { guardTlsServer, type ConnectionGuard } from '@svc/platform/connections';
import { loggerAsListenerLog } from './rest-transport.ts';
import { WireSession, payerOf, preAuthFrameBytes } from './wire-session.ts';
import { turnWriteBatch } from './write-batch.ts';

export interface TcpTransportOptions {
  tls: TlsMaterial;
  dispatch: Dispatch;
  limits: Limits;
  guard: ConnectionGuard;
  budget: InflightBudget;
  logger: Logger;
}

export function createTcpServer(options: TcpTransportOptions): Server {
  const { limits, guard, budget, logger } = options;
  const server = createServer({
    key: options.tls.key,
    cert: options.tls.cert,
    minVersion: 'TLSv1.2',
    handshakeTimeout: limits.handshakeTimeoutMs,
  });
  refuseSessionTickets(server);
  server.maxConnections = limits.maxConnections;
  // Counted from accept; a handshake that fails, or no complete frame within the handshake
  // deadline, destroys the socket.
  const guarded = guardTlsServer(server, {
    guard,
    listener: 'tcp',
    log: loggerAsListenerLog(logger),
    firstRequestMs: limits.handshakeTimeoutMs,
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    const remote = socket.remoteAddress ?? 'unknown';
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    // Reading stops while the session has too many requests in flight or a frame waits for budget.
    const stops = { session: false, budget: false };
    const syncReading = (): void => {
      if (socket.destroyed) return;
      if (stops.session || stops.budget) socket.pause();
      else socket.resume();
    };
    const hold = turnWriteBatch(socket);
    const session: WireSession = new WireSession({
      transport: 'tcp',
      rawFrames: true,
      maxStreamedBodyBytes: limits.maxBodyBytes,
      remoteAddress: remote,
      dispatch: options.dispatch,
      logger,
      idleTimeoutMs: limits.idleTimeoutMs,
      onAuthenticated: () => {
        frames.raiseCap(limits.maxFrameBytes);
        guarded.slotOf(socket)?.establish();
      },
      sink: {
        // The writes of one event-loop turn leave together (write-batch.ts).
        write: (bytes) => {
          hold();
          socket.write(encodeFrameHeader(bytes.byteLength));
          socket.write(bytes);
        },
        writeParts: (parts) => {
          hold();
          socket.write(encodeFrameHeader(parts.reduce((sum, part) => sum + part.byteLength, 0)));
          for (const part of parts) socket.write(part);
        },
        bufferedBytes: () => socket.writableLength,
        pause: () => {
          stops.session = true;
          syncReading();
        },
        resume: () => {
          stops.session = false;
          syncReading();
        },
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
    // Small frames until the connection authenticates (bearer or process key), then the limit.
    const frames: BudgetedFrames = new BudgetedFrames({
      budget,
      payer: () => ({ connection: session.id, principal: payerOf(session), address: remote }),
      maxBodyBytes: preAuthFrameBytes(limits),
      hold: (waiting) => {
        stops.budget = waiting;
        syncReading();
      },
      deliver: (next) => decode(next),
    });
    // A peer that starts a frame and then stalls is cut off after the request timeout (also while
    // svcd does not read because the peer does not read its answers). Time a frame waits for budget
    // is not the peer's: the bytes it waits for are held by frames under this same deadline.
    let partialSince: number | undefined;
    const stallTimer = setInterval(
      () => {
        if (partialSince !== undefined && stops.budget) partialSince = Date.now();
        else if (partialSince !== undefined && Date.now() - partialSince > limits.requestTimeoutMs) {
          logger.warn('closing connection stalled mid-frame', { remote });
          socket.destroy();
        }
      },
      Math.min(limits.requestTimeoutMs, 5_000),
    );
    stallTimer.unref();
    const decode = (next: () => DecodedFrame[]): void => {
      let decoded: DecodedFrame[];
      try {
        decoded = next();
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
      if (decoded.length > 0) guarded.active(socket);
      for (const { body, release } of decoded) session.receive(body, release);
      partialSince = frames.bufferedBytes > 0 ? (partialSince ?? Date.now()) : undefined;
    };
    socket.on('data', (chunk: Buffer) => decode(() => frames.push(chunk)));
    socket.on('error', (error) => logger.debug('TCP socket error', { remote, error }));
    socket.once('close', () => {
      clearInterval(stallTimer);
      frames.close();
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
