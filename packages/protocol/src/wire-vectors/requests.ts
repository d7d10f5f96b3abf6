// Valid requests, canonical encoder output: encoding `decoded` gives exactly `hex`.
import { MAX_UUID_CHARS } from '../codec.ts';
import type { WireVector } from './json.ts';
import { UUID, getApps, validRequest } from './kit.ts';

export function requestVectors(): WireVector[] {
  return [
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
  ];
}
