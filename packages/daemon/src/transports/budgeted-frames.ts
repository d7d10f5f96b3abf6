// The TCP port's frame reader under the in-flight budgets (inflight-budget.ts): each frame header is
// admitted before a byte of its body is kept. Above what the payer could ever have in flight, the
// frame is refused (FrameError: the connection closes); when it only does not fit now, reading
// stops (`hold(true)`) until it does, then the held frame completes. Each decoded body comes with
// the release of its bytes, for the session to call once its request is answered.
import { FrameDecoder, FrameError } from '@svc/protocol';
import type { BudgetOwner, InflightBudget, Reservation } from './inflight-budget.ts';

/** A decoded body and the release of its in-flight bytes. */
export interface DecodedFrame {
  readonly body: Buffer;
  readonly release: () => void;
}

export interface BudgetedFramesOptions {
  budget: InflightBudget;
  /** Who pays for the next frame (asked at each header: a session may authenticate meanwhile). */
  payer: () => BudgetOwner;
  /** The frame bound until `raiseCap` (1 MiB before authentication). */
  maxBodyBytes: number;
  /** Stop (true) or restart (false) reading the socket while a frame waits for budget. */
  hold: (waiting: boolean) => void;
  /**
   * After a wait: decode what the held frame completes (`decode` may throw FrameError, as `push`
   * does); the bodies of `push` are returned by it.
   */
  deliver: (decode: () => DecodedFrame[]) => void;
}

export class BudgetedFrames {
  readonly #options: BudgetedFramesOptions;
  readonly #decoder: FrameDecoder;
  /** Reservations of admitted frames whose bodies are not complete yet, in order. */
  readonly #admitted: Reservation[] = [];
  #cancelWait: (() => void) | undefined;
  #closed = false;

  constructor(options: BudgetedFramesOptions) {
    this.#options = options;
    this.#decoder = new FrameDecoder({ maxBodyBytes: options.maxBodyBytes, admit: (n) => this.#admit(n) });
  }

  /** Bytes received and not yet returned as a body (non-zero: a frame is incomplete or waiting). */
  get bufferedBytes(): number {
    return this.#decoder.bufferedBytes;
  }

  raiseCap(maxBodyBytes: number): void {
    this.#decoder.maxBodyBytes = maxBodyBytes;
  }

  /** Decodes a chunk: complete bodies with their releases. Throws FrameError to close. */
  push(chunk: Buffer): DecodedFrame[] {
    return this.#withReleases(this.#decoder.push(chunk));
  }

  /** The connection closed: a waiting frame stops waiting, admitted bytes are given back. */
  close(): void {
    this.#closed = true;
    this.#cancelWait?.();
    for (const reservation of this.#admitted.splice(0)) reservation.release();
  }

  #withReleases(bodies: Buffer[]): DecodedFrame[] {
    return bodies.map((body) => {
      const reservation = this.#admitted.shift();
      return { body, release: () => reservation?.release() };
    });
  }

  #admit(length: number): boolean {
    const { budget } = this.#options;
    const payer = this.#options.payer();
    const ceiling = budget.ceiling(payer);
    if (length > ceiling)
      throw new FrameError(
        'too_large',
        `frame body of ${length} bytes exceeds the in-flight budget of ${ceiling} bytes`,
        { length },
      );
    const now = budget.tryReserve(payer, length);
    if (now !== undefined) {
      this.#admitted.push(now);
      return true;
    }
    this.#options.hold(true);
    this.#cancelWait = budget.reserve(payer, length, (reservation) => {
      this.#cancelWait = undefined;
      if (this.#closed) {
        reservation.release();
        return;
      }
      this.#admitted.push(reservation);
      this.#options.hold(false);
      this.#options.deliver(() => this.#withReleases(this.#decoder.proceed()));
    });
    return false;
  }
}
