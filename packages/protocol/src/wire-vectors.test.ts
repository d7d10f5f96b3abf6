// Runs the TypeScript codec against spec/wire-vectors.json, the same file every other client reads.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MessageError, decodeRequest, decodeResponse, encodeRequest, encodeResponse } from './codec.ts';
import { FrameDecoder, FrameError } from './framing.ts';
import type { FrameVector, RequestVector, ResponseVector, WireVector } from './wire-vectors.ts';
import {
  buildWireVectors,
  hexBytes,
  requestFromJson,
  requestToJson,
  responseFromJson,
  responseToJson,
} from './wire-vectors.ts';

const file = new URL('../../../spec/wire-vectors.json', import.meta.url);
const vectors = JSON.parse(readFileSync(file, 'utf8')) as WireVector[];

const messages = vectors.filter((v): v is RequestVector | ResponseVector => v.kind !== 'frame');
const frames = vectors.filter((v): v is FrameVector => v.kind === 'frame');

function decodeMessage(vector: RequestVector | ResponseVector): unknown {
  const bytes = Buffer.from(vector.hex, 'hex');
  return vector.kind === 'request'
    ? requestToJson(decodeRequest(bytes))
    : responseToJson(decodeResponse(bytes));
}

function encodeMessage(vector: RequestVector | ResponseVector): string {
  if (vector.kind === 'request') {
    if (vector.decoded === undefined) throw new Error(`${vector.name} has nothing to encode`);
    return encodeRequest(requestFromJson(vector.decoded)).toString('hex');
  }
  if (vector.decoded === undefined) throw new Error(`${vector.name} has nothing to encode`);
  return encodeResponse(responseFromJson(vector.decoded)).toString('hex');
}

/** Feeds `chunks` to a fresh decoder; returns the bodies, the FrameError if any, and leftover bytes. */
function runFrames(
  vector: FrameVector,
  chunks: Buffer[],
): { bodies: string[]; error?: FrameError; left: number } {
  const decoder = new FrameDecoder({ maxBodyBytes: vector.max_body_bytes });
  const bodies: string[] = [];
  for (const chunk of chunks) {
    try {
      bodies.push(...decoder.push(chunk).map((b) => hexBytes(b).$hex));
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      bodies.push(...error.decoded.map((b) => hexBytes(b).$hex));
      return { bodies, error, left: decoder.bufferedBytes };
    }
  }
  return { bodies, left: decoder.bufferedBytes };
}

describe('spec/wire-vectors.json', () => {
  it('is well formed: unique names, every kind covered, each case either decoded or error', () => {
    const names = vectors.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    for (const kind of ['request', 'response', 'frame']) {
      expect(vectors.some((v) => v.kind === kind && v.error === undefined)).toBe(true);
      expect(vectors.some((v) => v.kind === kind && v.error !== undefined)).toBe(true);
    }
    for (const v of messages) expect(v.decoded === undefined, v.name).toBe(v.error !== undefined);
    expect(vectors.some((v) => v.kind === 'response' && v.decoded?.request_uri === '/svc/event')).toBe(true);
  });

  it('matches the generator (run npm run gen:spec if not)', () => {
    expect(vectors).toEqual(JSON.parse(JSON.stringify(buildWireVectors())));
  });

  describe.each(messages.map((v) => [v.name, v] as const))('%s', (_name, vector) => {
    if (vector.error === undefined) {
      it('decodes to `decoded`', () => {
        expect(decodeMessage(vector)).toEqual(vector.decoded);
      });
      it(
        vector.canonical === true ? 're-encodes byte-identically' : 'is not canonical: re-encoding differs',
        () => {
          expect(encodeMessage(vector) === vector.hex).toBe(vector.canonical === true);
        },
      );
      if (vector.canonical === false) {
        it('re-encodes to the canonical bytes that decode to the same message', () => {
          const canonical = Buffer.from(encodeMessage(vector), 'hex');
          const again =
            vector.kind === 'request'
              ? requestToJson(decodeRequest(canonical))
              : responseToJson(decodeResponse(canonical));
          expect(again).toEqual(vector.decoded);
        });
      }
    } else {
      const expected = vector.error;
      it(`is refused with ${expected.category}${expected.field === undefined ? '' : ` on ${expected.field}`}`, () => {
        let caught: unknown;
        try {
          decodeMessage(vector);
        } catch (error) {
          caught = error;
        }
        expect(caught).toBeInstanceOf(MessageError);
        expect((caught as MessageError).reason).toBe(expected.category);
        expect((caught as MessageError).field).toBe(expected.field);
      });
    }
  });

  describe.each(frames.map((v) => [v.name, v] as const))('%s', (_name, vector) => {
    const stream = Buffer.from(vector.hex, 'hex');
    const chunkings: [string, Buffer[]][] = [
      ['one chunk', [stream]],
      ['byte by byte', Array.from(stream, (byte) => Buffer.from([byte]))],
      ...Array.from({ length: Math.min(stream.byteLength, 64) + 1 }, (_, cut): [string, Buffer[]] => [
        `split at ${cut}`,
        [stream.subarray(0, cut), stream.subarray(cut)],
      ]),
    ];
    it('gives the expected bodies and outcome however the bytes are chunked', () => {
      for (const [how, chunks] of chunkings) {
        const result = runFrames(vector, chunks);
        expect(result.bodies, how).toEqual(vector.decoded.bodies.map((b) => b.$hex));
        const category = vector.error?.category;
        if (category === 'bad_magic' || category === 'too_large') {
          expect(result.error?.reason, how).toBe(category);
        } else {
          expect(result.error, how).toBeUndefined();
          expect(result.left > 0, how).toBe(category === 'truncated');
        }
      }
    });
  });
});
