// Translation between wire messages (TCP and WSS) and the transport-neutral ApiRequest/ApiResponse.
import type { SvcError } from '@svc/protocol';
import { type Request, type Response } from '@svc/protocol';
import type { ApiRequest, ApiResponse, PersistentConnection } from '../api/types.ts';
import { MessageBody } from '../api/request-body.ts';
import { errorResponse } from '../api/responses.ts';
import { splitTarget } from './http-target.ts';

export function toApiRequest(
  message: Request,
  connection: PersistentConnection,
  remoteAddress: string,
  relayedByAgent = false,
): ApiRequest {
  // request_uri may carry a query string too; explicit `query` entries win. The decoded message's
  // own objects are used as they are where nothing needs changing (a fresh decode per frame).
  const mark = message.request_uri.indexOf('?');
  let path = message.request_uri;
  let query = message.query;
  if (mark !== -1) {
    const target = splitTarget(message.request_uri);
    path = target.path;
    query = { ...target.query, ...message.query };
  }
  return {
    method: message.http_method.toUpperCase(),
    path,
    query,
    headers: lowerCaseNames(message.headers),
    body: new MessageBody(message.body),
    transport: connection.transport,
    remoteAddress,
    relayedByAgent,
    connection,
  };
}

/** The headers with lower-case names: the same object when every name already is (the usual case). */
function lowerCaseNames(headers: Record<string, string>): Record<string, string> {
  let lower = true;
  for (const key of Object.keys(headers)) {
    if (key === '__proto__' || hasUpperCase(key)) {
      lower = false;
      break;
    }
  }
  if (lower) return headers;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) out[key.toLowerCase()] = value;
  return out;
}

function hasUpperCase(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 65 && code <= 90) return true;
    // Non-ASCII: toLowerCase may change it (for example U+0130); take the copying path.
    if (code > 127) return true;
  }
  return false;
}

export function toWireResponse(request: Request, response: ApiResponse): Response {
  return {
    uuid: request.uuid,
    request_uri: request.request_uri,
    http_status: response.status,
    body_msg_type: response.contentType,
    headers: response.headers,
    body: response.body,
  };
}

/** Response for a request whose target could not be parsed before dispatch. */
export function toWireError(request: Request, error: SvcError): Response {
  return toWireResponse(request, errorResponse(error));
}
