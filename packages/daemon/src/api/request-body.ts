// A request body that is already in memory: the one message of TCP and WSS (its frame was admitted
// against the in-flight budget from its header before a byte of it was kept), or a body built in
// svcd itself. Its `bytes` only applies the operation's own bound.
import { Readable } from 'node:stream';
import { SvcError } from '@svc/protocol';
import type { BodyAdmission, RequestBody } from './types.ts';

export class MessageBody implements RequestBody {
  readonly #bytes: Uint8Array;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  get declaredLength(): number {
    return this.#bytes.byteLength;
  }

  bytes(admission: BodyAdmission): Promise<Uint8Array> {
    const max = admission.maxBytes;
    if (max !== undefined && this.#bytes.byteLength > max) return Promise.reject(bodyTooLarge(max));
    return Promise.resolve(this.#bytes);
  }

  stream(): NodeJS.ReadableStream {
    return Readable.from([this.#bytes], { objectMode: false });
  }
}

export const EMPTY_BODY: RequestBody = new MessageBody(new Uint8Array(0));

/** The one 413 of a request body over its bound, on every transport. */
export function bodyTooLarge(limit: number): SvcError {
  return new SvcError('payload_too_large', `request body exceeds ${limit} bytes`);
}
