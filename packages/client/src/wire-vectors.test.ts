// The client's own send and receive paths against spec/wire-vectors.json (the file every client reads):
// requests are encoded as the transports encode them, byte streams go through the TCP read path
// (createFrameReader, 1 GiB bound) and responses through the demultiplexer.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CLIENT_MAX_BODY_BYTES,
  FrameDecoder,
  FrameError,
  MessageError,
  encodeFrame,
  encodeRequest,
  encodeResponse,
  type Response,
} from '@svc/protocol';
import {
  requestFromJson,
  responseFromJson,
  responseToJson,
  type FrameVector,
  type RequestVector,
  type ResponseVector,
  type WireVector,
} from '@svc/protocol/wire-vectors';
import { Demultiplexer } from './demux.ts';
import { createFrameReader } from './frame-reader.ts';
import type { SubscriptionEvent } from './types.ts';

const vectors = JSON.parse(
  readFileSync(new URL('../../../spec/wire-vectors.json', import.meta.url), 'utf8'),
) as WireVector[];
const requests = vectors.filter((v): v is RequestVector => v.kind === 'request');
const responses = vectors.filter((v): v is ResponseVector => v.kind === 'response');
const frames = vectors.filter((v): v is FrameVector => v.kind === 'frame');

/** Runs bytes through the client's TCP read path; returns what reached the sink and the failure. */
function read(bytes: Buffer, chunked: boolean, maxBodyBytes = CLIENT_MAX_BODY_BYTES) {
  const delivered: Response[] = [];
  let failure: unknown;
  const reader = createFrameReader(
    (r) => delivered.push(r),
    (e) => (failure = e),
    maxBodyBytes,
  );
  if (chunked) for (const byte of bytes) reader.push(Buffer.from([byte]));
  else reader.push(bytes);
  return { delivered, failure, left: reader.bufferedBytes };
}

describe('client send path: request vectors', () => {
  it.each(requests.filter((v) => v.canonical === true).map((v) => [v.name, v] as const))(
    '%s encodes byte-identically',
    (_name, vector) => {
      expect(encodeRequest(requestFromJson(vector.decoded!)).toString('hex')).toBe(vector.hex);
    },
  );
});

describe('client receive path: response vectors framed and read', () => {
  it.each(responses.map((v) => [v.name, v] as const))('%s', (_name, vector) => {
    const stream = encodeFrame(Buffer.from(vector.hex, 'hex'));
    for (const chunked of [false, true]) {
      const { delivered, failure } = read(stream, chunked);
      if (vector.error === undefined) {
        expect(failure).toBeUndefined();
        expect(delivered.map(responseToJson)).toEqual([vector.decoded]);
      } else {
        expect(delivered).toEqual([]);
        expect(failure).toBeInstanceOf(MessageError);
        expect((failure as MessageError).reason).toBe(vector.error.category);
      }
    }
  });

  it('an event push vector reaches its subscription callback through the demultiplexer', () => {
    const pushes = responses.filter((v) => v.decoded?.request_uri === '/svc/event');
    expect(pushes.length).toBeGreaterThan(0);
    for (const vector of pushes) {
      const message = responseFromJson(vector.decoded!);
      const demux = new Demultiplexer();
      const got: SubscriptionEvent[] = [];
      const { delivered } = read(encodeFrame(encodeResponse(message)), false);
      for (const response of delivered) demux.deliver(response);
      const body = JSON.parse(Buffer.from(message.body).toString('utf8')) as { subscription_id?: string };
      const id =
        body.subscription_id ??
        Object.entries(message.headers).find(([k]) => k.toLowerCase() === 'x-subscription-id')?.[1];
      expect(id, vector.name).toBeDefined();
      demux.register(id!, (event) => {
        got.push(event);
      });
      expect(got, vector.name).toHaveLength(1);
      expect(got[0]!.subscription_id).toBe(id);
    }
  });
});

describe('client framing: frame vectors (the FrameDecoder the TCP reader uses)', () => {
  it.each(frames.map((v) => [v.name, v] as const))('%s', (_name, vector) => {
    const stream = Buffer.from(vector.hex, 'hex');
    for (const chunks of [[stream], Array.from(stream, (byte) => Buffer.from([byte]))]) {
      const decoder = new FrameDecoder({ maxBodyBytes: vector.max_body_bytes });
      const bodies: string[] = [];
      let failure: FrameError | undefined;
      for (const chunk of chunks) {
        try {
          bodies.push(...decoder.push(chunk).map((b) => b.toString('hex')));
        } catch (error) {
          if (!(error instanceof FrameError)) throw error;
          bodies.push(...error.decoded.map((b) => b.toString('hex')));
          failure = error;
          break;
        }
      }
      expect(bodies).toEqual(vector.decoded.bodies.map((b) => b.$hex));
      const category = vector.error?.category;
      if (category === 'bad_magic' || category === 'too_large') expect(failure?.reason).toBe(category);
      else {
        expect(failure).toBeUndefined();
        expect(decoder.bufferedBytes > 0).toBe(category === 'truncated');
      }
    }
  });

  it('the TCP reader fails the connection on a frame vector with a framing error', () => {
    for (const vector of frames.filter(
      (v) => v.error?.category === 'bad_magic' || v.error?.category === 'too_large',
    )) {
      const { failure } = read(Buffer.from(vector.hex, 'hex'), false, vector.max_body_bytes);
      // Bodies before the bad header are served first (here they are not Responses: that fails first).
      expect(failure, vector.name).toBeInstanceOf(
        vector.decoded.bodies.length === 0 ? FrameError : MessageError,
      );
    }
  });
});
