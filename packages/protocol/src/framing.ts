// TCP wire framing (spec "TCP wire framing"). The header layout and magic never change.
//
//   0        4        8                      8 + length
//   +--------+--------+----------------------+
//   | magic  | length | body (msgpack)       |
//   +--------+--------+----------------------+
//   uint32 BE uint32 BE, excludes the 8-byte header

/** First four bytes of every frame, big-endian. */
export const MAGIC = 0x07c707f8;
/** Bytes of the frame header: magic then body length. */
export const HEADER_SIZE = 8;
/** Largest body the daemon accepts inbound: 256 MiB. */
export const DAEMON_MAX_BODY_BYTES = 256 * 1024 * 1024;
/** Largest body clients accept (and the bound they may enforce on send): 1 GiB. */
export const CLIENT_MAX_BODY_BYTES = 1024 * 1024 * 1024;
/** Largest length the 32-bit length field can carry. */
export const MAX_LENGTH_FIELD = 0xffffffff;

export type FrameErrorReason = 'bad_magic' | 'too_large';

/** The byte stream is not svc framing, or announces a body above the bound. Fatal to the connection. */
export class FrameError extends Error {
  readonly reason: FrameErrorReason;
  /** The magic read from the header (bad_magic) or undefined. */
  readonly magic: number | undefined;
  /** The announced body length (too_large) or undefined. */
  readonly length: number | undefined;
  /** Complete bodies decoded by the failing push before the bad header; the caller may still serve them. */
  readonly decoded: readonly Buffer[];

  constructor(
    reason: FrameErrorReason,
    message: string,
    details: { magic?: number; length?: number; decoded?: readonly Buffer[]; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'FrameError';
    this.reason = reason;
    this.magic = details.magic;
    this.length = details.length;
    this.decoded = details.decoded ?? [];
  }
}

/** The 8-byte header for a body of `bodyLength` bytes; lets a writer send header and body without a copy. */
export function encodeFrameHeader(bodyLength: number, maxBodyBytes: number = MAX_LENGTH_FIELD): Buffer {
  if (!Number.isSafeInteger(bodyLength) || bodyLength < 0) {
    throw new RangeError(`frame body length must be a non-negative integer, got ${bodyLength}`);
  }
  if (bodyLength > Math.min(maxBodyBytes, MAX_LENGTH_FIELD)) {
    throw new FrameError(
      'too_large',
      `frame body of ${bodyLength} bytes exceeds the bound of ${Math.min(maxBodyBytes, MAX_LENGTH_FIELD)} bytes`,
      { length: bodyLength },
    );
  }
  const header = Buffer.allocUnsafe(HEADER_SIZE);
  header.writeUInt32BE(MAGIC, 0);
  header.writeUInt32BE(bodyLength, 4);
  return header;
}

/** One complete frame: header followed by a copy of `body`. */
export function encodeFrame(body: Uint8Array, maxBodyBytes: number = MAX_LENGTH_FIELD): Buffer {
  const frame = Buffer.allocUnsafe(HEADER_SIZE + body.byteLength);
  encodeFrameHeader(body.byteLength, maxBodyBytes).copy(frame, 0);
  frame.set(body, HEADER_SIZE);
  return frame;
}

export interface FrameDecoderOptions {
  /** Bodies announced above this many bytes are rejected when their header arrives. Default: 256 MiB. */
  maxBodyBytes?: number;
  /**
   * Called with each announced body length (within `maxBodyBytes`) before any byte of that body is
   * kept: return true to go on, false to hold (the decoder keeps what it has, decodes nothing more
   * until `proceed()`; the caller stops reading meanwhile), or throw a FrameError to refuse the frame
   * (the decoder is then dead). A server decides its memory budgets here.
   */
  admit?: (length: number) => boolean;
}

function checkedBound(max: number): number {
  if (!Number.isSafeInteger(max) || max < 0 || max > MAX_LENGTH_FIELD)
    throw new RangeError(`maxBodyBytes must be an integer in [0, ${MAX_LENGTH_FIELD}], got ${max}`);
  return max;
}

/**
 * Incremental decoder for a byte stream of frames. Feed it every chunk read from the socket; it
 * returns each complete body once. Chunks are kept in a list and joined only when a frame is
 * complete, so a large frame arriving in many chunks costs one copy, and a body that lies within a
 * single chunk is returned as a view of that chunk without a copy.
 *
 * After a FrameError the decoder is dead: the stream position is lost, the connection must close.
 */
export class FrameDecoder {
  #maxBodyBytes: number;
  #chunks: Buffer[] = [];
  /** Read offset into #chunks[0]. */
  #offset = 0;
  /** Unconsumed bytes across #chunks. */
  #buffered = 0;
  /** Body length of the frame whose header was read, or -1 while waiting for a header. */
  #bodyLength = -1;
  #failure: FrameError | undefined;
  readonly #admit: ((length: number) => boolean) | undefined;
  /** The frame whose header was read waits for `proceed()` (admit returned false). */
  #held = false;

  constructor(options: FrameDecoderOptions = {}) {
    this.#maxBodyBytes = checkedBound(options.maxBodyBytes ?? DAEMON_MAX_BODY_BYTES);
    this.#admit = options.admit;
  }

  /** Whether a frame waits for `proceed()`. */
  get held(): boolean {
    return this.#held;
  }

  /** Goes on with the held frame: the bodies complete with the bytes already pushed. */
  proceed(): Buffer[] {
    this.#held = false;
    return this.push(Buffer.alloc(0));
  }

  /** The bound checked against each header read from now on (a daemon raises it once the peer authenticated). */
  get maxBodyBytes(): number {
    return this.#maxBodyBytes;
  }

  set maxBodyBytes(max: number) {
    this.#maxBodyBytes = checkedBound(max);
  }

  /** Bytes received but not yet returned as a body, header bytes included. Non-zero at end of stream = truncated. */
  get bufferedBytes(): number {
    return this.#buffered + (this.#bodyLength >= 0 ? HEADER_SIZE : 0);
  }

  /** True once a FrameError was thrown; every later push throws it again. */
  get dead(): boolean {
    return this.#failure !== undefined;
  }

  push(chunk: Buffer): Buffer[] {
    if (this.#failure !== undefined) {
      throw new FrameError(this.#failure.reason, `frame decoder is dead after: ${this.#failure.message}`, {
        cause: this.#failure,
      });
    }
    if (chunk.byteLength > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.byteLength;
    }
    const bodies: Buffer[] = [];
    while (!this.#held) {
      if (this.#bodyLength < 0) {
        if (this.#buffered < HEADER_SIZE) break;
        const header = this.#take(HEADER_SIZE);
        const magic = header.readUInt32BE(0);
        const length = header.readUInt32BE(4);
        if (magic !== MAGIC) {
          throw this.#fail(
            new FrameError(
              'bad_magic',
              `bad frame magic 0x${magic.toString(16).padStart(8, '0')}, expected 0x${MAGIC.toString(16).padStart(8, '0')}`,
              { magic, decoded: bodies },
            ),
          );
        }
        if (length > this.maxBodyBytes) {
          throw this.#fail(
            new FrameError(
              'too_large',
              `frame body of ${length} bytes exceeds the bound of ${this.maxBodyBytes} bytes`,
              { length, decoded: bodies },
            ),
          );
        }
        this.#bodyLength = length;
        if (this.#admit !== undefined) {
          let go: boolean;
          try {
            go = this.#admit(length);
          } catch (error) {
            if (error instanceof FrameError) throw this.#fail(error);
            throw error;
          }
          if (!go) {
            this.#held = true;
            break;
          }
        }
      }
      if (this.#buffered < this.#bodyLength) break;
      bodies.push(this.#take(this.#bodyLength));
      this.#bodyLength = -1;
    }
    return bodies;
  }

  #fail(error: FrameError): FrameError {
    this.#failure = error;
    this.#chunks = [];
    this.#buffered = 0;
    this.#offset = 0;
    return error;
  }

  /** Consumes exactly n buffered bytes (the caller checked n <= #buffered). */
  #take(n: number): Buffer {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (n === 0 || first === undefined) return Buffer.alloc(0);
    const available = first.byteLength - this.#offset;
    if (n <= available) {
      const view = first.subarray(this.#offset, this.#offset + n);
      this.#offset += n;
      if (this.#offset === first.byteLength) {
        this.#chunks.shift();
        this.#offset = 0;
      }
      return view;
    }
    const out = Buffer.allocUnsafe(n);
    let written = 0;
    let index = 0;
    let offset = this.#offset;
    while (written < n) {
      const chunk = this.#chunks[index];
      if (chunk === undefined)
        throw new Error('frame decoder invariant broken: buffered count exceeds chunks');
      const count = Math.min(chunk.byteLength - offset, n - written);
      chunk.copy(out, written, offset, offset + count);
      written += count;
      offset += count;
      if (offset === chunk.byteLength) {
        index += 1;
        offset = 0;
      }
    }
    // One splice for the whole frame keeps a frame spread over k chunks O(k), not O(k^2).
    this.#chunks.splice(0, index);
    this.#offset = offset;
    return out;
  }
}
