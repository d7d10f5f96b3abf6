// msgpack encoding of the wire messages (CONTRACT §4). Encoders write exactly the contract's key set
// in contract order, as plain msgpack maps with the smallest header forms, `body` as bin, so that any
// language's msgpack library reads them. Decoders are strict about types and limits and lenient about
// what other encoders legitimately do: unknown keys are ignored, optional keys may be absent or nil,
// and `body` may arrive as str (UTF-8 encoded here) instead of bin.
//
// Browser-safe: nothing here needs Node's `Buffer`. In Node msgpackr returns `Buffer`s (a Uint8Array
// subclass), hence the declared return types; where `Buffer` is absent (browsers) it returns plain
// `Uint8Array`s, and UTF-8 lengths and str bodies are computed without `Buffer`.

import { C1, Packr, Unpackr } from 'msgpackr';
import type { Request, Response } from './messages.ts';

/** Longest `uuid`, in characters. */
export const MAX_UUID_CHARS = 128;
/** Longest `request_uri`, in UTF-8 bytes. */
export const MAX_REQUEST_URI_BYTES = 8 * 1024;
/** Most entries in `headers` (and, separately, in `query`). */
export const MAX_HEADERS = 256;
/** Longest header or query name or value, in UTF-8 bytes. */
export const MAX_HEADER_VALUE_BYTES = 64 * 1024;

/**
 * Why a message was refused. Stable across languages (spec/wire-vectors.json uses them):
 * - invalid_msgpack: the bytes are not exactly one msgpack value
 * - not_a_map: the value is not a map
 * - missing_field: a required key is absent (or nil)
 * - wrong_type: a key has a value of the wrong type or range
 * - limit_exceeded: a size limit above is exceeded
 */
export type MessageErrorReason =
  'invalid_msgpack' | 'not_a_map' | 'missing_field' | 'wrong_type' | 'limit_exceeded';

/** A Request or Response could not be decoded or encoded. Maps to the `invalid_frame` error code. */
export class MessageError extends Error {
  readonly reason: MessageErrorReason;
  /** Dotted path of the offending field (`headers.X-App-Name`), or undefined for the whole message. */
  readonly field: string | undefined;

  constructor(
    reason: MessageErrorReason,
    message: string,
    options: { field?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MessageError';
    this.reason = reason;
    this.field = options.field;
  }
}

// variableMapSize gives fixmap/map16/map32 by size (msgpackr otherwise always writes map16);
// useRecords:false and moreTypes:false keep msgpackr's extensions out of the output.
const packr = new Packr({
  useRecords: false,
  mapsAsObjects: true,
  variableMapSize: true,
  moreTypes: false,
  bundleStrings: false,
  encodeUndefinedAsNil: true,
});

// Maps decode to Map so that non-string keys are seen (not coerced to strings) and a `__proto__`
// key is just a key.
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: 'number' });

type Kind = 'Request' | 'Response';

// ---------------------------------------------------------------------------------------------
// encoding

export function encodeRequest(request: Request): Buffer {
  const kind = 'Request';
  checkString(kind, 'uuid', request.uuid);
  checkUuid(kind, request.uuid);
  checkString(kind, 'request_uri', request.request_uri);
  checkRequestUri(kind, request.request_uri);
  checkString(kind, 'http_method', request.http_method);
  checkString(kind, 'client_addr', request.client_addr);
  checkStringMap(kind, 'headers', request.headers);
  checkStringMap(kind, 'query', request.query);
  checkBytes(kind, 'body', request.body);
  return pack({
    uuid: request.uuid,
    request_uri: request.request_uri,
    http_method: request.http_method,
    client_addr: request.client_addr,
    headers: plainMap(request.headers),
    query: plainMap(request.query),
    body: request.body,
  });
}

export function encodeResponse(response: Response): Buffer {
  const kind = 'Response';
  checkString(kind, 'uuid', response.uuid);
  checkUuid(kind, response.uuid);
  checkString(kind, 'request_uri', response.request_uri);
  checkRequestUri(kind, response.request_uri);
  checkStatus(kind, response.http_status);
  checkString(kind, 'body_msg_type', response.body_msg_type);
  checkStringMap(kind, 'headers', response.headers);
  checkBytes(kind, 'body', response.body);
  return pack({
    uuid: response.uuid,
    request_uri: response.request_uri,
    http_status: response.http_status,
    body_msg_type: response.body_msg_type,
    headers: plainMap(response.headers),
    body: response.body,
  });
}

/**
 * A Response whose body is given in parts, encoded as parts: the message with an empty body, its
 * `bin` header rewritten to the parts' total length (bin32, the form any reader takes for any
 * length), then the parts themselves, never joined. Concatenated, the result equals
 * `encodeResponse` of the same message with the joined body, except that the bin header is always
 * bin32. `body` is the last key of a Response, so its bytes end the message.
 */
export function encodeResponseParts(response: Response, parts: readonly Uint8Array[]): Uint8Array[] {
  const head = encodeResponse({ ...response, body: new Uint8Array(0) });
  // An empty bin is `c4 00` (bin8, length 0) at the very end.
  if (head[head.length - 2] !== 0xc4 || head[head.length - 1] !== 0x00)
    throw new Error('encodeResponseParts: the encoded body is not the last field');
  const total = parts.reduce((sum, part) => sum + part.byteLength, 0);
  const binHeader = new Uint8Array(5);
  binHeader[0] = 0xc6;
  new DataView(binHeader.buffer).setUint32(1, total);
  return [head.subarray(0, head.length - 2), binHeader, ...parts];
}

function pack(value: Record<string, unknown>): Buffer {
  // Safe to keep: without the `useBuffer` option msgpackr never writes over bytes it has returned.
  // A `Buffer` in Node; a plain `Uint8Array` where there is no `Buffer` (browsers).
  return packr.pack(value);
}

// `globalThis.Buffer`, not `Buffer`: a bare reference would throw where it is not defined.
const NodeBuffer: typeof Buffer | undefined = (globalThis as { Buffer?: typeof Buffer }).Buffer;
const utf8Encoder = new TextEncoder();

/** UTF-8 encoding: a `Buffer` in Node (as before), a `Uint8Array` elsewhere. */
function utf8Bytes(text: string): Uint8Array {
  return NodeBuffer === undefined ? utf8Encoder.encode(text) : NodeBuffer.from(text, 'utf8');
}

/**
 * Length of `text` in UTF-8 without encoding it; equals `Buffer.byteLength(text, 'utf8')` and
 * `TextEncoder` output length (a lone surrogate counts as U+FFFD, 3 bytes).
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (
      unit >= 0xd800 &&
      unit < 0xdc00 &&
      i + 1 < text.length &&
      (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    ) {
      bytes += 4; // a surrogate pair: one code point above U+FFFF
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Copies into a null-prototype-free plain object with only own enumerable string entries. */
function plainMap(map: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(map)) setEntry(out, key, map[key]!);
  return out;
}

/**
 * `out[key] = value` as an own data property, also for the key `__proto__` (which an assignment
 * would take for the prototype setter); the plain assignment elsewhere keeps V8's fast properties.
 */
function setEntry(out: Record<string, string>, key: string, value: string): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

// ---------------------------------------------------------------------------------------------
// decoding

export function decodeRequest(bytes: Uint8Array): Request {
  const kind = 'Request';
  const map = unpackMap(kind, bytes);
  const uuid = requiredString(kind, map, 'uuid');
  checkUuid(kind, uuid);
  const request_uri = requiredString(kind, map, 'request_uri');
  checkRequestUri(kind, request_uri);
  const http_method = requiredString(kind, map, 'http_method');
  return {
    uuid,
    request_uri,
    http_method,
    client_addr: optionalString(kind, map, 'client_addr'),
    headers: optionalStringMap(kind, map, 'headers'),
    query: optionalStringMap(kind, map, 'query'),
    body: optionalBody(kind, map),
  };
}

export function decodeResponse(bytes: Uint8Array): Response {
  const kind = 'Response';
  const map = unpackMap(kind, bytes);
  const uuid = requiredString(kind, map, 'uuid');
  checkUuid(kind, uuid);
  const request_uri = requiredString(kind, map, 'request_uri');
  checkRequestUri(kind, request_uri);
  const http_status = map.get('http_status');
  if (http_status === undefined || http_status === null) {
    throw new MessageError('missing_field', `${kind}: required key "http_status" is missing`, {
      field: 'http_status',
    });
  }
  checkStatus(kind, http_status);
  return {
    uuid,
    request_uri,
    http_status,
    body_msg_type: optionalString(kind, map, 'body_msg_type'),
    headers: optionalStringMap(kind, map, 'headers'),
    body: optionalBody(kind, map),
  };
}

function unpackMap(kind: Kind, bytes: Uint8Array): Map<unknown, unknown> {
  if (!(bytes instanceof Uint8Array)) {
    throw new MessageError('invalid_msgpack', `${kind}: expected bytes, got ${describe(bytes)}`);
  }
  if (bytes.byteLength === 0) {
    throw new MessageError('invalid_msgpack', `${kind}: empty body, expected a msgpack map`);
  }
  let value: unknown;
  try {
    value = unpackr.unpack(bytes);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new MessageError('invalid_msgpack', `${kind}: not a single msgpack value (${detail})`, {
      cause: error,
    });
  }
  if (value === C1) {
    // msgpackr returns a marker for the never-used byte 0xc1 where other libraries throw.
    throw new MessageError('invalid_msgpack', `${kind}: the reserved byte 0xc1 is not a msgpack value`);
  }
  if (!(value instanceof Map)) {
    throw new MessageError('not_a_map', `${kind}: expected a msgpack map, got ${describe(value)}`);
  }
  return value;
}

function requiredString(kind: Kind, map: Map<unknown, unknown>, key: string): string {
  const value = map.get(key);
  if (value === undefined || value === null) {
    throw new MessageError('missing_field', `${kind}: required key "${key}" is missing`, { field: key });
  }
  checkString(kind, key, value);
  return value;
}

function optionalString(kind: Kind, map: Map<unknown, unknown>, key: string): string {
  const value = map.get(key);
  if (value === undefined || value === null) return '';
  checkString(kind, key, value);
  return value;
}

function optionalStringMap(
  kind: Kind,
  map: Map<unknown, unknown>,
  key: 'headers' | 'query',
): Record<string, string> {
  const value = map.get(key);
  if (value === undefined || value === null) return {};
  if (!(value instanceof Map)) {
    throw new MessageError(
      'wrong_type',
      `${kind}: "${key}" must be a map of string to string, got ${describe(value)}`,
      {
        field: key,
      },
    );
  }
  if (value.size > MAX_HEADERS) {
    throw new MessageError(
      'limit_exceeded',
      `${kind}: "${key}" has ${value.size} entries, at most ${MAX_HEADERS}`,
      {
        field: key,
      },
    );
  }
  const out: Record<string, string> = {};
  for (const [name, entry] of value) {
    if (typeof name !== 'string') {
      throw new MessageError(
        'wrong_type',
        `${kind}: "${key}" has a ${describe(name)} key, keys must be strings`,
        {
          field: key,
        },
      );
    }
    checkEntry(kind, key, name, entry);
    setEntry(out, name, entry);
  }
  return out;
}

function optionalBody(kind: Kind, map: Map<unknown, unknown>): Uint8Array {
  const value = map.get('body');
  if (value === undefined || value === null) return new Uint8Array(0);
  if (typeof value === 'string') return utf8Bytes(value);
  if (value instanceof Uint8Array) return value;
  throw new MessageError('wrong_type', `${kind}: "body" must be bin or str, got ${describe(value)}`, {
    field: 'body',
  });
}

// ---------------------------------------------------------------------------------------------
// checks shared by encoders and decoders

function checkString(kind: Kind, key: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') {
    throw new MessageError('wrong_type', `${kind}: "${key}" must be a string, got ${describe(value)}`, {
      field: key,
    });
  }
}

function checkUuid(kind: Kind, uuid: string): void {
  if (uuid.length > MAX_UUID_CHARS) {
    throw new MessageError(
      'limit_exceeded',
      `${kind}: "uuid" has ${uuid.length} characters, at most ${MAX_UUID_CHARS}`,
      { field: 'uuid' },
    );
  }
}

function checkRequestUri(kind: Kind, uri: string): void {
  const bytes = utf8ByteLengthAbove(uri, MAX_REQUEST_URI_BYTES);
  if (bytes > MAX_REQUEST_URI_BYTES) {
    throw new MessageError(
      'limit_exceeded',
      `${kind}: "request_uri" has ${bytes} bytes, at most ${MAX_REQUEST_URI_BYTES}`,
      { field: 'request_uri' },
    );
  }
}

function checkStatus(kind: Kind, status: unknown): asserts status is number {
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    throw new MessageError(
      'wrong_type',
      `${kind}: "http_status" must be an integer in [100, 599], got ${describe(status)}`,
      { field: 'http_status' },
    );
  }
}

function checkBytes(kind: Kind, key: string, value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new MessageError('wrong_type', `${kind}: "${key}" must be a Uint8Array, got ${describe(value)}`, {
      field: key,
    });
  }
}

function checkStringMap(
  kind: Kind,
  key: 'headers' | 'query',
  value: unknown,
): asserts value is Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new MessageError(
      'wrong_type',
      `${kind}: "${key}" must be an object of strings, got ${describe(value)}`,
      {
        field: key,
      },
    );
  }
  const names = Object.keys(value);
  if (names.length > MAX_HEADERS) {
    throw new MessageError(
      'limit_exceeded',
      `${kind}: "${key}" has ${names.length} entries, at most ${MAX_HEADERS}`,
      { field: key },
    );
  }
  for (const name of names) checkEntry(kind, key, name, (value as Record<string, unknown>)[name]);
}

function checkEntry(kind: Kind, key: string, name: string, entry: unknown): asserts entry is string {
  if (typeof entry !== 'string') {
    const field = `${key}.${name}`;
    throw new MessageError('wrong_type', `${kind}: "${field}" must be a string, got ${describe(entry)}`, {
      field,
    });
  }
  const nameBytes = utf8ByteLengthAbove(name, MAX_HEADER_VALUE_BYTES);
  if (nameBytes > MAX_HEADER_VALUE_BYTES) {
    throw new MessageError(
      'limit_exceeded',
      `${kind}: a "${key}" name has ${nameBytes} bytes, at most ${MAX_HEADER_VALUE_BYTES}`,
      { field: key },
    );
  }
  const valueBytes = utf8ByteLengthAbove(entry, MAX_HEADER_VALUE_BYTES);
  if (valueBytes > MAX_HEADER_VALUE_BYTES) {
    const field = `${key}.${name}`;
    throw new MessageError(
      'limit_exceeded',
      `${kind}: "${field}" has ${valueBytes} bytes, at most ${MAX_HEADER_VALUE_BYTES}`,
      { field },
    );
  }
}

/**
 * The UTF-8 length of `text` when it may exceed `limit`; otherwise a number ≤ `limit` without
 * counting (one UTF-16 unit is at most 3 UTF-8 bytes): the check of every header and query entry
 * stays O(1) for the short strings that nearly all are.
 */
function utf8ByteLengthAbove(text: string, limit: number): number {
  return text.length * 3 <= limit ? text.length : utf8ByteLength(text);
}

function describe(value: unknown): string {
  if (value === null) return 'nil';
  if (value === undefined) return 'nothing';
  if (value === C1) return 'the reserved byte 0xc1';
  if (value instanceof Map) return 'a map';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'bin';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'number') return Number.isInteger(value) ? `int ${value}` : `float ${value}`;
  if (typeof value === 'bigint') return `int ${value}`;
  if (typeof value === 'boolean') return `bool ${value}`;
  if (typeof value === 'object')
    return `${value.constructor?.name ?? 'object'} (msgpack ext or unsupported type)`;
  return typeof value;
}
