import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  MAX_HEADERS,
  MAX_HEADER_VALUE_BYTES,
  MAX_REQUEST_URI_BYTES,
  MAX_UUID_CHARS,
  MessageError,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  encodeResponseParts,
} from './codec.ts';
import type { MessageErrorReason } from './codec.ts';
import type { Request, Response } from './messages.ts';
import { REQUEST_KEYS, RESPONSE_KEYS } from './messages.ts';

// A foreign encoder: writes whatever we hand it, the way another language's library might.
const raw = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });
const pack = (value: unknown): Buffer => raw.pack(value);

function request(overrides: Partial<Request> = {}): Request {
  return {
    uuid: '0b6c2e1a-7d2f-4e59-9a43-3f1c9b1d2e10',
    request_uri: '/svc/app/web',
    http_method: 'GET',
    client_addr: '127.0.0.1:50000',
    headers: { Authorization: 'Bearer t' },
    query: { stdout_position: '0' },
    body: new Uint8Array(0),
    ...overrides,
  };
}

function response(overrides: Partial<Response> = {}): Response {
  return {
    uuid: '0b6c2e1a-7d2f-4e59-9a43-3f1c9b1d2e10',
    request_uri: '/svc/app/web',
    http_status: 200,
    body_msg_type: 'application/json',
    headers: {},
    body: Buffer.from('{"name":"web"}'),
    ...overrides,
  };
}

function refusal(fn: () => unknown): MessageError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(MessageError);
    return error as MessageError;
  }
  throw new Error('expected a MessageError');
}

function expectRefused(fn: () => unknown, reason: MessageErrorReason, field?: string): MessageError {
  const error = refusal(fn);
  expect(error.reason, error.message).toBe(reason);
  expect(error.field, error.message).toBe(field);
  if (field !== undefined) expect(error.message).toContain(field);
  return error;
}

describe('encode/decode round trip', () => {
  it('round-trips a Request', () => {
    const msg = request({ body: new Uint8Array([0, 1, 2, 255]) });
    const decoded = decodeRequest(encodeRequest(msg));
    expect({ ...decoded, body: Buffer.from(decoded.body) }).toEqual({ ...msg, body: Buffer.from(msg.body) });
  });

  it('round-trips a Response', () => {
    const msg = response();
    const decoded = decodeResponse(encodeResponse(msg));
    expect({ ...decoded, body: Buffer.from(decoded.body).toString() }).toEqual({
      ...msg,
      body: '{"name":"web"}',
    });
  });

  it('round-trips UTF-8 in headers, query and uri', () => {
    const msg = request({
      request_uri: '/svc/app/caf\u00e9',
      headers: { 'X-Note': 'gr\u00fc\u00dfe \u{1f600}' },
      query: { q: '\u65e5\u672c' },
    });
    expect(decodeRequest(encodeRequest(msg))).toMatchObject({
      request_uri: msg.request_uri,
      headers: msg.headers,
      query: msg.query,
    });
  });
});

describe('encoders', () => {
  it('write exactly the CONTRACT §4 keys, in order, as a fixmap', () => {
    const req = encodeRequest(request());
    expect(req[0]).toBe(0x80 | REQUEST_KEYS.length);
    const decodedKeys = [
      ...(new Packr({ useRecords: false, mapsAsObjects: false }).unpack(req) as Map<string, unknown>).keys(),
    ];
    expect(decodedKeys).toEqual([...REQUEST_KEYS]);

    const res = encodeResponse(response());
    expect(res[0]).toBe(0x80 | RESPONSE_KEYS.length);
    const resKeys = [
      ...(new Packr({ useRecords: false, mapsAsObjects: false }).unpack(res) as Map<string, unknown>).keys(),
    ];
    expect(resKeys).toEqual([...RESPONSE_KEYS]);
  });

  it('write the body as msgpack bin, also when it is a Buffer or empty', () => {
    const empty = encodeRequest(request({ body: new Uint8Array(0) }));
    expect(empty.subarray(-2).toString('hex')).toBe('c400');
    const buf = encodeResponse(response({ body: Buffer.from([9, 8]) }));
    expect(buf.subarray(-4).toString('hex')).toBe('c4020908');
  });

  it('encode a body given in parts as one message, the parts kept as they are', () => {
    const parts = [Buffer.from('[{"a":'), Buffer.from('1},'), Buffer.from('{"b":2}]')];
    const pieces = encodeResponseParts(response(), parts);
    expect(pieces.slice(-3)).toEqual(parts);
    const decoded = decodeResponse(Buffer.concat(pieces));
    expect(Buffer.from(decoded.body).toString('utf8')).toBe('[{"a":1},{"b":2}]');
    expect({ ...decoded, body: undefined }).toEqual({ ...decodeResponse(encodeResponse(response())), body: undefined });
  });

  it('drop extra properties a caller left on the object', () => {
    const withExtra = { ...request(), extra: 'x' } as Request;
    const decoded = new Packr({ useRecords: false, mapsAsObjects: true }).unpack(
      encodeRequest(withExtra),
    ) as object;
    expect(Object.keys(decoded)).toEqual([...REQUEST_KEYS]);
  });

  it('produce the same bytes for equal messages (deterministic)', () => {
    expect(encodeRequest(request()).equals(encodeRequest(request()))).toBe(true);
  });

  it('refuse values of the wrong type at runtime', () => {
    expectRefused(() => encodeRequest(request({ uuid: 5 as unknown as string })), 'wrong_type', 'uuid');
    expectRefused(
      () => encodeRequest(request({ body: 'text' as unknown as Uint8Array })),
      'wrong_type',
      'body',
    );
    expectRefused(
      () => encodeRequest(request({ headers: { a: 1 } as unknown as Record<string, string> })),
      'wrong_type',
      'headers.a',
    );
    expectRefused(() => encodeResponse(response({ http_status: 99 })), 'wrong_type', 'http_status');
    expectRefused(() => encodeResponse(response({ http_status: 200.5 })), 'wrong_type', 'http_status');
  });

  it('refuse messages beyond the limits', () => {
    expectRefused(
      () => encodeRequest(request({ uuid: 'u'.repeat(MAX_UUID_CHARS + 1) })),
      'limit_exceeded',
      'uuid',
    );
    expectRefused(
      () => encodeResponse(response({ request_uri: '/'.repeat(MAX_REQUEST_URI_BYTES + 1) })),
      'limit_exceeded',
      'request_uri',
    );
  });
});

describe('decoders accept what other encoders legitimately write', () => {
  it('treat absent optional keys as empty', () => {
    expect(decodeRequest(pack({ uuid: 'u', request_uri: '/svc/self', http_method: 'GET' }))).toEqual({
      uuid: 'u',
      request_uri: '/svc/self',
      http_method: 'GET',
      client_addr: '',
      headers: {},
      query: {},
      body: new Uint8Array(0),
    });
    const res = decodeResponse(pack({ uuid: 'u', request_uri: '/svc/self', http_status: 204 }));
    expect(res).toMatchObject({ body_msg_type: '', headers: {}, http_status: 204 });
    expect(res.body.byteLength).toBe(0);
  });

  it('treat nil optional keys as absent', () => {
    const req = decodeRequest(
      pack({
        uuid: 'u',
        request_uri: '/',
        http_method: 'GET',
        client_addr: null,
        headers: null,
        query: null,
        body: null,
      }),
    );
    expect(req).toMatchObject({ client_addr: '', headers: {}, query: {} });
    expect(req.body.byteLength).toBe(0);
  });

  it('UTF-8 encode a str body', () => {
    const req = decodeRequest(pack({ uuid: 'u', request_uri: '/', http_method: 'POST', body: 'h\u00e9' }));
    expect(Buffer.from(req.body).toString('hex')).toBe('68c3a9');
  });

  it('ignore unknown keys, including non-string ones', () => {
    const bytes = pack(
      new Map<unknown, unknown>([
        ['uuid', 'u'],
        ['request_uri', '/'],
        ['http_method', 'GET'],
        ['x_future', [1, 2]],
        [7, 'seven'],
      ]),
    );
    expect(decodeRequest(bytes)).toMatchObject({ uuid: 'u', http_method: 'GET' });
  });

  it('accept a map16 header written by an encoder that always uses map16', () => {
    const map16 = new Packr({ useRecords: false, mapsAsObjects: true }).pack({
      uuid: 'u',
      request_uri: '/',
      http_status: 200,
    });
    expect(map16[0]).toBe(0xde);
    expect(decodeResponse(map16).http_status).toBe(200);
  });

  it('keep a __proto__ header as an ordinary key', () => {
    const bytes = pack(
      new Map<unknown, unknown>([
        ['uuid', 'u'],
        ['request_uri', '/'],
        ['http_method', 'GET'],
        ['headers', new Map([['__proto__', 'x']])],
      ]),
    );
    const req = decodeRequest(bytes);
    expect(Object.getPrototypeOf(req.headers)).toBe(Object.prototype);
    expect(Object.hasOwn(req.headers, '__proto__')).toBe(true);
    expect(Object.entries(req.headers)).toEqual([['__proto__', 'x']]);
  });

  it('accept exactly-at-limit sizes', () => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < MAX_HEADERS; i++) headers[`h${i}`] = 'v';
    headers['h0'] = 'v'.repeat(MAX_HEADER_VALUE_BYTES);
    const msg = request({
      uuid: 'u'.repeat(MAX_UUID_CHARS),
      request_uri: '/'.repeat(MAX_REQUEST_URI_BYTES),
      headers,
    });
    const decoded = decodeRequest(encodeRequest(msg));
    expect(Object.keys(decoded.headers)).toHaveLength(MAX_HEADERS);
    expect(decoded.uuid).toHaveLength(MAX_UUID_CHARS);
  });
});

describe('decoders refuse', () => {
  const base = { uuid: 'u', request_uri: '/', http_method: 'GET' };
  const baseRes = { uuid: 'u', request_uri: '/', http_status: 200 };

  it('bytes that are not one msgpack value', () => {
    expectRefused(() => decodeRequest(new Uint8Array(0)), 'invalid_msgpack');
    expectRefused(() => decodeRequest(Buffer.from([0x87, 0xa4, 0x75])), 'invalid_msgpack'); // truncated map
    expectRefused(() => decodeRequest(Buffer.from([0xdf, 0xff, 0xff, 0xff, 0xff])), 'invalid_msgpack'); // huge map, no data
    expectRefused(() => decodeResponse(Buffer.from([0xc1])), 'invalid_msgpack'); // the never-used byte
    const trailing = Buffer.concat([pack(base), Buffer.from([0xc0])]);
    const error = expectRefused(() => decodeRequest(trailing), 'invalid_msgpack');
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('garbage bytes (seeded, deterministic) with a MessageError and nothing else', () => {
    let state = 42;
    const next = (): number => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state >>> 24;
    };
    for (let round = 0; round < 500; round++) {
      const bytes = Buffer.alloc(1 + (next() % 40));
      for (let i = 0; i < bytes.byteLength; i++) bytes[i] = next();
      expect(() => decodeRequest(bytes), `round ${round}: ${bytes.toString('hex')}`).toThrow(MessageError);
      expect(() => decodeResponse(bytes), `round ${round}: ${bytes.toString('hex')}`).toThrow(MessageError);
    }
  });

  it('a value that is not a map', () => {
    expectRefused(() => decodeRequest(pack([1, 2])), 'not_a_map');
    expectRefused(() => decodeRequest(pack('uuid')), 'not_a_map');
    expectRefused(() => decodeResponse(pack(null)), 'not_a_map');
  });

  it('a missing or nil required key, naming it', () => {
    expectRefused(
      () => decodeRequest(pack({ request_uri: '/', http_method: 'GET' })),
      'missing_field',
      'uuid',
    );
    expectRefused(
      () => decodeRequest(pack({ uuid: 'u', http_method: 'GET' })),
      'missing_field',
      'request_uri',
    );
    expectRefused(() => decodeRequest(pack({ uuid: 'u', request_uri: '/' })), 'missing_field', 'http_method');
    expectRefused(() => decodeRequest(pack({ ...base, uuid: null })), 'missing_field', 'uuid');
    expectRefused(
      () => decodeResponse(pack({ uuid: 'u', request_uri: '/' })),
      'missing_field',
      'http_status',
    );
  });

  it('wrong types, naming the field', () => {
    expectRefused(() => decodeRequest(pack({ ...base, uuid: 12 })), 'wrong_type', 'uuid');
    expectRefused(() => decodeRequest(pack({ ...base, uuid: Buffer.from('u') })), 'wrong_type', 'uuid');
    expectRefused(() => decodeRequest(pack({ ...base, http_method: true })), 'wrong_type', 'http_method');
    expectRefused(() => decodeRequest(pack({ ...base, client_addr: 1 })), 'wrong_type', 'client_addr');
    expectRefused(() => decodeRequest(pack({ ...base, headers: ['a'] })), 'wrong_type', 'headers');
    expectRefused(() => decodeRequest(pack({ ...base, query: 'a=b' })), 'wrong_type', 'query');
    expectRefused(() => decodeRequest(pack({ ...base, headers: { A: 1 } })), 'wrong_type', 'headers.A');
    expectRefused(() => decodeRequest(pack({ ...base, query: { q: null } })), 'wrong_type', 'query.q');
    expectRefused(
      () => decodeRequest(pack({ ...base, headers: new Map([[1, 'x']]) })),
      'wrong_type',
      'headers',
    );
    expectRefused(() => decodeRequest(pack({ ...base, body: 5 })), 'wrong_type', 'body');
    expectRefused(() => decodeRequest(pack({ ...base, body: [1, 2] })), 'wrong_type', 'body');
    expectRefused(
      () => decodeResponse(pack({ ...baseRes, http_status: '200' })),
      'wrong_type',
      'http_status',
    );
    expectRefused(
      () => decodeResponse(pack({ ...baseRes, http_status: 200.5 })),
      'wrong_type',
      'http_status',
    );
    expectRefused(() => decodeResponse(pack({ ...baseRes, http_status: 42 })), 'wrong_type', 'http_status');
    expectRefused(
      () => decodeResponse(pack({ ...baseRes, body_msg_type: 1 })),
      'wrong_type',
      'body_msg_type',
    );
    // A msgpack timestamp extension where a header value belongs.
    expectRefused(
      () => decodeResponse(pack({ ...baseRes, headers: { Date: new Date(0) } })),
      'wrong_type',
      'headers.Date',
    );
  });

  it('sizes one beyond each limit', () => {
    expectRefused(
      () => decodeRequest(pack({ ...base, uuid: 'u'.repeat(MAX_UUID_CHARS + 1) })),
      'limit_exceeded',
      'uuid',
    );
    expectRefused(
      () => decodeRequest(pack({ ...base, request_uri: '/'.repeat(MAX_REQUEST_URI_BYTES + 1) })),
      'limit_exceeded',
      'request_uri',
    );
    // request_uri is measured in UTF-8 bytes: 4097 two-byte characters are 8194 bytes.
    expectRefused(
      () => decodeRequest(pack({ ...base, request_uri: '\u00e9'.repeat(4097) })),
      'limit_exceeded',
      'request_uri',
    );
    const many: Record<string, string> = {};
    for (let i = 0; i <= MAX_HEADERS; i++) many[`h${i}`] = 'v';
    expectRefused(() => decodeRequest(pack({ ...base, headers: many })), 'limit_exceeded', 'headers');
    expectRefused(() => decodeRequest(pack({ ...base, query: many })), 'limit_exceeded', 'query');
    expectRefused(
      () => decodeResponse(pack({ ...baseRes, headers: { Big: 'v'.repeat(MAX_HEADER_VALUE_BYTES + 1) } })),
      'limit_exceeded',
      'headers.Big',
    );
  });
});
