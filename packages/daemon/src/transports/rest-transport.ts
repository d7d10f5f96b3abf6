// HTTPS REST on the daemon's REST port. The same server accepts WebSocket upgrades (sub-protocol
// `svc-ws`), handled by ws-transport.ts. This file only translates HTTP to ApiRequest and back.
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '@svc/protocol';
import type { Dispatch } from '../api/dispatcher.ts';
import { bodyLength } from '../api/app-listing.ts';
import { errorResponse } from '../api/responses.ts';
import type { ApiResponse } from '../api/types.ts';
import type { Limits } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import type { TlsMaterial } from '@svc/platform/tls';
import { AGENT_LINK_ADDRESS, isAgentLink, relayedPeer, type AgentKeyCheck } from './agent-relay.ts';
import {
  answerClientError,
  closeIdleHttpConnections,
  createBoundedHttpsServer,
  guardTlsServer,
  lingerAfterLastAnswer,
  type ConnectionGuard,
  type GuardedServer,
  type ListenerLog,
} from '@svc/platform/connections';
import { splitTarget } from './http-target.ts';
import type { InflightBudget } from './inflight-budget.ts';
import { RestBody } from './rest-body.ts';

export interface RestTransportOptions {
  tls: TlsMaterial;
  dispatch: Dispatch;
  limits: Limits;
  guard: ConnectionGuard;
  /** Pays for request bodies before they are read (inflight-budget.ts, rest-body.ts). */
  budget: InflightBudget;
  logger: Logger;
  /** Recognises svc-agent's key on relayed requests (agent-relay.ts). */
  checkAgentKey?: AgentKeyCheck;
}

/** Accounting key of svc-agent's pooled connections (bounded by the agent's pool), apart from loopback clients. */
const AGENT_POOL_ADDRESS = 'svc-agent-pool';

export function loggerAsListenerLog(logger: Logger): ListenerLog {
  return (level, message, fields) => logger[level](message, fields);
}

const METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE']);

export function createRestServer(options: RestTransportOptions): { server: Server; guarded: GuardedServer } {
  const { dispatch, limits, guard, budget, logger } = options;
  const server = createBoundedHttpsServer(options.tls, limits);
  const log = loggerAsListenerLog(logger);
  const guarded = guardTlsServer(server, {
    guard,
    listener: 'rest',
    log,
    firstRequestMs: limits.handshakeTimeoutMs,
    exempt: isAgentLink,
  });
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) =>
    answerClientError(error, socket, log),
  );
  closeIdleHttpConnections(server, limits.idleTimeoutMs);

  // `Expect: 100-continue` (curl sends it for large bodies): handled as any request; the client is
  // asked for the body (100) only when the dispatcher reads it (rest-body.ts), so a refusal or an
  // oversized body is answered before the client sends a byte of it.
  const awaitingContinue = new WeakSet<ServerResponse>();
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(res);
    server.emit('request', req, res);
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      logger.error('REST handler failed', { error: error as Error });
      if (!res.headersSent)
        send(res, errorResponse(new SvcError('internal', 'internal error', { cause: error })));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    if (!METHODS.has(method)) {
      req.resume();
      send(res, errorResponse(new SvcError('method_not_allowed', `method ${method} is not supported`)));
      return;
    }
    let target: ReturnType<typeof splitTarget>;
    try {
      target = splitTarget(req.url ?? '/');
    } catch (error) {
      req.resume();
      send(res, errorResponse(error as SvcError));
      return;
    }
    const link = isAgentLink(req.socket);
    const socketAddress = req.socket.remoteAddress ?? (link ? AGENT_LINK_ADDRESS : 'unknown');
    const peer = relayedPeer(socketAddress, req.headers, options.checkAgentKey);
    // svc-agent over loopback TCP (no link): its pooled connections share one bucket.
    if (peer.relayedByAgent) {
      const slot = guarded.slotOf(req.socket);
      slot?.move(AGENT_POOL_ADDRESS);
      slot?.establish();
    }
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
    }
    const body = new RestBody(req, res, {
      limits,
      budget,
      address: peer.address,
      awaitingContinue: awaitingContinue.has(res),
    });
    try {
      const response = await dispatch({
        method,
        path: target.path,
        query: target.query,
        headers,
        body,
        transport: 'rest',
        remoteAddress: peer.address,
        relayedByAgent: peer.relayedByAgent,
        connection: undefined,
        authenticated: (): void => guarded.slotOf(req.socket)?.establish(),
      });
      // Answered without (all of) its body: refused, too large, or not needed.
      if (body.unread) discard(req, res);
      await respond(res, response);
    } finally {
      body.release();
    }
  }

  return { server, guarded };
}

/**
 * Drops the body of a request answered early: thrown away as it arrives, never kept, until the
 * peer closes or for a short grace after the answer (so that the client can read the answer instead
 * of a reset), and the connection closed after the answer, so that a peer cannot keep streaming.
 */
function discard(req: IncomingMessage, res: ServerResponse): void {
  res.shouldKeepAlive = false;
  req.resume();
  lingerAfterLastAnswer(req.socket);
}

function send(res: ServerResponse, response: ApiResponse): void {
  if (res.headersSent) return;
  const headers: Record<string, string | number> = {
    ...response.headers,
    'content-type': response.contentType,
    'content-length': bodyLength(response),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  };
  res.writeHead(response.status, headers);
  // Shared parts (api/app-listing.ts) are written as they are, never joined per reader.
  for (const part of response.bodyParts ?? []) res.write(part);
  res.end(response.bodyParts === undefined ? response.body : undefined);
}

/** `send`, or for a streamed body (file download, shared parts) the headers and then the stream. */
async function respond(res: ServerResponse, response: ApiResponse): Promise<void> {
  // Shared parts (api/app-listing.ts) go out one by one as the client reads, never joined.
  const parts = response.bodyParts;
  const stream =
    parts === undefined
      ? response.stream
      : Readable.from(parts, { objectMode: false, highWaterMark: 64 * 1024 });
  if (parts !== undefined && !res.headersSent) res.setHeader('content-length', bodyLength(response));
  if (stream === undefined || res.headersSent) {
    send(res, response);
    return;
  }
  const headers: Record<string, string> = {
    ...response.headers,
    'content-type': response.contentType,
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  };
  res.writeHead(response.status, headers);
  try {
    await pipeline(stream, res);
  } catch {
    res.destroy(); // the client left or the source failed: the content-length shows the cut
  }
}
