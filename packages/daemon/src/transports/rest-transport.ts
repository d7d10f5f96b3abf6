// HTTPS REST on the daemon's REST port. The same server accepts WebSocket upgrades (sub-protocol
// `svc-ws`), handled by ws-transport.ts. This file only translates HTTP to ApiRequest and back.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '@svc/protocol';
import type { Dispatch } from '../api/dispatcher.ts';
import { errorResponse } from '../api/responses.ts';
import type { ApiRequest, ApiResponse } from '../api/types.ts';
import type { Limits } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { TlsMaterial } from '../tls/certificates.ts';
import type { ConnectionGuard } from './connection-guard.ts';
import { splitTarget } from './http-target.ts';

export interface RestTransportOptions {
  tls: TlsMaterial;
  dispatch: Dispatch;
  limits: Limits;
  guard: ConnectionGuard;
  logger: Logger;
  /**
   * Requests whose body the operation streams (file upload): the transport hands the unread body
   * over as `bodyStream` instead of buffering it (and applies no body-size limit to it).
   */
  streamsBody?: (method: string, path: string) => boolean;
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
    handshakeTimeout: limits.headersTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: 5_000,
    maxHeaderSize: 32 * 1024,
  });
  server.maxConnections = limits.maxConnections;
  return server;
}

export function createRestServer(options: RestTransportOptions): Server {
  const { dispatch, limits, guard, logger } = options;
  const server = createBoundedHttpsServer(options.tls, limits);

  server.on('connection', (socket: Socket) => {
    const release = guard.admit(socket.remoteAddress ?? 'unknown');
    if (release === undefined) {
      logger.warn('connection refused: too many connections', {
        remote: socket.remoteAddress,
        listener: 'rest',
      });
      socket.destroy();
      return;
    }
    socket.once('close', release);
  });
  server.on('tlsClientError', (error, socket) => {
    logger.debug('TLS handshake failed', { remote: socket.remoteAddress, error });
  });
  server.on('clientError', (error, socket) => {
    logger.debug('malformed HTTP request', { error });
    if (socket.writable)
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    else socket.destroy();
  });

  // `Expect: 100-continue` (curl sends it for large bodies): refuse an oversized body before the
  // client sends it; otherwise let the body come and handle the request as usual.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length'] ?? 0) > limits.maxBodyBytes && !streamed(req)) {
      send(res, tooLarge(limits.maxBodyBytes));
      return;
    }
    res.writeContinue();
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
    if (streamed(req)) {
      const response = await dispatch({ ...requestOf(req, method, target), bodyStream: req });
      await respond(res, response);
      // Refused before the body was read (401, 403, 400): discard the rest, bounded by the request
      // timeout, so that the client can read the answer.
      if (!req.readableEnded) req.resume();
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    // Too large: answer at once and discard the rest of the body (bounded by the request timeout)
    // instead of closing on unread data, which would reset the connection before the client can
    // read the 413.
    if (declared > limits.maxBodyBytes) {
      req.resume();
      send(res, tooLarge(limits.maxBodyBytes));
      return;
    }
    const body = await readBody(req, limits.maxBodyBytes);
    if (body === undefined) {
      send(res, tooLarge(limits.maxBodyBytes));
      return;
    }
    const response = await dispatch({ ...requestOf(req, method, target), body });
    await respond(res, response);
  }

  return server;
}

function requestOf(req: IncomingMessage, method: string, target: ReturnType<typeof splitTarget>): ApiRequest {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return {
    method,
    path: target.path,
    query: target.query,
    headers,
    body: new Uint8Array(0),
    transport: 'rest',
    remoteAddress: req.socket.remoteAddress ?? 'unknown',
    connection: undefined,
  };
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
    'content-length': response.body.byteLength,
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  };
  res.writeHead(response.status, headers);
  res.end(response.body);
}

/** `send`, or for a streamed body (file download) the headers and then the stream. */
async function respond(res: ServerResponse, response: ApiResponse): Promise<void> {
  const stream = response.stream;
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
