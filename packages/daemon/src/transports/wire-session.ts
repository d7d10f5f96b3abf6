// One persistent connection (TCP or WSS) after framing: decodes Request messages, dispatches them
// concurrently, writes Responses, and carries server pushes. Bounded everywhere: in-flight requests
// pause the reader, and a peer that stops reading is disconnected once its output buffer is full.
import { randomUUID } from 'node:crypto';
import { MessageError, decodeRequest, encodeResponse, type Response } from '@svc/protocol';
import { SvcError } from '@svc/protocol';
import type { Dispatch } from '../api/dispatcher.ts';
import type { PersistentConnection } from '../api/types.ts';
import type { Logger } from '../log/logger.ts';
import { toApiRequest, toWireError, toWireResponse } from './wire-adapter.ts';

export interface WireSink {
  /** Write one encoded message (the transport adds framing). */
  write(bytes: Uint8Array): void;
  /** Bytes queued in the socket and not yet sent. */
  bufferedBytes(): number;
  /** Stop / restart reading from the peer (back-pressure on request floods). */
  pause(): void;
  resume(): void;
  /** Close the connection (protocol violation or slow consumer). */
  close(reason: string): void;
}

export interface WireSessionOptions {
  transport: 'tcp' | 'wss';
  remoteAddress: string;
  dispatch: Dispatch;
  sink: WireSink;
  logger: Logger;
  /** Authorization header value presented at WSS upgrade, used when a frame carries none. */
  upgradeAuthorization?: string | undefined;
  /** X-Target-Host presented at WSS upgrade: the forward target of frames that name none. */
  upgradeTargetHost?: string | undefined;
  maxInFlight?: number;
  maxBufferedBytes?: number;
}

export class WireSession implements PersistentConnection {
  readonly id = randomUUID();
  readonly transport: 'tcp' | 'wss';
  principalId: string | undefined = undefined;
  readonly #options: WireSessionOptions;
  readonly #closeCallbacks: (() => void)[] = [];
  #inFlight = 0;
  #paused = false;
  #closed = false;
  /** close() was called: the socket is closing; nothing more is read, answered or pushed. */
  #ending = false;

  constructor(options: WireSessionOptions) {
    this.#options = options;
    this.transport = options.transport;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Handle one decoded frame body. Undecodable messages close the connection (spec: TCP framing). */
  receive(body: Uint8Array): void {
    if (this.#closed || this.#ending) return;
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
      return;
    }
    this.#inFlight++;
    if (this.#inFlight >= (this.#options.maxInFlight ?? 256) && !this.#paused) {
      this.#paused = true;
      this.#options.sink.pause();
    }
    void this.#run(message).finally(() => {
      this.#inFlight--;
      if (this.#paused && this.#inFlight < (this.#options.maxInFlight ?? 256) / 2) {
        this.#paused = false;
        if (!this.#closed) this.#options.sink.resume();
      }
    });
  }

  async #run(message: ReturnType<typeof decodeRequest>): Promise<void> {
    let response: Response;
    try {
      const request = toApiRequest(message, this, this.#options.remoteAddress);
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
      response = toWireResponse(message, await this.#options.dispatch(withUpgrade));
    } catch (error) {
      response = toWireError(
        message,
        error instanceof SvcError ? error : new SvcError('internal', 'internal error', { cause: error }),
      );
    }
    this.#send(response);
  }

  #send(message: Response): boolean {
    if (this.#closed || this.#ending) return false;
    if (this.#options.sink.bufferedBytes() > (this.#options.maxBufferedBytes ?? 64 * 1024 * 1024)) {
      this.#options.logger.warn('peer is not reading; closing connection', {
        transport: this.transport,
        remote: this.#options.remoteAddress,
      });
      this.#options.sink.close('slow consumer');
      return false;
    }
    this.#options.sink.write(encodeResponse(message));
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
    for (const callback of this.#closeCallbacks.splice(0)) {
      try {
        callback();
      } catch (error) {
        this.#options.logger.error('connection close callback failed', { error: error as Error });
      }
    }
  }
}
