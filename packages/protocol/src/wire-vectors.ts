// Shared wire test vectors (spec/wire-vectors.json). Every client, in every language, decodes these
// bytes and must reach the same message or the same error category. `npm run gen:spec` writes the
// file from buildWireVectors(); test/spec-sync.test.ts fails when the two drift apart.
//
// Bytes in JSON are lowercase hex: `hex` for the input, `{"$hex": "..."}` for a body inside
// `decoded`, so the file stays lossless.

import { Packr } from 'msgpackr';
import type { MessageErrorReason } from './codec.ts';
import {
  MAX_HEADERS,
  MAX_HEADER_VALUE_BYTES,
  MAX_REQUEST_URI_BYTES,
  MAX_UUID_CHARS,
  encodeRequest,
  encodeResponse,
} from './codec.ts';
import { EVENT_REQUEST_URI } from './events.ts';
import type { EventMessage } from './events.ts';
import { CLIENT_MAX_BODY_BYTES, DAEMON_MAX_BODY_BYTES, HEADER_SIZE, MAGIC, encodeFrame } from './framing.ts';
import type { FrameErrorReason } from './framing.ts';
import type { Request, Response } from './messages.ts';

export interface HexBytes {
  $hex: string;
}

/** A Request as it appears in JSON: every key present, body as hex. */
export type RequestJson = Omit<Request, 'body'> & { body: HexBytes };
/** A Response as it appears in JSON: every key present, body as hex. */
export type ResponseJson = Omit<Response, 'body'> & { body: HexBytes };

export interface FrameStreamJson {
  /** Bodies the decoder returns, in order, before the stream ends or fails. */
  bodies: HexBytes[];
}

/** `truncated`: no decoder error, but bytes of an incomplete frame remain when the stream ends. */
export type FrameVectorError = FrameErrorReason | 'truncated';

interface VectorBase {
  name: string;
  description: string;
  hex: string;
}

export interface RequestVector extends VectorBase {
  kind: 'request';
  decoded?: RequestJson;
  /** True when encoding `decoded` must give exactly `hex` (the canonical encoder output). */
  canonical?: boolean;
  error?: { category: MessageErrorReason; field?: string };
}

export interface ResponseVector extends VectorBase {
  kind: 'response';
  decoded?: ResponseJson;
  canonical?: boolean;
  error?: { category: MessageErrorReason; field?: string };
}

export interface FrameVector extends VectorBase {
  kind: 'frame';
  /** The decoder's body bound for this vector. */
  max_body_bytes: number;
  decoded: FrameStreamJson;
  error?: { category: FrameVectorError };
}

export type WireVector = RequestVector | ResponseVector | FrameVector;

export function hexBytes(bytes: Uint8Array): HexBytes {
  return { $hex: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') };
}

export function fromHexBytes(value: HexBytes): Buffer {
  return Buffer.from(value.$hex, 'hex');
}

export function requestToJson(request: Request): RequestJson {
  return { ...request, body: hexBytes(request.body) };
}

export function requestFromJson(json: RequestJson): Request {
  return { ...json, body: fromHexBytes(json.body) };
}

export function responseToJson(response: Response): ResponseJson {
  return { ...response, body: hexBytes(response.body) };
}

export function responseFromJson(json: ResponseJson): Response {
  return { ...json, body: fromHexBytes(json.body) };
}

// A foreign-style encoder for non-canonical inputs: writes maps exactly as given.
const foreign = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });
const packAny = (value: unknown): Buffer => foreign.pack(value);
// msgpackr without variableMapSize always writes map16 headers, as some encoders do.
const map16Packr = new Packr({ useRecords: false, mapsAsObjects: true });

const UUID = '5f0c1a9e-3b7d-4c21-8e6f-0a1b2c3d4e5f';

function header(magic: number, length: number): Buffer {
  const b = Buffer.alloc(HEADER_SIZE);
  b.writeUInt32BE(magic >>> 0, 0);
  b.writeUInt32BE(length >>> 0, 4);
  return b;
}

function validRequest(name: string, description: string, request: Request): RequestVector {
  return {
    name,
    kind: 'request',
    description,
    hex: encodeRequest(request).toString('hex'),
    decoded: requestToJson(request),
    canonical: true,
  };
}

function validResponse(name: string, description: string, response: Response): ResponseVector {
  return {
    name,
    kind: 'response',
    description,
    hex: encodeResponse(response).toString('hex'),
    decoded: responseToJson(response),
    canonical: true,
  };
}

function badMessage(
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

const minimalRequest = { uuid: UUID, request_uri: '/svc/applications', http_method: 'GET' };
const minimalResponse = { uuid: UUID, request_uri: '/svc/applications', http_status: 200 };

export function buildWireVectors(): WireVector[] {
  const getApps: Request = {
    uuid: UUID,
    request_uri: '/svc/applications',
    http_method: 'GET',
    client_addr: '',
    headers: {},
    query: {},
    body: new Uint8Array(0),
  };

  const event: EventMessage = {
    subscription_id: 'sub-7',
    event_type: 'EXIT',
    app_name: 'web',
    timestamp: 1767225600000,
    sequence: 3,
    data: { pid: 4242, exit_code: -9, last_error: 'killed by signal 9' },
  };

  const vectors: WireVector[] = [
    // ---- valid requests, canonical encoder output
    validRequest('request-get-empty-body', 'GET with empty headers, query and body.', getApps),
    validRequest('request-put-json-body', 'PUT with a bearer, a JSON body and a query parameter.', {
      uuid: UUID,
      request_uri: '/svc/app/web',
      http_method: 'PUT',
      client_addr: '192.0.2.10:51234',
      headers: { Authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig', 'Content-Type': 'application/json' },
      query: { subscribe_events: 'START,EXIT' },
      body: Buffer.from('{"name":"web","command":"sleep 60"}'),
    }),
    validRequest('request-binary-body', 'POST whose body holds every kind of byte, not UTF-8.', {
      uuid: UUID,
      request_uri: '/svc/app/worker/task',
      http_method: 'POST',
      client_addr: '',
      headers: { 'Content-Type': 'application/octet-stream' },
      query: { timeout: 'PT5M' },
      body: Buffer.from([0x00, 0x01, 0x7f, 0x80, 0xc1, 0xfe, 0xff]),
    }),
    validRequest('request-utf8-headers', 'Non-ASCII UTF-8 in the uri, header values and query.', {
      uuid: UUID,
      request_uri: '/svc/app/caf\u00e9',
      http_method: 'GET',
      client_addr: '',
      headers: { 'X-Note': 'gr\u00fc\u00dfe \u65e5\u672c \u{1f680}' },
      query: { q: '\u00e9t\u00e9' },
      body: new Uint8Array(0),
    }),
    validRequest('request-uuid-at-limit', `uuid of exactly ${MAX_UUID_CHARS} characters.`, {
      ...getApps,
      uuid: 'u'.repeat(MAX_UUID_CHARS),
    }),

    // ---- valid responses, canonical encoder output
    validResponse('response-json-body', '200 with a JSON body.', {
      uuid: UUID,
      request_uri: '/svc/app/web',
      http_status: 200,
      body_msg_type: 'application/json',
      headers: {},
      body: Buffer.from('{"name":"web","status":1}'),
    }),
    validResponse('response-empty-body', '204 with no body and no content type.', {
      uuid: UUID,
      request_uri: '/svc/label/zone',
      http_status: 204,
      body_msg_type: '',
      headers: {},
      body: new Uint8Array(0),
    }),
    validResponse('response-error-body', '404 with the error body of CONTRACT §5.', {
      uuid: UUID,
      request_uri: '/svc/app/nope',
      http_status: 404,
      body_msg_type: 'application/json',
      headers: {},
      body: Buffer.from('{"error":"app_not_found","message":"no application named nope"}'),
    }),
    validResponse('response-output-headers', 'text/plain output with X-Output-Position and X-Exit-Code.', {
      uuid: UUID,
      request_uri: '/svc/app/web/output',
      http_status: 200,
      body_msg_type: 'text/plain',
      headers: { 'X-Output-Position': '12', 'X-Exit-Code': '0' },
      body: Buffer.from('hello world\n'),
    }),
    validResponse('response-binary-body-bin16', 'A 300-byte binary body (msgpack bin 16).', {
      uuid: UUID,
      request_uri: '/svc/app/worker/task',
      http_status: 200,
      body_msg_type: 'application/octet-stream',
      headers: {},
      body: Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256)),
    }),
    validResponse(
      'response-push-event',
      'A server push: request_uri /svc/event, a uuid matching no request, routing headers, the event message as JSON.',
      {
        uuid: '9d8e7f60-5a4b-4c3d-8e2f-1a0b9c8d7e6f',
        request_uri: EVENT_REQUEST_URI,
        http_status: 200,
        body_msg_type: 'application/json',
        headers: {
          'X-Subscription-Id': event.subscription_id,
          'X-Event-Type': event.event_type,
          'X-App-Name': event.app_name,
        },
        body: Buffer.from(JSON.stringify(event)),
      },
    ),

    // ---- valid but not canonical: decoders accept what other encoders write
    {
      name: 'request-optional-keys-absent',
      kind: 'request',
      description: 'Only the required keys; client_addr, headers, query and body default to empty.',
      hex: packAny(minimalRequest).toString('hex'),
      decoded: requestToJson(getApps),
      canonical: false,
    },
    {
      name: 'request-optional-keys-nil',
      kind: 'request',
      description: 'Optional keys present as nil are treated as absent.',
      hex: packAny({ ...minimalRequest, client_addr: null, headers: null, query: null, body: null }).toString(
        'hex',
      ),
      decoded: requestToJson(getApps),
      canonical: false,
    },
    {
      name: 'request-str-body',
      kind: 'request',
      description: 'A body sent as msgpack str is taken as its UTF-8 bytes.',
      hex: packAny({ ...minimalRequest, http_method: 'POST', body: '{"caf\u00e9":1}' }).toString('hex'),
      decoded: requestToJson({ ...getApps, http_method: 'POST', body: Buffer.from('{"caf\u00e9":1}') }),
      canonical: false,
    },
    {
      name: 'request-unknown-keys-and-order',
      kind: 'request',
      description:
        'Keys in another order plus unknown keys (one of them an integer key) are accepted; unknown keys are ignored.',
      hex: packAny(
        new Map<unknown, unknown>([
          ['http_method', 'GET'],
          ['x_trace', { id: 1 }],
          ['request_uri', '/svc/applications'],
          [7, 'seven'],
          ['uuid', UUID],
        ]),
      ).toString('hex'),
      decoded: requestToJson(getApps),
      canonical: false,
    },
    {
      name: 'response-map16-headers',
      kind: 'response',
      description: 'Maps written with map16 headers even when small (as msgpackr does by default).',
      hex: map16Packr.pack({ ...minimalResponse, headers: { 'X-A': 'b' } }).toString('hex'),
      decoded: responseToJson({
        ...minimalResponse,
        body_msg_type: '',
        headers: { 'X-A': 'b' },
        body: new Uint8Array(0),
      }),
      canonical: false,
    },

    // ---- malformed message bodies
    badMessage(
      'request',
      'request-empty-bytes',
      'Zero bytes are no msgpack value.',
      new Uint8Array(0),
      'invalid_msgpack',
    ),
    badMessage(
      'request',
      'request-truncated-map',
      'A map announcing 7 entries that ends after one key byte.',
      Buffer.from([0x87, 0xa4, 0x75]),
      'invalid_msgpack',
    ),
    badMessage(
      'request',
      'request-trailing-bytes',
      'A valid request followed by one more msgpack value (nil).',
      Buffer.concat([encodeRequest(getApps), Buffer.from([0xc0])]),
      'invalid_msgpack',
    ),
    badMessage(
      'response',
      'response-reserved-byte',
      'The never-used byte 0xc1.',
      Buffer.from([0xc1]),
      'invalid_msgpack',
    ),
    badMessage(
      'request',
      'request-top-level-array',
      'An array instead of a map.',
      packAny(['GET', '/svc/applications']),
      'not_a_map',
    ),
    badMessage(
      'response',
      'response-top-level-str',
      'A string instead of a map.',
      packAny('ok'),
      'not_a_map',
    ),
    badMessage(
      'response',
      'response-top-level-nil',
      'nil instead of a map.',
      Buffer.from([0xc0]),
      'not_a_map',
    ),
    badMessage(
      'request',
      'request-missing-uuid',
      'No uuid.',
      packAny({ request_uri: '/svc/applications', http_method: 'GET' }),
      'missing_field',
      'uuid',
    ),
    badMessage(
      'request',
      'request-nil-http-method',
      'http_method is nil.',
      packAny({ ...minimalRequest, http_method: null }),
      'missing_field',
      'http_method',
    ),
    badMessage(
      'response',
      'response-missing-http-status',
      'No http_status.',
      packAny({ uuid: UUID, request_uri: '/svc/applications' }),
      'missing_field',
      'http_status',
    ),
    badMessage(
      'request',
      'request-uuid-int',
      'uuid is an integer.',
      packAny({ ...minimalRequest, uuid: 17 }),
      'wrong_type',
      'uuid',
    ),
    badMessage(
      'request',
      'request-uuid-bin',
      'uuid is bin, not str.',
      packAny({ ...minimalRequest, uuid: Buffer.from(UUID) }),
      'wrong_type',
      'uuid',
    ),
    badMessage(
      'request',
      'request-headers-array',
      'headers is an array.',
      packAny({ ...minimalRequest, headers: ['Authorization', 'Bearer t'] }),
      'wrong_type',
      'headers',
    ),
    badMessage(
      'request',
      'request-header-value-int',
      'A header value is an integer.',
      packAny({ ...minimalRequest, headers: { 'Content-Length': 12 } }),
      'wrong_type',
      'headers.Content-Length',
    ),
    badMessage(
      'request',
      'request-header-key-int',
      'A header name is an integer.',
      packAny({ ...minimalRequest, headers: new Map([[1, 'x']]) }),
      'wrong_type',
      'headers',
    ),
    badMessage(
      'request',
      'request-query-value-nil',
      'A query value is nil.',
      packAny({ ...minimalRequest, query: { timeout: null } }),
      'wrong_type',
      'query.timeout',
    ),
    badMessage(
      'request',
      'request-body-int',
      'body is an integer.',
      packAny({ ...minimalRequest, body: 5 }),
      'wrong_type',
      'body',
    ),
    badMessage(
      'response',
      'response-status-str',
      'http_status is the string "200".',
      packAny({ ...minimalResponse, http_status: '200' }),
      'wrong_type',
      'http_status',
    ),
    badMessage(
      'response',
      'response-status-out-of-range',
      'http_status 42 is outside [100, 599].',
      packAny({ ...minimalResponse, http_status: 42 }),
      'wrong_type',
      'http_status',
    ),
    badMessage(
      'response',
      'response-status-float',
      'http_status is a float.',
      packAny({ ...minimalResponse, http_status: 200.5 }),
      'wrong_type',
      'http_status',
    ),
    badMessage(
      'request',
      'request-uuid-over-limit',
      `uuid of ${MAX_UUID_CHARS + 1} characters.`,
      packAny({ ...minimalRequest, uuid: 'u'.repeat(MAX_UUID_CHARS + 1) }),
      'limit_exceeded',
      'uuid',
    ),
    badMessage(
      'request',
      'request-uri-over-limit',
      `request_uri of ${MAX_REQUEST_URI_BYTES + 1} bytes.`,
      packAny({ ...minimalRequest, request_uri: '/' + 'a'.repeat(MAX_REQUEST_URI_BYTES) }),
      'limit_exceeded',
      'request_uri',
    ),
    badMessage(
      'request',
      'request-too-many-headers',
      `${MAX_HEADERS + 1} headers.`,
      packAny({
        ...minimalRequest,
        headers: Object.fromEntries(Array.from({ length: MAX_HEADERS + 1 }, (_, i) => [`h${i}`, 'v'])),
      }),
      'limit_exceeded',
      'headers',
    ),
    badMessage(
      'response',
      'response-header-value-over-limit',
      `A header value of ${MAX_HEADER_VALUE_BYTES + 1} bytes.`,
      packAny({ ...minimalResponse, headers: { Big: 'v'.repeat(MAX_HEADER_VALUE_BYTES + 1) } }),
      'limit_exceeded',
      'headers.Big',
    ),
  ];

  // ---- frames: feed `hex` to a fresh decoder with `max_body_bytes`, in any chunking
  const body = encodeRequest(getApps);
  const frames: FrameVector[] = [
    {
      name: 'frame-single',
      kind: 'frame',
      description: 'One frame carrying the request-get-empty-body message.',
      hex: encodeFrame(body).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [hexBytes(body)] },
    },
    {
      name: 'frame-empty-body',
      kind: 'frame',
      description: 'A bare header with length 0 yields one empty body.',
      hex: encodeFrame(new Uint8Array(0)).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [{ $hex: '' }] },
    },
    {
      name: 'frame-coalesced',
      kind: 'frame',
      description: 'Three frames back to back in one read: all three bodies, in order.',
      hex: Buffer.concat([
        encodeFrame(body),
        encodeFrame(new Uint8Array(0)),
        encodeFrame(Buffer.from([0xff])),
      ]).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [hexBytes(body), { $hex: '' }, { $hex: 'ff' }] },
    },
    {
      name: 'frame-at-limit',
      kind: 'frame',
      description: 'A body of exactly max_body_bytes is accepted.',
      hex: encodeFrame(Buffer.from('0123456789abcdef')).toString('hex'),
      max_body_bytes: 16,
      decoded: { bodies: [hexBytes(Buffer.from('0123456789abcdef'))] },
    },
    {
      name: 'frame-over-limit',
      kind: 'frame',
      description: 'A body of max_body_bytes + 1 is rejected.',
      hex: encodeFrame(Buffer.from('0123456789abcdefg')).toString('hex'),
      max_body_bytes: 16,
      decoded: { bodies: [] },
      error: { category: 'too_large' },
    },
    {
      name: 'frame-bad-magic',
      kind: 'frame',
      description: 'Magic 0xdeadbeef.',
      hex: Buffer.concat([header(0xdeadbeef, 1), Buffer.from([0])]).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'bad_magic' },
    },
    {
      name: 'frame-bad-magic-little-endian',
      kind: 'frame',
      description: 'The right magic written little-endian is a bad magic.',
      hex: 'f807c70700000000',
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'bad_magic' },
    },
    {
      name: 'frame-http-on-tcp-port',
      kind: 'frame',
      description: 'An HTTP request line sent to the TCP port.',
      hex: Buffer.from('GET / HTTP/1.1\r\n\r\n').toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'bad_magic' },
    },
    {
      name: 'frame-valid-then-bad-magic',
      kind: 'frame',
      description: 'A valid frame, then garbage: the first body is delivered, then the stream fails.',
      hex: Buffer.concat([encodeFrame(body), header(0, 0)]).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [hexBytes(body)] },
      error: { category: 'bad_magic' },
    },
    {
      name: 'frame-oversized-daemon',
      kind: 'frame',
      description: 'Header only, announcing 256 MiB + 1: the daemon rejects it from the header alone.',
      hex: header(MAGIC, DAEMON_MAX_BODY_BYTES + 1).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'too_large' },
    },
    {
      name: 'frame-oversized-client',
      kind: 'frame',
      description: 'Header only, announcing 1 GiB + 1: a client rejects it from the header alone.',
      hex: header(MAGIC, CLIENT_MAX_BODY_BYTES + 1).toString('hex'),
      max_body_bytes: CLIENT_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'too_large' },
    },
    {
      name: 'frame-max-length-field',
      kind: 'frame',
      description: 'Header only, announcing 0xffffffff bytes, the largest the length field holds.',
      hex: header(MAGIC, 0xffffffff).toString('hex'),
      max_body_bytes: CLIENT_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'too_large' },
    },
    {
      name: 'frame-truncated-header',
      kind: 'frame',
      description: 'Five bytes of a header, then end of stream.',
      hex: encodeFrame(body).subarray(0, 5).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'truncated' },
    },
    {
      name: 'frame-truncated-body',
      kind: 'frame',
      description: 'A header announcing 10 bytes, 4 bytes of body, then end of stream.',
      hex: Buffer.concat([header(MAGIC, 10), Buffer.from([1, 2, 3, 4])]).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'truncated' },
    },
    {
      name: 'frame-at-daemon-limit-header-only',
      kind: 'frame',
      description:
        'Header announcing exactly 256 MiB is accepted; with no body bytes the stream is truncated.',
      hex: header(MAGIC, DAEMON_MAX_BODY_BYTES).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [] },
      error: { category: 'truncated' },
    },
    {
      name: 'frame-complete-then-truncated',
      kind: 'frame',
      description: 'One complete frame, then 3 bytes of the next: one body, then truncated.',
      hex: Buffer.concat([
        encodeFrame(Buffer.from('ok')),
        encodeFrame(Buffer.from('next')).subarray(0, 3),
      ]).toString('hex'),
      max_body_bytes: DAEMON_MAX_BODY_BYTES,
      decoded: { bodies: [hexBytes(Buffer.from('ok'))] },
      error: { category: 'truncated' },
    },
  ];

  return [...vectors, ...frames];
}
