// One persistent connection (TCP or WSS) after framing: decodes Request messages, dispatches them
// concurrently, writes Responses, and carries server pushes. Bounded everywhere: in-flight requests
// pause the reader, and a peer that stops reading is disconnected once its output buffer is full.
import { randomUUID } from 'node:crypto';
import { MessageError, decodeRequest, encodeResponse, encodeResponseParts, type Response } from '@svc/protocol';
import { SvcError } from '@svc/protocol';
import type { Dispatch } from '../api/dispatcher.ts';
import type { ApiResponse, PersistentConnection, RawFrameChannel } from '../api/types.ts';
import type { Logger } from '../log/logger.ts';
import { hasProcessKey, processKeyApp } from '../auth/process-key.ts';
import { IdleDeadline } from '@svc/platform/connections';
import { toApiRequest, toWireError, toWireResponse } from './wire-adapter.ts';

/** Largest frame a persistent connection may send before it authenticates (bearer or process key). */
export const PRE_AUTH_MAX_FRAME_BYTES = 1024 * 1024;

export function preAuthFrameBytes(limits: { maxFrameBytes: number }): number {
  return Math.min(PRE_AUTH_MAX_FRAME_BYTES, limits.maxFrameBytes);
}

const NO_RELEASE = (): void => undefined;

/**
 * Who pays for the bodies of a session's frames (inflight-budget.ts): its pinned principal, or the
 * application whose process key it presented, or else (undefined) its remote address.
 */
export function payerOf(session: WireSession): string | undefined {
  if (session.principalId !== undefined) return session.principalId;
  const app = processKeyApp(session);
  return app === undefined ? undefined : `process:${app}`;
}

export interface WireSink {
  /** Write one encoded message (the transport adds framing). */
  write(bytes: Uint8Array): void;
  /** Write one encoded message given in parts, without joining them (the transport adds framing). */
  writeParts(parts: readonly Uint8Array[]): void;
  /** Bytes queued in the socket and not yet sent. */
  bufferedBytes(): number;
  /** Stop / restart reading from the peer (back-pressure on request floods). */
  pause(): void;
  resume(): void;
  /** Close the connection (protocol violation or slow consumer). */
  close(reason: string): void;
  /** Resolves when the queued bytes were handed to the OS (raw file frames wait on it). */
  drained?(): Promise<void>;
}

export interface WireSessionOptions {
  transport: 'tcp' | 'wss';
  /** The bearer comes with the upgrade only (WSS): PersistentConnection.bearerAtOpen. */
  bearerAtOpen?: boolean;
  /** The connection carries App Mesh 3.0's raw file frames (TCP): PersistentConnection.rawFrames. */
  rawFrames?: boolean;
  /**
   * The largest streamed answer (file download) carried in one message (`limits.max_body_bytes`);
   * a larger one is refused 413 from its length, unread.
   */
  maxStreamedBodyBytes: number;
  remoteAddress: string;
  /** svc-agent relayed this session and proved it (agent-relay.ts); remoteAddress is its client. */
  relayedByAgent?: boolean;
  dispatch: Dispatch;
  sink: WireSink;
  logger: Logger;
  /** Authorization header value presented at WSS upgrade, used when a frame carries none. */
  upgradeAuthorization?: string | undefined;
  /** X-Target-Host presented at WSS upgrade: the forward target of frames that name none. */
  upgradeTargetHost?: string | undefined;
  maxInFlight?: number;
  maxBufferedBytes?: number;
  /**
   * Close the session after this long without a request while it is not authenticated (no bearer
   * pinned; a worker session counts as idle between its fetches only when none is in flight).
   */
  idleTimeoutMs?: number;
  /** Called once, when the session first counts as authenticated (the transport lifts its frame cap). */
  onAuthenticated?: () => void;
}

export class WireSession implements PersistentConnection {
  readonly id = randomUUID();
  readonly transport: 'tcp' | 'wss';
  readonly bearerAtOpen: boolean;
  readonly rawFrames: RawFrameChannel | undefined;
  principalId: string | undefined = undefined;
  readonly #options: WireSessionOptions;
  readonly #closeCallbacks: (() => void)[] = [];
  #inFlight = 0;
  #paused = false;
  #closed = false;
  /** close() was called: the socket is closing; nothing more is read, answered or pushed. */
  #ending = false;
  #authenticatedSeen = false;
  readonly #idle: IdleDeadline | undefined;
  /** Where raw file frames go while a side-channel upload runs (rawFrames.receive). */
  #raw: (NodeJS.WritableStream & { destroy(error?: Error): void }) | undefined;
  /** Settles when the side-channel upload was committed; frames after its end wait for it. */
  #rawDone: Promise<unknown> | undefined;
  /** Frames received while an upload commits, handled in order after it (with their releases). */
  #held: [Uint8Array, () => void][] | undefined;

  constructor(options: WireSessionOptions) {
    this.#options = options;
    this.transport = options.transport;
    this.bearerAtOpen = options.bearerAtOpen === true;
    this.rawFrames =
      options.rawFrames === true
        ? { receive: (target, done) => this.#receiveRaw(target, done) }
        : undefined;
    const idleMs = options.idleTimeoutMs;
    this.#idle =
      idleMs === undefined
        ? undefined
        : new IdleDeadline(
            idleMs,
            () => {
              options.logger.debug('closing idle unauthenticated connection', {
                transport: this.transport,
                remote: options.remoteAddress,
              });
              options.sink.close('idle');
            },
            // An authenticated session may wait silently for pushes (subscriptions): not idle.
            () => this.#inFlight > 0 || this.principalId !== undefined,
          );
  }

  /** A bearer is pinned, or a valid process key was presented (wire frames may then be large). */
  get authenticated(): boolean {
    return this.principalId !== undefined || hasProcessKey(this);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Handle one decoded frame body. Undecodable messages close the connection (spec: TCP framing).
   * `release` gives back the body's in-flight budget (inflight-budget.ts): called once, when the
   * request it carries has been answered, or at once when nothing more will use the body.
   */
  receive(body: Uint8Array, release: () => void = NO_RELEASE): void {
    if (this.#closed || this.#ending) {
      release();
      return;
    }
    this.#idle?.touch();
    if (this.#held !== undefined) {
      this.#held.push([body, release]);
      return;
    }
    if (this.#raw !== undefined) {
      this.#rawFrame(this.#raw, body);
      release(); // written to the file stream, whose own buffer is bounded (drain pauses reading)
      return;
    }
    let message;
    try {
      message = decodeRequest(body);
    } catch (error) {
      const reason = error instanceof MessageError ? error.message : String(error);
      this.#options.logger.warn('rejected undecodable message; closing connection', {
        transport: this.transport,
        remote: this.#options.remoteAddress,
        reason,
      });
      this.#options.sink.close(`invalid message: ${reason}`);
      release();
      return;
    }
    this.#inFlight++;
    if (this.#inFlight >= (this.#options.maxInFlight ?? 256) && !this.#paused) {
      this.#paused = true;
      this.#options.sink.pause();
    }
    void this.#run(message).finally(() => {
      release();
      this.#inFlight--;
      this.#idle?.touch();
      if (!this.#authenticatedSeen && this.authenticated) {
        this.#authenticatedSeen = true;
        this.#options.onAuthenticated?.();
      }
      if (this.#paused && this.#inFlight < (this.#options.maxInFlight ?? 256) / 2) {
        this.#paused = false;
        if (!this.#closed) this.#options.sink.resume();
      }
    });
  }

  #receiveRaw(
    target: NodeJS.WritableStream & { destroy(error?: Error): void },
    done?: Promise<unknown>,
  ): void {
    this.#raw = target;
    this.#rawDone = done;
  }

  #rawFrame(target: NodeJS.WritableStream, body: Uint8Array): void {
    if (body.byteLength === 0) {
      this.#raw = undefined;
      target.end();
      // The client's next request (a download of that file) must see it written: hold later frames.
      const done = this.#rawDone;
      this.#rawDone = undefined;
      if (done !== undefined) {
        const held: [Uint8Array, () => void][] = [];
        this.#held = held;
        void done
          .catch(() => undefined)
          .then(() => {
            this.#held = undefined;
            for (const [frame, release] of held) this.receive(frame, release);
          });
      }
      return;
    }
    if (!target.write(body)) {
      this.#options.sink.pause();
      target.once('drain', () => {
        if (!this.#closed) this.#options.sink.resume();
      });
    }
  }

  /** Raw file frames after a response (download side channel), then the empty end frame. */
  async #writeRaw(frames: AsyncIterable<Uint8Array>): Promise<void> {
    const sink = this.#options.sink;
    try {
      for await (const chunk of frames) {
        if (this.#closed) return;
        sink.write(chunk);
        if (sink.bufferedBytes() > 1024 * 1024) await sink.drained?.();
      }
      if (!this.#closed) sink.write(new Uint8Array(0));
    } catch {
      sink.close('file side channel failed');
    }
  }

  async #run(message: ReturnType<typeof decodeRequest>): Promise<void> {
    let response: Response;
    let rawFrames: AsyncIterable<Uint8Array> | undefined;
    let bodyParts: readonly Uint8Array[] | undefined;
    try {
      const request = toApiRequest(message, this, this.#options.remoteAddress, this.#options.relayedByAgent);
      const upgrade = this.#options.upgradeAuthorization;
      const target = this.#options.upgradeTargetHost;
      const inherit: Record<string, string> = {};
      if (upgrade !== undefined && request.headers['authorization'] === undefined)
        inherit['authorization'] = upgrade;
      if (target !== undefined && request.headers['x-target-host'] === undefined)
        inherit['x-target-host'] = target;
      const withUpgrade =
        inherit['authorization'] === undefined && inherit['x-target-host'] === undefined
          ? request
          : { ...request, headers: { ...request.headers, ...inherit } };
      const dispatched = await this.#options.dispatch(withUpgrade);
      const answer =
        dispatched.stream === undefined
          ? dispatched
          : await inOneMessage(dispatched, this.#options.maxStreamedBodyBytes);
      rawFrames = answer.rawFrames;
      bodyParts = answer.bodyParts;
      response = toWireResponse(message, answer);
    } catch (error) {
      response = toWireError(
        message,
        error instanceof SvcError ? error : new SvcError('internal', 'internal error', { cause: error }),
      );
    }
    if (this.#send(response, bodyParts) && rawFrames !== undefined) await this.#writeRaw(rawFrames);
  }

  /** `bodyParts`: the body in shared parts (`message.body` is empty); written without joining them. */
  #send(message: Response, bodyParts?: readonly Uint8Array[]): boolean {
    if (this.#closed || this.#ending) return false;
    if (this.#options.sink.bufferedBytes() > (this.#options.maxBufferedBytes ?? 64 * 1024 * 1024)) {
      this.#options.logger.warn('peer is not reading; closing connection', {
        transport: this.transport,
        remote: this.#options.remoteAddress,
      });
      this.#options.sink.close('slow consumer');
      return false;
    }
    if (bodyParts === undefined) this.#options.sink.write(encodeResponse(message));
    else this.#options.sink.writeParts(encodeResponseParts(message, bodyParts));
    return true;
  }

  push(message: Response): boolean {
    return this.#send(message);
  }

  close(reason: string): void {
    if (this.#closed || this.#ending) return;
    this.#ending = true;
    this.#options.sink.close(reason);
  }

  onClose(callback: () => void): void {
    if (this.#closed) callback();
    else this.#closeCallbacks.push(callback);
  }

  /** Called by the transport when the underlying socket has closed. */
  markClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#idle?.stop();
    this.#raw?.destroy(new Error('the connection closed before the end of the file'));
    this.#raw = undefined;
    for (const [, release] of this.#held?.splice(0) ?? []) release();
    for (const callback of this.#closeCallbacks.splice(0)) {
      try {
        callback();
      } catch (error) {
        this.#options.logger.error('connection close callback failed', { error: error as Error });
      }
    }
  }
}

/**
 * A streamed answer (a file download: the only one) as one message: refused 413 from its length
 * when it is larger than `limit` (the stream is destroyed unread), else read whole.
 */
async function inOneMessage(answer: ApiResponse, limit: number): Promise<ApiResponse> {
  const stream = answer.stream!;
  const { 'content-length': length, ...headers } = answer.headers;
  const size = Number(length);
  if (!(size <= limit)) {
    stream.destroy();
    throw new SvcError(
      'payload_too_large',
      `the file has ${length} bytes; over TCP and WSS at most ${limit} (use REST, which streams)`,
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return { ...answer, headers, body: Buffer.concat(chunks), stream: undefined };
}
