// Malformed message bodies: each decodes to the error category (and field) every client reports.
import {
  MAX_HEADERS,
  MAX_HEADER_VALUE_BYTES,
  MAX_REQUEST_URI_BYTES,
  MAX_UUID_CHARS,
  encodeRequest,
} from '../codec.ts';
import type { WireVector } from './json.ts';
import { UUID, badMessage, getApps, minimalRequest, minimalResponse, packAny } from './kit.ts';

export function malformedVectors(): WireVector[] {
  return [...notMessages(), ...badFields(), ...overLimits()];
}

/** Bytes that are no msgpack value, or no map. */
function notMessages(): WireVector[] {
  return [
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
  ];
}

/** A required field missing, or a field of the wrong type. */
function badFields(): WireVector[] {
  return [
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
  ];
}

/** A field over its limit. */
function overLimits(): WireVector[] {
  return [
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
}
