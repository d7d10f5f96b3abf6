// Translation between wire messages (TCP and WSS) and the transport-neutral ApiRequest/ApiResponse.
import type { SvcError } from '@svc/protocol';
import { type Request, type Response } from '@svc/protocol';
import type { ApiRequest, ApiResponse, PersistentConnection } from '../api/types.ts';
import { errorResponse } from '../api/responses.ts';
import { splitTarget } from './http-target.ts';

export function toApiRequest(
  message: Request,
  connection: PersistentConnection,
  remoteAddress: string,
  relayedByAgent = false,
): ApiRequest {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(message.headers)) headers[key.toLowerCase()] = value;
  // request_uri may carry a query string too; explicit `query` entries win.
  const { path, query } = splitTarget(message.request_uri);
  return {
    method: message.http_method.toUpperCase(),
    path,
    query: { ...query, ...message.query },
    headers,
    body: message.body,
    transport: connection.transport,
    remoteAddress,
    relayedByAgent,
    connection,
  };
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
