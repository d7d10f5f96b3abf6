// One multiplexed TLS connection from this gateway to a target's TCP API: framed msgpack requests
// answered by uuid, server pushes handed to `onPush`. The target's certificate is always verified
// against the CAs this daemon trusts (its own CA plus the optional forward CA file).
import { isIP } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import {
  DAEMON_MAX_BODY_BYTES,
  EVENT_REQUEST_URI,
  FrameDecoder,
  SvcError,
  decodeResponse,
  encodeFrameHeader,
  encodeRequest,
  type Request as WireRequest,
  type Response as WireResponse,
} from '@svc/protocol';
import { turnWriteBatch } from '../transports/write-batch.ts';
import type { ResolvedTarget } from './targets.ts';

export interface UpstreamLinkOptions {
  target: ResolvedTarget;
  /** PEM CA certificates the target's certificate must chain to. Never empty. */
  ca: readonly string[];
  connectTimeoutMs: number;
  /** A push (request_uri /svc/event) from the target. */
  onPush?: (push: WireResponse) => void;
  /** The link closed; `error` is set unless close() was called. Runs once. */
  onClose?: (error: SvcError | undefined) => void;
}

export class UpstreamLink {
  readonly target: ResolvedTarget;
  readonly #socket: TLSSocket;
  readonly #waiters = new Map<
    string,
    { resolve: (r: WireResponse) => void; reject: (e: SvcError) => void }
  >();
  readonly #options: UpstreamLinkOptions;
  #closed = false;
  #closing = false;
  readonly #hold: () => void;
  lastUsed = Date.now();

  private constructor(socket: TLSSocket, options: UpstreamLinkOptions) {
    this.#socket = socket;
    this.#hold = turnWriteBatch(socket);
    this.#options = options;
    this.target = options.target;
  }

  /** Connects and completes the TLS handshake. Rejects with target_timeout or target_unreachable. */
  static connect(options: UpstreamLinkOptions): Promise<UpstreamLink> {
    const { target } = options;
    if (options.ca.length === 0) throw new Error('a forward link needs at least one CA');
    return new Promise((resolve, reject) => {
      const socket = connect({
        host: target.host,
        port: target.port,
        ca: [...options.ca],
        // IP literals are checked against the certificate's IP SANs; names against its DNS SANs.
        ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
        minVersion: 'TLSv1.2',
      });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new SvcError(
            'target_timeout',
            `forward target ${target.key} did not accept a connection within ${options.connectTimeoutMs} ms`,
          ),
        );
      }, options.connectTimeoutMs);
      const failed = (error: Error): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(unreachable(target, error));
      };
      socket.once('error', failed);
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        socket.off('error', failed);
        const link = new UpstreamLink(socket, options);
        link.#attach();
        resolve(link);
      });
    });
  }

  get closed(): boolean {
    return this.#closed || this.#closing;
  }

  get inFlight(): number {
    return this.#waiters.size;
  }

  send(request: WireRequest): Promise<WireResponse> {
    if (this.closed)
      return Promise.reject(
        new SvcError('target_unreachable', `the connection to forward target ${this.target.key} is closed`),
      );
    this.lastUsed = Date.now();
    const answer = new Promise<WireResponse>((resolve, reject) =>
      this.#waiters.set(request.uuid, { resolve, reject }),
    );
    // Requests forwarded in one turn of the event loop leave in one write (as the TCP transport's
    // responses do, transports/write-batch.ts).
    this.#hold();
    // Header and body as two writes of the batch: no copy of the body into one frame buffer.
    const body = encodeRequest(request);
    this.#socket.write(encodeFrameHeader(body.byteLength));
    this.#socket.write(body);
    return answer;
  }

  /** Close on purpose: waiters fail, onClose gets no error. */
  close(): void {
    if (this.#closed || this.#closing) return;
    this.#closing = true;
    this.#socket.destroy();
  }

  #attach(): void {
    const socket = this.#socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    const decoder = new FrameDecoder({ maxBodyBytes: DAEMON_MAX_BODY_BYTES });
    let failure: SvcError | undefined;
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const body of decoder.push(chunk)) this.#deliver(decodeResponse(body));
      } catch (error) {
        failure = unreachable(this.target, error as Error);
        socket.destroy();
      }
    });
    socket.on('error', (error: Error) => {
      failure ??= unreachable(this.target, error);
    });
    socket.once('close', () => {
      const purposeful = this.#closing;
      this.#closed = true;
      const error =
        failure ??
        new SvcError('target_unreachable', `forward target ${this.target.key} closed the connection`);
      for (const waiter of this.#waiters.values()) waiter.reject(error);
      this.#waiters.clear();
      this.#options.onClose?.(purposeful ? undefined : error);
    });
  }

  #deliver(response: WireResponse): void {
    const waiter = this.#waiters.get(response.uuid);
    if (waiter !== undefined) {
      this.#waiters.delete(response.uuid);
      this.lastUsed = Date.now();
      waiter.resolve(response);
    } else if (response.request_uri === EVENT_REQUEST_URI) this.#options.onPush?.(response);
  }
}

function unreachable(target: ResolvedTarget, error: Error): SvcError {
  const code = (error as NodeJS.ErrnoException).code;
  return new SvcError(
    'target_unreachable',
    `forward target ${target.key} is unreachable: ${code ?? error.message}`,
    { cause: error },
  );
}
