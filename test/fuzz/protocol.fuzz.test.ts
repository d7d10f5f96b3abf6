// Property-based fuzzing of the wire layer: the TCP frame decoder and the msgpack Request/Response
// codec. Properties: only FrameError / MessageError escape, with a message; valid input round-trips
// whatever the chunking; nothing hangs (bounded sizes and runs). docs/reliability.md.
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  FrameDecoder,
  FrameError,
  HEADER_SIZE,
  MAGIC,
  MAX_HEADERS,
  MAX_REQUEST_URI_BYTES,
  MAX_UUID_CHARS,
  MessageError,
  decodeRequest,
  decodeResponse,
  encodeFrame,
  encodeRequest,
  encodeResponse,
  type Request,
  type Response,
} from '@svc/protocol';
import { FUZZ_TIMEOUT_MS, fuzzParameters, throwsOnly } from '@svc/testkit';

/** Splits `bytes` at the given cut points (each taken modulo the length). */
function split(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => (bytes.length === 0 ? 0 : c % (bytes.length + 1))))].sort(
    (a, b) => a - b,
  );
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    chunks.push(bytes.subarray(from, point));
    from = point;
  }
  chunks.push(bytes.subarray(from));
  return chunks;
}

function header(magic: number, length: number): Buffer {
  const b = Buffer.alloc(HEADER_SIZE);
  b.writeUInt32BE(magic, 0);
  b.writeUInt32BE(length, 4);
  return b;
}

const bodies = fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 8 });
const cuts = fc.array(fc.nat(), { maxLength: 20 });

describe('fuzz: TCP frame decoder', { timeout: FUZZ_TIMEOUT_MS }, () => {
  it('returns every body of a valid stream, however it is split or coalesced', () => {
    fc.assert(
      fc.property(bodies, cuts, (list, points) => {
        const stream = Buffer.concat(list.map((b) => encodeFrame(b)));
        const decoder = new FrameDecoder({ maxBodyBytes: 1024 });
        const out: Buffer[] = [];
        for (const chunk of split(stream, points)) out.push(...decoder.push(chunk));
        expect(out.map((b) => Buffer.from(b).toString('hex'))).toEqual(
          list.map((b) => Buffer.from(b).toString('hex')),
        );
        expect(decoder.bufferedBytes).toBe(0);
      }),
      fuzzParameters(300),
    );
  });

  it('fails random bytes only with FrameError, returns nothing it was not sent, and stays dead', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), cuts, (bytes, points) => {
        const decoder = new FrameDecoder({ maxBodyBytes: 512 });
        let total = 0;
        for (const chunk of split(Buffer.from(bytes), points)) {
          const out = throwsOnly(FrameError, () => decoder.push(chunk));
          if (out === undefined) {
            expect(decoder.dead).toBe(true);
            expect(() => decoder.push(Buffer.from([1]))).toThrow(FrameError);
            return;
          }
          for (const body of out) total += HEADER_SIZE + body.length;
        }
        expect(total + decoder.bufferedBytes).toBe(bytes.length);
      }),
      fuzzParameters(500),
    );
  });

  it('corrupting one byte of a valid stream never yields a body longer than the bound', () => {
    fc.assert(
      fc.property(bodies, fc.nat(), fc.integer({ min: 1, max: 255 }), (list, where, flip) => {
        const stream = Buffer.concat(list.map((b) => encodeFrame(b)));
        if (stream.length === 0) return;
        stream[where % stream.length]! ^= flip;
        const decoder = new FrameDecoder({ maxBodyBytes: 300 });
        const out = throwsOnly(FrameError, () => decoder.push(stream)) ?? [];
        for (const body of out) expect(body.length).toBeLessThanOrEqual(300);
      }),
      fuzzParameters(500),
    );
  });

  it('accepts a length exactly at the bound and refuses every length above it when the header arrives', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4096 }),
        fc.integer({ min: 1, max: 0xffffffff - 4096 }),
        (bound, over) => {
          const atBound = new FrameDecoder({ maxBodyBytes: bound });
          expect(atBound.push(Buffer.concat([header(MAGIC, bound), Buffer.alloc(bound, 7)]))).toHaveLength(1);
          // Only the header is sent: the refusal must not wait for (or allocate) the body.
          const above = new FrameDecoder({ maxBodyBytes: bound });
          const accepted = throwsOnly(FrameError, () => above.push(header(MAGIC, bound + over)));
          expect(accepted, `length ${bound + over} above the bound ${bound} was accepted`).toBeUndefined();
          expect(above.dead).toBe(true);
        },
      ),
      fuzzParameters(200),
    );
  });
});

// ---------------------------------------------------------------------------------------------

const raw = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true, moreTypes: false });

const shortString = fc.string({ maxLength: 40 });
const stringMap = fc.dictionary(shortString, shortString, { maxKeys: 6 });
const request: fc.Arbitrary<Request> = fc.record({
  uuid: fc.string({ maxLength: MAX_UUID_CHARS }),
  request_uri: fc.string({ maxLength: 200 }),
  http_method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
  client_addr: shortString,
  headers: stringMap,
  query: stringMap,
  body: fc.uint8Array({ maxLength: 200 }),
});
const response: fc.Arbitrary<Response> = fc.record({
  uuid: fc.string({ maxLength: MAX_UUID_CHARS }),
  request_uri: fc.string({ maxLength: 200 }),
  http_status: fc.integer({ min: 100, max: 599 }),
  body_msg_type: shortString,
  headers: stringMap,
  body: fc.uint8Array({ maxLength: 200 }),
});

/** Any msgpack-able value, nested a little. */
const anyValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 30 }),
  fc.uint8Array({ maxLength: 30 }),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), {
    maxKeys: 4,
  }),
);

/** A map whose keys are mostly the real ones, with values of any type, some keys missing or extra. */
function hostileMap(keys: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc.dictionary(fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 10 })), anyValue, {
    maxKeys: keys.length + 3,
  });
}

const requestKeys = ['uuid', 'request_uri', 'http_method', 'client_addr', 'headers', 'query', 'body'];
const responseKeys = ['uuid', 'request_uri', 'http_status', 'body_msg_type', 'headers', 'body'];

describe('fuzz: msgpack Request/Response codec', { timeout: FUZZ_TIMEOUT_MS }, () => {
  it('round-trips every valid Request and Response', () => {
    fc.assert(
      fc.property(request, response, (req, res) => {
        const r = decodeRequest(encodeRequest(req));
        expect({ ...r, body: Buffer.from(r.body) }).toEqual({ ...req, body: Buffer.from(req.body) });
        const s = decodeResponse(encodeResponse(res));
        expect({ ...s, body: Buffer.from(s.body) }).toEqual({ ...res, body: Buffer.from(res.body) });
      }),
      fuzzParameters(300),
    );
  });

  it('decodes random bytes to a message or a MessageError, nothing else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        throwsOnly(MessageError, () => decodeRequest(bytes));
        throwsOnly(MessageError, () => decodeResponse(bytes));
      }),
      fuzzParameters(1000),
    );
  });

  it('decodes maps with wrong types, missing and extra keys to a message or a MessageError', () => {
    fc.assert(
      fc.property(hostileMap(requestKeys), hostileMap(responseKeys), (reqMap, resMap) => {
        const req = throwsOnly(MessageError, () => decodeRequest(raw.pack(reqMap)));
        if (req !== undefined) {
          expect(typeof req.uuid).toBe('string');
          expect(req.body).toBeInstanceOf(Uint8Array);
        }
        const res = throwsOnly(MessageError, () => decodeResponse(raw.pack(resMap)));
        if (res !== undefined) expect(Number.isInteger(res.http_status)).toBe(true);
      }),
      fuzzParameters(1000),
    );
  });

  it('refuses huge strings and maps with limit_exceeded, naming the field', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('uuid', 'request_uri', 'header', 'headers'),
        fc.integer({ min: 1, max: 5000 }),
        (field, extra) => {
          const base = { uuid: 'u', request_uri: '/svc/applications', http_method: 'GET' };
          const message: Record<string, unknown> = { ...base };
          if (field === 'uuid') message['uuid'] = 'u'.repeat(MAX_UUID_CHARS + extra);
          if (field === 'request_uri') message['request_uri'] = '/'.repeat(MAX_REQUEST_URI_BYTES + extra);
          if (field === 'header') message['headers'] = { big: 'x'.repeat(64 * 1024 + extra) };
          if (field === 'headers')
            message['headers'] = Object.fromEntries(
              Array.from({ length: MAX_HEADERS + 1 + (extra % 50) }, (_, i) => [`h${i}`, 'v']),
            );
          let error: unknown;
          try {
            decodeRequest(raw.pack(message));
          } catch (e) {
            error = e;
          }
          expect(error).toBeInstanceOf(MessageError);
          expect((error as MessageError).reason).toBe('limit_exceeded');
          expect((error as MessageError).field).toMatch(field === 'header' ? /^headers\.big$/ : field);
        },
      ),
      fuzzParameters(40),
    );
  });
});
