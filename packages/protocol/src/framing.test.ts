import { describe, expect, it } from 'vitest';
import { seededRandom } from '@svc/testkit';
import {
  CLIENT_MAX_BODY_BYTES,
  DAEMON_MAX_BODY_BYTES,
  FrameDecoder,
  FrameError,
  HEADER_SIZE,
  MAGIC,
  encodeFrame,
  encodeFrameHeader,
} from './framing.ts';

/** Deterministic PRNG (mulberry32) so that a failing seed reproduces. */
const rng = seededRandom;

function header(magic: number, length: number): Buffer {
  const b = Buffer.alloc(HEADER_SIZE);
  b.writeUInt32BE(magic, 0);
  b.writeUInt32BE(length, 4);
  return b;
}

function catchFrameError(fn: () => unknown): FrameError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(FrameError);
    return error as FrameError;
  }
  throw new Error('expected a FrameError');
}

describe('constants', () => {
  it('match the spec', () => {
    expect(MAGIC).toBe(0x07c707f8);
    expect(HEADER_SIZE).toBe(8);
    expect(DAEMON_MAX_BODY_BYTES).toBe(268435456);
    expect(CLIENT_MAX_BODY_BYTES).toBe(1073741824);
  });
});

describe('encodeFrame', () => {
  it('writes big-endian magic, big-endian body length, then the body', () => {
    const frame = encodeFrame(new Uint8Array([0xaa, 0xbb, 0xcc]));
    expect(frame.toString('hex')).toBe('07c707f800000003aabbcc');
  });

  it('encodes a 0-length body as a bare header', () => {
    expect(encodeFrame(new Uint8Array(0)).toString('hex')).toBe('07c707f800000000');
  });

  it('refuses a body above an optional send bound', () => {
    const error = catchFrameError(() => encodeFrame(new Uint8Array(5), 4));
    expect(error.reason).toBe('too_large');
    expect(error.length).toBe(5);
    expect(encodeFrame(new Uint8Array(4), 4).byteLength).toBe(12);
  });

  it('encodeFrameHeader rejects lengths the 32-bit field cannot carry', () => {
    expect(() => encodeFrameHeader(-1)).toThrow(RangeError);
    expect(() => encodeFrameHeader(1.5)).toThrow(RangeError);
    expect(catchFrameError(() => encodeFrameHeader(0x1_0000_0000)).reason).toBe('too_large');
    expect(encodeFrameHeader(0xffffffff).toString('hex')).toBe('07c707f8ffffffff');
  });
});

describe('FrameDecoder', () => {
  it('returns a single frame pushed whole', () => {
    const decoder = new FrameDecoder();
    const bodies = decoder.push(encodeFrame(Buffer.from('hello')));
    expect(bodies.map((b) => b.toString())).toEqual(['hello']);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('returns a 0-length body', () => {
    const decoder = new FrameDecoder();
    const bodies = decoder.push(encodeFrame(new Uint8Array(0)));
    expect(bodies).toHaveLength(1);
    expect(bodies[0]?.byteLength).toBe(0);
  });

  it('decodes when split at every byte boundary into two chunks', () => {
    const stream = Buffer.concat([
      encodeFrame(Buffer.from('first body')),
      encodeFrame(new Uint8Array(0)),
      encodeFrame(Buffer.from('third')),
    ]);
    for (let cut = 0; cut <= stream.byteLength; cut++) {
      const decoder = new FrameDecoder();
      const bodies = [...decoder.push(stream.subarray(0, cut)), ...decoder.push(stream.subarray(cut))];
      expect(
        bodies.map((b) => b.toString()),
        `cut at ${cut}`,
      ).toEqual(['first body', '', 'third']);
      expect(decoder.bufferedBytes).toBe(0);
    }
  });

  it('decodes when fed one byte at a time, returning each body exactly when its last byte arrives', () => {
    const frame = encodeFrame(Buffer.from('abc'));
    const decoder = new FrameDecoder();
    for (let i = 0; i < frame.byteLength - 1; i++) {
      expect(decoder.push(frame.subarray(i, i + 1)), `byte ${i}`).toEqual([]);
      expect(decoder.bufferedBytes).toBe(i + 1);
    }
    const last = decoder.push(frame.subarray(frame.byteLength - 1));
    expect(last.map((b) => b.toString())).toEqual(['abc']);
  });

  it('returns many coalesced frames from one chunk, in order', () => {
    const frames = Array.from({ length: 100 }, (_, i) => encodeFrame(Buffer.from(`body-${i}`)));
    const decoder = new FrameDecoder();
    const bodies = decoder.push(Buffer.concat(frames));
    expect(bodies.map((b) => b.toString())).toEqual(Array.from({ length: 100 }, (_, i) => `body-${i}`));
  });

  it('keeps a partial trailing frame after coalesced complete ones', () => {
    const stream = Buffer.concat([encodeFrame(Buffer.from('a')), encodeFrame(Buffer.from('bb'))]);
    const decoder = new FrameDecoder();
    expect(decoder.push(stream.subarray(0, stream.byteLength - 1)).map(String)).toEqual(['a']);
    expect(decoder.bufferedBytes).toBe(HEADER_SIZE + 1);
    expect(decoder.push(stream.subarray(stream.byteLength - 1)).map(String)).toEqual(['bb']);
  });

  it('ignores empty chunks', () => {
    const decoder = new FrameDecoder();
    expect(decoder.push(Buffer.alloc(0))).toEqual([]);
    expect(decoder.push(encodeFrame(Buffer.from('x'))).map(String)).toEqual(['x']);
    expect(decoder.push(Buffer.alloc(0))).toEqual([]);
  });

  it('accepts a body of exactly maxBodyBytes and rejects maxBodyBytes + 1 at the header', () => {
    const atLimit = new FrameDecoder({ maxBodyBytes: 16 });
    const body = Buffer.alloc(16, 7);
    expect(atLimit.push(encodeFrame(body))).toEqual([body]);

    const overLimit = new FrameDecoder({ maxBodyBytes: 16 });
    const error = catchFrameError(() => overLimit.push(header(MAGIC, 17)));
    expect(error.reason).toBe('too_large');
    expect(error.length).toBe(17);
  });

  it('rejects an oversized length as soon as the header is complete, before any body byte', () => {
    const decoder = new FrameDecoder();
    const big = header(MAGIC, DAEMON_MAX_BODY_BYTES + 1);
    expect(decoder.push(big.subarray(0, 7))).toEqual([]);
    const error = catchFrameError(() => decoder.push(big.subarray(7)));
    expect(error.reason).toBe('too_large');
    expect(error.length).toBe(DAEMON_MAX_BODY_BYTES + 1);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('applies the daemon bound by default and the client bound when asked', () => {
    expect(new FrameDecoder().maxBodyBytes).toBe(DAEMON_MAX_BODY_BYTES);
    const client = new FrameDecoder({ maxBodyBytes: CLIENT_MAX_BODY_BYTES });
    // A 512 MiB announcement is fine for a client (only the header is pushed, nothing is buffered).
    expect(client.push(header(MAGIC, 512 * 1024 * 1024))).toEqual([]);
    expect(client.bufferedBytes).toBe(HEADER_SIZE);
    expect(catchFrameError(() => new FrameDecoder().push(header(MAGIC, 512 * 1024 * 1024))).reason).toBe(
      'too_large',
    );
    expect(
      catchFrameError(() =>
        new FrameDecoder({ maxBodyBytes: CLIENT_MAX_BODY_BYTES }).push(
          header(MAGIC, CLIENT_MAX_BODY_BYTES + 1),
        ),
      ).reason,
    ).toBe('too_large');
  });

  it('rejects an invalid maxBodyBytes option', () => {
    expect(() => new FrameDecoder({ maxBodyBytes: -1 })).toThrow(RangeError);
    expect(() => new FrameDecoder({ maxBodyBytes: 0x1_0000_0000 })).toThrow(RangeError);
  });

  it('rejects bad magic and reports what it read', () => {
    const decoder = new FrameDecoder();
    const error = catchFrameError(() => decoder.push(header(0xdeadbeef, 0)));
    expect(error.reason).toBe('bad_magic');
    expect(error.magic).toBe(0xdeadbeef);
    expect(error.message).toContain('0xdeadbeef');
  });

  it('rejects a little-endian magic (byte order matters)', () => {
    const le = Buffer.alloc(HEADER_SIZE);
    le.writeUInt32LE(MAGIC, 0);
    expect(catchFrameError(() => new FrameDecoder().push(le)).reason).toBe('bad_magic');
  });

  it('rejects plain HTTP sent to the TCP port', () => {
    const error = catchFrameError(() => new FrameDecoder().push(Buffer.from('GET / HTTP/1.1\r\n\r\n')));
    expect(error.reason).toBe('bad_magic');
  });

  it('hands back the bodies completed in the failing push before the bad header', () => {
    const stream = Buffer.concat([
      encodeFrame(Buffer.from('ok-1')),
      encodeFrame(Buffer.from('ok-2')),
      header(1, 0),
    ]);
    const error = catchFrameError(() => new FrameDecoder().push(stream));
    expect(error.reason).toBe('bad_magic');
    expect(error.decoded.map(String)).toEqual(['ok-1', 'ok-2']);
  });

  it('is dead after an error: every later push throws, even a valid frame', () => {
    const decoder = new FrameDecoder();
    catchFrameError(() => decoder.push(header(0, 0)));
    expect(decoder.dead).toBe(true);
    const again = catchFrameError(() => decoder.push(encodeFrame(Buffer.from('valid'))));
    expect(again.reason).toBe('bad_magic');
    expect(again.message).toContain('dead');
    expect(again.cause).toBeInstanceOf(FrameError);
    expect(() => decoder.push(Buffer.alloc(0))).toThrow(FrameError);
  });

  it('returns a body inside a single chunk as a view, without copying', () => {
    const chunk = encodeFrame(Buffer.from('zero-copy'));
    const [body] = new FrameDecoder().push(chunk);
    expect(body?.buffer).toBe(chunk.buffer);
  });

  it('reassembles a large frame from many chunks with one copy', () => {
    const body = Buffer.alloc(4 * 1024 * 1024);
    for (let i = 0; i < body.byteLength; i += 4096) body[i] = (i / 4096) & 0xff;
    const frame = encodeFrame(body);
    const decoder = new FrameDecoder();
    const out: Buffer[] = [];
    for (let i = 0; i < frame.byteLength; i += 1000) out.push(...decoder.push(frame.subarray(i, i + 1000)));
    expect(out).toHaveLength(1);
    expect(out[0]?.equals(body)).toBe(true);
  });

  it('survives random chunking of random frames (seeded, deterministic)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const random = rng(seed);
      const expected: Buffer[] = [];
      for (let n = Math.floor(random() * 20); n > 0; n--) {
        const size = random() < 0.2 ? 0 : Math.floor(random() * (random() < 0.1 ? 5000 : 64));
        const body = Buffer.alloc(size);
        for (let i = 0; i < size; i++) body[i] = Math.floor(random() * 256);
        expected.push(body);
      }
      const stream = Buffer.concat(expected.map((b) => encodeFrame(b)));
      const decoder = new FrameDecoder({ maxBodyBytes: 5000 });
      const got: Buffer[] = [];
      let at = 0;
      while (at < stream.byteLength) {
        const len = Math.min(stream.byteLength - at, Math.floor(random() * 40));
        got.push(...decoder.push(stream.subarray(at, at + len)));
        at += len;
      }
      expect(got.length, `seed ${seed}`).toBe(expected.length);
      got.forEach((body, i) =>
        expect(body.equals(expected[i] ?? Buffer.alloc(0)), `seed ${seed} body ${i}`).toBe(true),
      );
      expect(decoder.bufferedBytes, `seed ${seed}`).toBe(0);
    }
  });
});
