// Requests and answers of the administration UI (server.ts): its errors (HttpError, gRPC failures
// mapped to HTTP), the request checks' helpers (loopback Host, same origin, bounded body) and the
// answers, every one with the UI's security headers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { isAdminRpcError } from '../grpc-client.ts';
import { isLoopbackHost } from '../listen.ts';

const MAX_BODY_BYTES = 16 * 1024;

export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** HTTP status and error code of a gRPC failure. */
export function fromRpc(error: unknown): HttpError {
  if (!isAdminRpcError(error)) return new HttpError(500, 'internal', 'internal error');
  const message = error.details;
  switch (error.code) {
    case grpc.status.INVALID_ARGUMENT:
      return new HttpError(400, 'invalid_argument', message);
    case grpc.status.NOT_FOUND:
      return new HttpError(404, 'not_found', message);
    case grpc.status.ALREADY_EXISTS:
      return new HttpError(409, 'already_exists', message);
    case grpc.status.FAILED_PRECONDITION:
      return new HttpError(409, 'failed_precondition', message);
    case grpc.status.UNAVAILABLE:
    case grpc.status.DEADLINE_EXCEEDED:
      return new HttpError(
        502,
        'grpc_unavailable',
        'the administrative gRPC API (svc-identity) is unreachable',
      );
    default:
      return new HttpError(500, 'internal', 'the administrative gRPC API failed');
  }
}

function hostnameOf(hostHeader: string): string | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:]+))(?::\d{1,5})?$/.exec(hostHeader);
  return match === null ? undefined : (match[1] ?? match[2])!.toLowerCase();
}

export function isLoopbackHostHeader(hostHeader: string | undefined): boolean {
  if (hostHeader === undefined) return false;
  const name = hostnameOf(hostHeader);
  return name !== undefined && (name === 'localhost' || isLoopbackHost(name));
}

/** The origin a same-origin request carries: `http://<Host header>`. */
export function sameOrigin(request: IncomingMessage, value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' && url.host === new URL(`http://${request.headers.host}`).host;
  } catch {
    return false;
  }
}

export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      throw new HttpError(413, 'too_large', `request body above ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function send(
  response: ServerResponse,
  status: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    // No script, no external asset: inline style only, forms post to this origin.
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ...headers,
  });
  response.end(body);
}

export const json = (response: ServerResponse, status: number, body: unknown): void =>
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body) + '\n');
export const html = (response: ServerResponse, status: number, body: string): void =>
  send(response, status, 'text/html; charset=utf-8', body);
export const redirect = (response: ServerResponse, location: string): void =>
  send(response, 303, 'text/plain; charset=utf-8', '', { location });
