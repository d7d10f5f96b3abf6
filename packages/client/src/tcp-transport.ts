// TCP TLS transport (Node only): framed msgpack Requests out, Responses and pushes in, one reader.
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { CLIENT_MAX_BODY_BYTES, encodeFrame, encodeRequest } from '@svc/protocol';
import { createFrameReader } from './frame-reader.ts';
import { Demultiplexer, type DemultiplexerOptions } from './demux.ts';
import { demuxedCall } from './persistent-call.ts';
import { type PersistentTransport, type WireCall, type WireResult } from './transport.ts';

export interface TcpTransportOptions extends DemultiplexerOptions {
  host: string;
  /** The daemon's TCP API port (6059 by default). */
  port?: number;
  /** PEM of the CA to trust (the daemon's generated CA); default the system store. */
  ca?: string | Buffer;
  /** TLS server name; default `host` unless it is an IP address. */
  servername?: string;
  /** Extra node:tls options (client certificates, rejectUnauthorized for tests...). */
  tls?: ConnectionOptions;
  /** Receive bound, default 1 GiB (CLIENT_MAX_BODY_BYTES); also enforced on send. */
  maxBodyBytes?: number;
}

export class TcpTransport implements PersistentTransport {
  readonly kind = 'tcp' as const;
  readonly demux: Demultiplexer;
  readonly closed: Promise<void>;
  readonly #socket: TLSSocket;
  readonly #maxBodyBytes: number;
  #corked = false;

  private constructor(socket: TLSSocket, demux: Demultiplexer, maxBodyBytes: number) {
    this.#socket = socket;
    this.demux = demux;
    this.#maxBodyBytes = maxBodyBytes;
    this.closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // The single background reader.
    const reader = createFrameReader(
      (response) => demux.deliver(response),
      (error) => this.#fail(error),
      maxBodyBytes,
    );
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('end', () => this.#fail(new Error('connection closed by the server')));
    void this.closed.then(() => demux.stop(new Error('connection closed')));
  }

  static async connect(options: TcpTransportOptions): Promise<TcpTransport> {
    const isIp = /^[\d.]+$|:/.test(options.host);
    const socket = tlsConnect({
      host: options.host,
      port: options.port ?? 6059,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      ...(options.servername !== undefined
        ? { servername: options.servername }
        : isIp
          ? {}
          : { servername: options.host }),
      ...options.tls,
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', () => resolve());
      socket.once('error', reject);
    });
    socket.setNoDelay(true);
    return new TcpTransport(
      socket,
      new Demultiplexer(options),
      options.maxBodyBytes ?? CLIENT_MAX_BODY_BYTES,
    );
  }

  call(call: WireCall): Promise<WireResult> {
    return demuxedCall(
      this.demux,
      call,
      (request) => encodeFrame(encodeRequest(request), this.#maxBodyBytes),
      (bytes) => {
        if (this.#socket.destroyed || !this.#socket.writable) return false;
        // Requests made in one synchronous run (a worker's result and its next fetch, a batch of
        // calls) leave in one write(2): cork on the first, uncork once that run is over.
        if (!this.#corked) {
          this.#corked = true;
          this.#socket.cork();
          queueMicrotask(() => {
            this.#corked = false;
            this.#socket.uncork();
          });
        }
        this.#socket.write(bytes);
        return true;
      },
    );
  }

  async close(): Promise<void> {
    this.#fail(new Error('closed by the client'));
    await this.closed;
  }

  #fail(cause: unknown): void {
    this.demux.stop(cause);
    this.#socket.destroy();
  }
}
