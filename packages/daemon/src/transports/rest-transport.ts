// HTTPS REST on the daemon's REST port. The same server accepts WebSocket upgrades (sub-protocol
// `svc-ws`), handled by ws-transport.ts. This file only translates HTTP to ApiRequest and back.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '@svc/protocol';
import type { Dispatch } from '../api/dispatcher.ts';
import { isPreflightPass, type Preflight, type PreflightPass } from '../api/preflight.ts';
import { bodyLength } from '../api/app-listing.ts';
import { errorResponse } from '../api/responses.ts';
import type { ApiResponse } from '../api/types.ts';
import type { Limits } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { TlsMaterial } from '../tls/certificates.ts';
import { AGENT_LINK_ADDRESS, isAgentLink, relayedPeer, type AgentKeyCheck } from './agent-relay.ts';
import type { ConnectionGuard } from './connection-guard.ts';
import {
  answerClientError,
  closeIdleHttpConnections,
  guardTlsServer,
  lingerAfterLastAnswer,
  type GuardedServer,
  type ListenerLog,
} from './connection-deadlines.ts';
import { splitTarget } from './http-target.ts';
import type { InflightBudget } from './inflight-budget.ts';
import { preAuthFrameBytes } from './wire-session.ts';

export interface RestTransportOptions {
  tls: TlsMaterial;
  dispatch: Dispatch;
  /** Checked on method, path, query and headers before any body is read (api/preflight.ts). */
  preflight: Preflight;
  limits: Limits;
  guard: ConnectionGuard;
  /** Pays for request bodies before they are read (inflight-budget.ts). */
  budget: InflightBudget;
  logger: Logger;
  /**
   * Requests whose body the operation streams (file upload): the transport hands the unread body
   * over as `bodyStream` instead of buffering it (and applies no body-size limit to it).
   */
  streamsBody?: (method: string, path: string) => boolean;
  /** Recognises svc-agent's key on relayed requests (agent-relay.ts). */
  checkAgentKey?: AgentKeyCheck;
}

/** Accounting key of svc-agent's pooled connections (bounded by the agent's pool), apart from loopback clients. */
const AGENT_POOL_ADDRESS = 'svc-agent-pool';

export function loggerAsListenerLog(logger: Logger): ListenerLog {
  return (level, message, fields) => logger[level](message, fields);
}

const METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE']);

/**
 * An HTTPS server with svc's TLS floor and the configured bounds (slow headers, slow bodies, header
 * size, connection count): the daemon's REST port and svc-agent's front door alike.
 */
export function createBoundedHttpsServer(tls: TlsMaterial, limits: Limits): Server {
  const server = createServer({
    key: tls.key,
    cert: tls.cert,
    minVersion: 'TLSv1.2',
    handshakeTimeout: limits.handshakeTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: 5_000,
    maxHeaderSize: 32 * 1024,
  });
  server.maxConnections = limits.maxConnections;
  return server;
}

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

  // `Expect: 100-continue` (curl sends it for large bodies): refuse an oversized body before the
  // client sends it; otherwise handle the request as usual, and ask for the body (100) once the
  // bearer and the size are accepted.
  const awaitingContinue = new WeakSet<ServerResponse>();
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length'] ?? 0) > limits.maxBodyBytes && !streamed(req)) {
      send(res, tooLarge(limits.maxBodyBytes));
      return;
    }
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

  /** A streamed-body request (not when forwarded: the forwarder sends a buffered body on). */
  function streamed(req: IncomingMessage): boolean {
    if (options.streamsBody === undefined || req.headers['x-target-host'] !== undefined) return false;
    try {
      return options.streamsBody(req.method ?? 'GET', splitTarget(req.url ?? '/').path);
    } catch {
      return false;
    }
  }

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
    // The bearer (or the route's openness) is settled before a byte of a body is buffered; a
    // request without a body goes straight to the dispatcher, which checks the same.
    const hasBody =
      req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const verdict = hasBody
      ? await options.preflight({
          method,
          path: target.path,
          query: target.query,
          headers,
          remoteAddress: peer.address,
          relayedByAgent: peer.relayedByAgent,
        })
      : FULL;
    if (!isPreflightPass(verdict)) {
      discard(req, res);
      send(res, verdict);
      return;
    }
    // Everything of the request but its body, as the dispatcher takes it.
    const request = {
      method,
      path: target.path,
      query: target.query,
      headers,
      transport: 'rest' as const,
      remoteAddress: peer.address,
      relayedByAgent: peer.relayedByAgent,
      connection: undefined,
      authenticated: (): void => guarded.slotOf(req.socket)?.establish(),
    };
    if (streamed(req)) {
      // File upload: the operation reads the body as a stream (never buffered whole).
      const response = await dispatch({ ...request, body: new Uint8Array(0), bodyStream: req });
      await respond(res, response);
      if (!req.readableEnded) discard(req, res); // refused before the body was read
      return;
    }
    const bodyLimit = Math.min(
      verdict.body === 'full' ? limits.maxBodyBytes : preAuthFrameBytes(limits),
      verdict.maxBytes ?? Number.MAX_SAFE_INTEGER,
    );
    const declared = Number(req.headers['content-length'] ?? 0);
    // Too large: answer at once and discard the rest of the body (bounded by the request timeout)
    // instead of closing on unread data, which would reset the connection before the client can
    // read the 413.
    if (declared > bodyLimit) {
      discard(req, res);
      send(res, tooLarge(bodyLimit));
      return;
    }
    // The body's bytes are paid for before they are read: its declared length, or the limit when
    // it comes chunked. No room: 429 at once, nothing read.
    const reservation = hasBody
      ? budget.tryReserve(
          { principal: verdict.principalId, address: peer.address },
          declared > 0 ? declared : bodyLimit,
        )
      : undefined;
    if (hasBody && reservation === undefined) {
      discard(req, res);
      send(res, busy(verdict));
      return;
    }
    try {
      if (awaitingContinue.has(res)) res.writeContinue();
      const body = await readBody(req, bodyLimit);
      if (body === undefined) {
        send(res, tooLarge(bodyLimit));
        return;
      }
      const response = await dispatch({ ...request, body });
      await respond(res, response);
    } finally {
      reservation?.release();
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

const FULL: PreflightPass = { body: 'full' };

function busy(pass: PreflightPass): ApiResponse {
  const who = pass.principalId === undefined ? 'this address' : 'this principal';
  return errorResponse(
    new SvcError('too_many_connections', `too many request bodies in flight for ${who}; retry when they are answered`),
  );
}

function tooLarge(limit: number): ApiResponse {
  return errorResponse(new SvcError('payload_too_large', `request body exceeds ${limit} bytes`));
}

/** Reads the body up to `limit` bytes; undefined when it is larger (the rest is not buffered). */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        settled = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!settled) {
        settled = true;
        resolve(Buffer.concat(chunks, size));
      }
    });
    req.on('error', (error) => {
      if (!settled) {
        settled = true;
        reject(error);
      }
    });
  });
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
