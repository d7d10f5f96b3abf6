// The body of a REST request, not read until the dispatcher asks for it (api/types.ts RequestBody):
// by then the route, the bearer and the access rule as far as the head decides it are settled, so a
// refused request reads none. Asked for whole, it is admitted first — its declared length against
// the limit (413) and against the payer's in-flight budget (429), nothing read when either
// refuses — and then read up to the limit; asked for as a stream (file upload), it is the request
// itself, never held. An `Expect: 100-continue` client is asked for the body only then.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError } from '@svc/protocol';
import { bodyTooLarge } from '../api/request-body.ts';
import type { BodyAdmission, RequestBody } from '../api/types.ts';
import type { Limits } from '@svc/platform/config';
import type { InflightBudget, Reservation } from './inflight-budget.ts';
import { preAuthFrameBytes } from './wire-session.ts';

export interface RestBodyOptions {
  limits: Limits;
  budget: InflightBudget;
  /** The caller's address: it pays for bodies without a principal. */
  address: string;
  /** The client sent `Expect: 100-continue`: it sends the body once told to (writeContinue). */
  awaitingContinue: boolean;
}

export class RestBody implements RequestBody {
  readonly declaredLength: number | undefined;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #options: RestBodyOptions;
  #reservation: Reservation | undefined;
  /** The body was asked for (read whole, or handed over as a stream). */
  #taken = false;

  constructor(req: IncomingMessage, res: ServerResponse, options: RestBodyOptions) {
    this.#req = req;
    this.#res = res;
    this.#options = options;
    const chunked = req.headers['transfer-encoding'] !== undefined;
    this.declaredLength = chunked ? undefined : Number(req.headers['content-length'] ?? 0);
  }

  /** Bytes remain unread: the request was answered without its body (or before its end). */
  get unread(): boolean {
    return this.declaredLength !== 0 && !this.#req.readableEnded;
  }

  async bytes(admission: BodyAdmission): Promise<Uint8Array> {
    const { limits, budget } = this.#options;
    const limit = Math.min(
      admission.authenticated ? limits.maxBodyBytes : preAuthFrameBytes(limits),
      admission.maxBytes ?? Number.MAX_SAFE_INTEGER,
    );
    const declared = this.declaredLength;
    if (declared !== undefined && declared > limit) throw bodyTooLarge(limit);
    // Paid for before it is read: its declared length, or the limit when it comes chunked.
    this.#reservation = budget.tryReserve(
      { principal: admission.payer, address: this.#options.address },
      declared ?? limit,
    );
    if (this.#reservation === undefined) {
      const who = admission.payer === undefined ? 'this address' : 'this principal';
      throw new SvcError(
        'too_many_connections',
        `too many request bodies in flight for ${who}; retry when they are answered`,
      );
    }
    this.#continue();
    const body = await readBody(this.#req, limit);
    if (body === undefined) throw bodyTooLarge(limit);
    return body;
  }

  stream(): NodeJS.ReadableStream {
    this.#continue();
    return this.#req;
  }

  /** Gives the body's budget back: called once the request has been answered. */
  release(): void {
    this.#reservation?.release();
  }

  #continue(): void {
    if (this.#taken) throw new Error('the request body was already taken');
    this.#taken = true;
    if (this.#options.awaitingContinue) this.#res.writeContinue();
  }
}

/** Reads the body up to `limit` bytes; undefined when it is larger (the rest is not buffered). */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        settled = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!settled) {
        settled = true;
        resolve(Buffer.concat(chunks, size));
      }
    });
    req.on('error', (error) => {
      if (!settled) {
        settled = true;
        reject(error);
      }
    });
  });
}
