// Frames: feed `hex` to a fresh decoder with `max_body_bytes`, in any chunking; it returns
// `decoded.bodies`, then fails with `error` (if any) or reaches the end of the stream.
import { encodeRequest } from '../codec.ts';
import { CLIENT_MAX_BODY_BYTES, DAEMON_MAX_BODY_BYTES, MAGIC, encodeFrame } from '../framing.ts';
import { hexBytes, type FrameVector } from './json.ts';
import { getApps, header } from './kit.ts';

export function frameVectors(): FrameVector[] {
  const body = encodeRequest(getApps);
  return [...deliveredFrames(body), ...refusedFrames(body), ...truncatedFrames(body)];
}

/** Whole frames: every body delivered. */
function deliveredFrames(body: Buffer): FrameVector[] {
  return [
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
  ];
}

/** A frame the decoder refuses (too large, bad magic), after the bodies before it. */
function refusedFrames(body: Buffer): FrameVector[] {
  return [
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
  ];
}

/** The stream ends inside a frame. */
function truncatedFrames(body: Buffer): FrameVector[] {
  return [
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
}
