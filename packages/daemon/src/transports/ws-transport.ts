// WSS on the REST port: an upgrade with sub-protocol `svc-ws`, then one msgpack Request per binary
// frame and one Response (or server push) per binary frame back. The bearer presented at upgrade is
// verified before the upgrade completes and pins the connection's principal. It comes from the
// `Authorization` header or, for browsers (whose WebSocket cannot set headers), from a sub-protocol
// entry `svc-bearer.<token>` offered together with `svc-ws`; the server selects only `svc-ws` and
// never logs or echoes the offered entries.
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { SvcError, WS_BEARER_PREFIX, WS_SUBPROTOCOL } from '@svc/protocol';
import type { Authenticator, Dispatch } from '../api/dispatcher.ts';
import type { Limits } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import { connectionRemoteAddress } from '../auth/process-key.ts';
import { AGENT_LINK_ADDRESS, isAgentLink, relayedPeer, type AgentKeyCheck } from './agent-relay.ts';
import { endThenDestroy, type ConnectionGuard, type GuardedServer } from '@svc/platform/connections';
import type { InflightBudget, Reservation } from './inflight-budget.ts';
import { WireSession, payerOf, preAuthFrameBytes } from './wire-session.ts';
import { turnWriteBatch } from './write-batch.ts';

export interface WsTransportOptions {
  dispatch: Dispatch;
  /** The bearer check of an upgrade. */
  auth: Pick<Authenticator, 'authenticate'>;
  limits: Limits;
  logger: Logger;
  /**
   * Checks an upgrade's X-Target-Host (the default target of its frames) before the upgrade is
   * accepted; throws SvcError to refuse it (forwarding/: malformed or not an allowed target).
   */
  checkTargetHost?: (header: string) => void;
  /** Recognises svc-agent's key on relayed upgrades (agent-relay.ts). */
  checkAgentKey?: AgentKeyCheck;
  /** The REST listener's connection accounting: a relayed session is counted against its client. */
  guarded?: GuardedServer;
  /**
   * svc-agent's own link (no slot of its own): a relayed session takes a new slot of this guard for
   * its client's address.
   */
  linkGuard?: ConnectionGuard;
  budget: InflightBudget;
}

/** The TLS socket under a server-side WebSocket (a ws internal; undefined if that ever changes). */
function rawSocketOf(ws: WebSocket): Duplex | undefined {
  const socket = (ws as unknown as { _socket?: unknown })._socket;
  return socket instanceof Duplex ? socket : undefined;
}

/**
 * Lets `admit(fragmentBytes, messageBytes)` decide each data frame from its header, before ws keeps
 * a byte of its payload: false closes the session with 1009. `ws` fixes maxPayload per server; its
 * receiver compares each frame's running message length with the private `_maxPayload`, read once
 * per data frame with a payload (ws 8: `Receiver#haveLength`), so a getter there decides per frame.
 * False when this `ws` has no such field (the caller then keeps the server-wide limit; the
 * reliability tests would notice).
 */
function admitFrames(ws: WebSocket, admit: (fragmentBytes: number, messageBytes: number) => boolean): boolean {
  const receiver = (ws as unknown as { _receiver?: Record<string, unknown> })._receiver;
  if (receiver === undefined || typeof receiver['_maxPayload'] !== 'number') return false;
  Object.defineProperty(receiver, '_maxPayload', {
    configurable: true,
    get: () => {
      const message = Number(receiver['_totalPayloadLength']);
      const fragment = Number(receiver['_payloadLength']);
      // ws refuses when the message length exceeds this value (and treats 0 as "no limit").
      return admit(fragment, message) ? Math.max(message, 1) : Math.max(message - 1, 1);
    },
    set: () => undefined,
  });
  return true;
}

export function attachWsTransport(server: Server, options: WsTransportOptions): WebSocketServer {
  const { limits, logger } = options;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxFrameBytes,
    perMessageDeflate: false,
    handleProtocols: (protocols) => (protocols.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void upgrade(req, socket, head);
  });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const reject = (status: number, reason: string): void => {
      endThenDestroy(
        socket,
        `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
      );
    };
    const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    if (!protocols.includes(WS_SUBPROTOCOL)) {
      reject(400, 'Bad Request');
      return;
    }
    const targetHost = singleHeader(req.headers['x-target-host']);
    if (targetHost !== undefined && options.checkTargetHost !== undefined) {
      try {
        options.checkTargetHost(targetHost);
      } catch (error) {
        if (!(error instanceof SvcError)) throw error;
        const body = JSON.stringify(error.toBody());
        endThenDestroy(
          socket,
          `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\nConnection: close\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        return;
      }
    }
    const peer = relayedPeer(socketAddressOf(req), req.headers, options.checkAgentKey);
    // Counted against the agent's client (not the agent's loopback address or link) from now on.
    let slot = options.guarded?.slotOf(req.socket);
    if (peer.relayedByAgent) {
      if (slot === undefined && options.linkGuard !== undefined) {
        slot = options.linkGuard.admit(peer.address, () => socket.destroy());
        const taken = slot;
        if (taken !== undefined) socket.once('close', () => taken.release());
      } else if (slot !== undefined && !slot.move(peer.address)) slot = undefined;
      if (slot === undefined) {
        logger.warn('connection refused: too many connections', {
          remote: peer.address,
          listener: 'wss-relayed',
        });
        reject(503, 'Service Unavailable');
        return;
      }
    }
    const offeredBearers = protocols.filter((p) => p.startsWith(WS_BEARER_PREFIX));
    const header = req.headers['authorization'];
    if (offeredBearers.length > 1 || (offeredBearers.length === 1 && header !== undefined)) {
      // Two bearers: refuse rather than pick one.
      reject(400, 'Bad Request');
      return;
    }
    const authorization =
      offeredBearers.length === 1 ? `Bearer ${offeredBearers[0]!.slice(WS_BEARER_PREFIX.length)}` : header;
    let principalId: string | undefined;
    if (authorization !== undefined) {
      const match = /^Bearer +(\S+) *$/i.exec(authorization);
      try {
        if (match === null) throw new Error('not a bearer');
        principalId = (await options.auth.authenticate(match[1]!)).id;
      } catch {
        reject(401, 'Unauthorized');
        return;
      }
    }
    wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      const remote = peer.relayedByAgent
        ? peer.address
        : connectionRemoteAddress(req.socket.remoteAddress ?? 'unknown', req.headers);
      if (principalId !== undefined) slot?.establish();
      /** Reservations of the message being received (one per fragment). */
      const receiving: Reservation[] = [];
      const admitted = admitFrames(ws, (fragment, message) => {
        const cap = session.authenticated ? limits.maxFrameBytes : preAuthFrameBytes(limits);
        const payer = { connection: session.id, principal: payerOf(session), address: remote };
        if (message > Math.min(cap, options.budget.ceiling(payer))) return false;
        const reservation = options.budget.tryReserve(payer, fragment);
        if (reservation === undefined) return false;
        receiving.push(reservation);
        return true;
      });
      if (!admitted)
        logger.error('cannot budget WebSocket frames from their headers (ws internals changed)', {});
      // The writes of one event-loop turn leave together (write-batch.ts); ws corks only per message.
      const raw = rawSocketOf(ws);
      const hold = raw === undefined ? undefined : turnWriteBatch(raw);
      const session = new WireSession({
        transport: 'wss',
        bearerAtOpen: true,
        maxStreamedBodyBytes: limits.maxBodyBytes,
        remoteAddress: remote,
        relayedByAgent: peer.relayedByAgent,
        dispatch: options.dispatch,
        logger,
        idleTimeoutMs: limits.idleTimeoutMs,
        onAuthenticated: () => slot?.establish(),
        upgradeAuthorization: authorization,
        upgradeTargetHost: targetHost,
        sink: {
          write: (bytes) => {
            hold?.();
            ws.send(bytes, { binary: true });
          },
          // One WebSocket message in fragments: the parts are never joined.
          writeParts: (parts) => {
            hold?.();
            parts.forEach((part, i) => ws.send(part, { binary: true, fin: i === parts.length - 1 }));
          },
          bufferedBytes: () => ws.bufferedAmount,
          pause: () => ws.pause(),
          resume: () => ws.resume(),
          close: (reason) => ws.close(1008, reason.slice(0, 120)),
        },
      });
      session.principalId = principalId;
      ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
        if (!isBinary) {
          for (const reservation of receiving.splice(0)) reservation.release();
          logger.warn('rejected text WebSocket frame; closing connection', { remote });
          ws.close(1003, 'binary msgpack frames only');
          return;
        }
        const held = receiving.splice(0);
        session.receive(
          Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data),
          () => {
            for (const reservation of held) reservation.release();
          },
        );
      });
      ws.on('error', (error) => logger.debug('WebSocket error', { remote, error }));
      ws.once('close', () => {
        for (const reservation of receiving.splice(0)) reservation.release();
        session.markClosed();
      });
    });
  }
  return wss;
}

/** The socket's address; svc-agent's link (a Unix socket, no address) is this host. */
function socketAddressOf(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? (isAgentLink(req.socket) ? AGENT_LINK_ADDRESS : 'unknown');
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
