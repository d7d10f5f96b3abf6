// What every TLS listener (svcd's REST/WSS and TCP ports, svc-agent's front door) does with a socket
// before and between requests: count it from accept (ConnectionGuard), destroy it when its TLS
// handshake fails or times out (never a half-close a departed peer would leave in CLOSE-WAIT), and
// close it when it stays idle. Persistent sessions (WSS, TCP) keep their own idle deadline
// (wire-session.ts); plain HTTP connections get one here.
import type { Server as HttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { ConnectionGuard, ConnectionSlot } from './connection-guard.ts';

export type ListenerLog = (
  level: 'debug' | 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

/**
 * A timer closing a connection after `ms` without activity. `touch()` on activity; while `busy()`
 * (a request in flight) an expiry only re-arms it.
 */
export class IdleDeadline {
  readonly #timer: NodeJS.Timeout;
  #stopped = false;

  constructor(ms: number, expire: () => void, busy: () => boolean) {
    this.#timer = setTimeout(() => {
      if (this.#stopped) return;
      if (busy()) this.#timer.refresh();
      else expire();
    }, ms);
    this.#timer.unref();
  }

  touch(): void {
    if (!this.#stopped) this.#timer.refresh();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}

/** Key shared by a raw accepted socket and the TLS socket wrapping it. */
function socketKey(socket: Socket | Duplex): string {
  const s = socket as Socket;
  return `${s.remoteAddress ?? 'unknown'}|${s.remotePort ?? 0}`;
}

export interface GuardedServer {
  /** The guard slot of a live connection (the raw socket's or its TLS socket's). */
  slotOf(socket: Socket | Duplex): ConnectionSlot | undefined;
  /** The connection sent its first request or frame (its first-request deadline is met). */
  active(socket: Socket | Duplex): void;
}

export interface GuardOptions {
  guard: ConnectionGuard;
  listener: string;
  log: ListenerLog;
  /**
   * From accept to the first request (HTTPS: a request head or an upgrade; TCP: a complete frame,
   * reported through `active`): a connection that has not sent one by then is destroyed
   * (`REST.Limits.HandshakeTimeoutMs`). The TLS handshake is part of it.
   */
  firstRequestMs: number;
  /** Sockets that are not counted nor given a deadline (svc-agent's own link). */
  exempt?: (socket: Socket) => boolean;
}

/**
 * Counts each socket of `server` from accept (over the guard's caps the oldest pending connection
 * makes room or the new one is refused, before any byte is parsed), destroys a socket whose TLS
 * handshake fails, and one that sends no first request within `firstRequestMs`.
 */
export function guardTlsServer(server: TlsServer, options: GuardOptions): GuardedServer {
  const slots = new Map<string, ConnectionSlot>();
  const deadlines = new Map<string, NodeJS.Timeout>();
  const active = (socket: Socket | Duplex): void => {
    const key = socketKey(socket);
    const timer = deadlines.get(key);
    if (timer === undefined) return;
    clearTimeout(timer);
    deadlines.delete(key);
  };
  server.on('connection', (socket: Socket) => {
    if (options.exempt?.(socket) === true) return;
    const remote = socket.remoteAddress ?? 'unknown';
    const slot = options.guard.admit(remote, () => {
      options.log('debug', 'connection closed to make room: oldest unauthenticated one under a full cap', {
        remote,
        listener: options.listener,
      });
      socket.destroy();
    });
    if (slot === undefined) {
      options.log('warn', 'connection refused: too many connections', { remote, listener: options.listener });
      socket.destroy();
      return;
    }
    const key = socketKey(socket);
    slots.set(key, slot);
    const timer = setTimeout(() => {
      deadlines.delete(key);
      options.log('debug', 'connection closed: no request within the handshake deadline', {
        remote,
        listener: options.listener,
      });
      socket.destroy();
    }, options.firstRequestMs);
    timer.unref();
    deadlines.set(key, timer);
    socket.once('close', () => {
      slot.release();
      active(socket);
      if (slots.get(key) === slot) slots.delete(key);
    });
  });
  server.on('tlsClientError', (error: Error & { code?: string }, socket: TLSSocket) => {
    options.log('debug', 'TLS handshake failed', {
      remote: socket.remoteAddress,
      listener: options.listener,
      error: error.code ?? error.message,
    });
    socket.destroy();
  });
  // An HTTPS server's first request or upgrade meets the deadline (a TCP server reports `active`).
  server.on('request', (req: IncomingMessage) => active(req.socket));
  server.on('upgrade', (req: IncomingMessage) => active(req.socket));
  return { slotOf: (socket) => slots.get(socketKey(socket)), active };
}

/** How long a refusal written to a misbehaving HTTP client may take before the socket is destroyed. */
const REFUSAL_GRACE_MS = 2_000;

/**
 * `clientError` of an HTTPS server: a malformed or timed-out request. A secure, writable socket gets
 * a short status line and is destroyed once written (or after a grace period if the peer does not
 * read); anything else is destroyed at once.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex, log: ListenerLog): void {
  const code = error.code;
  log('debug', 'malformed or timed-out HTTP request', {
    remote: (socket as Socket).remoteAddress,
    error: code ?? error.message,
  });
  const secure = (socket as Partial<TLSSocket>).encrypted === true && !socket.destroyed;
  const timedOut = code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_TLS_HANDSHAKE_TIMEOUT';
  if (!secure || !socket.writable || code === 'ECONNRESET' || code === 'EPIPE') {
    socket.destroy();
    return;
  }
  const [status, reason] =
    code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large']
      : timedOut
        ? [408, 'Request Timeout']
        : [400, 'Bad Request'];
  endThenDestroy(socket, `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/**
 * Writes a last answer and destroys the socket once it is written, or after a grace period when the
 * peer does not read: never a half-closed socket waiting on a peer that left.
 */
export function endThenDestroy(socket: Duplex, text: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const timer = setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS);
  timer.unref();
  socket.end(text, () => {
    clearTimeout(timer);
    socket.destroy();
  });
}

/**
 * After the last answer on a connection whose peer may still be sending (a request refused before
 * its body), Node would end the socket and destroy it at once, and the peer's next bytes would
 * draw a reset that can discard the answer before the peer reads it. Instead the socket is ended
 * and destroyed when the peer closes too, or after a grace period; what arrives meanwhile is
 * dropped by the caller (`req.resume()`), never kept.
 */
export function lingerAfterLastAnswer(socket: Duplex): void {
  (socket as Duplex & { destroySoon?: () => void }).destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  };
}

/**
 * Idle deadline of plain HTTP connections: a TLS connection that sends no request, or none for
 * `idleMs` after its last response, is closed; a request in flight (a long run-wait, a task) keeps it
 * open. An upgraded connection (WSS) leaves it to the session's own deadline.
 */
export function closeIdleHttpConnections(server: HttpsServer, idleMs: number): void {
  const states = new WeakMap<Duplex, { deadline: IdleDeadline; inFlight: number }>();
  server.on('secureConnection', (socket: TLSSocket) => {
    const state: { inFlight: number; deadline: IdleDeadline } = {
      inFlight: 0,
      deadline: new IdleDeadline(
        idleMs,
        () => socket.destroy(),
        () => state.inFlight > 0,
      ),
    };
    states.set(socket, state);
    socket.once('close', () => state.deadline.stop());
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = states.get(req.socket);
    if (state === undefined) return;
    state.inFlight++;
    state.deadline.touch();
    res.once('close', () => {
      state.inFlight--;
      state.deadline.touch();
    });
  });
  server.on('upgrade', (req: IncomingMessage) => states.get(req.socket)?.deadline.stop());
}
