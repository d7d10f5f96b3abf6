// What the vector modules share: the encoders other clients might use, the messages most vectors
// start from, and the constructors of valid and malformed vectors.
import { Packr } from 'msgpackr';
import type { MessageErrorReason } from '../codec.ts';
import { encodeRequest, encodeResponse } from '../codec.ts';
import type { EventMessage } from '../events.ts';
import { HEADER_SIZE } from '../framing.ts';
import type { Request, Response } from '../messages.ts';
import {
  requestToJson,
  responseToJson,
  type RequestVector,
  type ResponseVector,
  type WireVector,
} from './json.ts';

// A foreign-style encoder for non-canonical inputs: writes maps exactly as given.
const foreign = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });
export const packAny = (value: unknown): Buffer => foreign.pack(value);
// msgpackr without variableMapSize always writes map16 headers, as some encoders do.
export const map16Packr = new Packr({ useRecords: false, mapsAsObjects: true });

export const UUID = '5f0c1a9e-3b7d-4c21-8e6f-0a1b2c3d4e5f';

/** A frame header of any magic and length (big-endian), valid or not. */
export function header(magic: number, length: number): Buffer {
  const b = Buffer.alloc(HEADER_SIZE);
  b.writeUInt32BE(magic >>> 0, 0);
  b.writeUInt32BE(length >>> 0, 4);
  return b;
}

export function validRequest(name: string, description: string, request: Request): RequestVector {
  return {
    name,
    kind: 'request',
    description,
    hex: encodeRequest(request).toString('hex'),
    decoded: requestToJson(request),
    canonical: true,
  };
}

export function validResponse(name: string, description: string, response: Response): ResponseVector {
  return {
    name,
    kind: 'response',
    description,
    hex: encodeResponse(response).toString('hex'),
    decoded: responseToJson(response),
    canonical: true,
  };
}

export function badMessage(
  kind: 'request' | 'response',
  name: string,
  description: string,
  bytes: Uint8Array,
  category: MessageErrorReason,
  field?: string,
): WireVector {
  const error = field === undefined ? { category } : { category, field };
  return { name, kind, description, hex: Buffer.from(bytes).toString('hex'), error };
}

export const minimalRequest = { uuid: UUID, request_uri: '/svc/applications', http_method: 'GET' };
export const minimalResponse = { uuid: UUID, request_uri: '/svc/applications', http_status: 200 };

/** The request of `request-get-empty-body`, the base of many others. */
export const getApps: Request = {
  uuid: UUID,
  request_uri: '/svc/applications',
  http_method: 'GET',
  client_addr: '',
  headers: {},
  query: {},
  body: new Uint8Array(0),
};

/** The event of `response-push-event`. */
export const event: EventMessage = {
  subscription_id: 'sub-7',
  event_type: 'EXIT',
  app_name: 'web',
  timestamp: 1767225600000,
  sequence: 3,
  data: { pid: 4242, exit_code: -9, last_error: 'killed by signal 9' },
};
