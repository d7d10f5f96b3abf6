// Small constructors for ApiResponse, so every operation answers the same way on every transport.
import { SvcError, type ErrorCode } from '@svc/protocol';
import type { ApiResponse } from './types.ts';

const encoder = new TextEncoder();

export function json(value: unknown, status = 200, headers: Record<string, string> = {}): ApiResponse {
  return { status, headers, contentType: 'application/json', body: encoder.encode(JSON.stringify(value)) };
}

export function text(
  value: string | Uint8Array,
  status = 200,
  headers: Record<string, string> = {},
): ApiResponse {
  return {
    status,
    headers,
    contentType: 'text/plain; charset=utf-8',
    body: typeof value === 'string' ? encoder.encode(value) : value,
  };
}

export function errorResponse(error: SvcError): ApiResponse {
  return json(error.toBody(), error.status, { ...error.headers });
}

export function fail(code: ErrorCode, message: string, options?: { cause?: unknown }): never {
  throw new SvcError(code, message, options);
}

/** Parse a JSON body; empty or malformed bodies are a 400 `invalid_json` that names the problem. */
export function parseJsonBody(body: Uint8Array): unknown {
  if (body.byteLength === 0) fail('invalid_json', 'request body is empty; a JSON document is required');
  const source = new TextDecoder('utf-8', { fatal: true });
  let textBody: string;
  try {
    textBody = source.decode(body);
  } catch (cause) {
    fail('invalid_json', 'request body is not valid UTF-8', { cause });
  }
  try {
    return JSON.parse(textBody) as unknown;
  } catch (cause) {
    fail('invalid_json', `request body is not valid JSON: ${(cause as Error).message}`, { cause });
  }
}
