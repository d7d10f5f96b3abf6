// WSS transport, sub-protocol `svc-ws`: one msgpack Request per binary frame out, one Response or
// push per binary frame in. Works with the `ws` package (Node: bearer in the Authorization header at
// upgrade, custom CA) and with the browser WebSocket (which cannot set headers: the bearer is
// offered at upgrade as the sub-protocol entry `svc-bearer.<token>`, see `wsSubprotocols`). Every
// frame carries the bearer as well.
import {
  CLIENT_MAX_BODY_BYTES,
  decodeResponse,
  encodeRequest,
  WS_BEARER_PREFIX,
  WS_SUBPROTOCOL,
} from '@svc/protocol';
import { Demultiplexer, type DemultiplexerOptions } from './demux.ts';
import { demuxedCall } from './persistent-call.ts';
import { TransportDisconnectedError } from './errors.ts';
import { type PersistentTransport, type WireCall, type WireResult } from './transport.ts';

export { WS_BEARER_PREFIX, WS_SUBPROTOCOL };

// An HTTP token (RFC 9110 tchar): what a sub-protocol entry may contain. JWTs qualify.
const TOKEN_CHARS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The sub-protocols to offer: `svc-ws`, plus `svc-bearer.<token>` when there is a token. The daemon
 * selects only `svc-ws`. Throws (without echoing the token) if the token cannot be a sub-protocol.
 */
export function wsSubprotocols(token?: string): string[] {
  if (token === undefined) return [WS_SUBPROTOCOL];
  if (!TOKEN_CHARS.test(token))
    throw new TypeError(
      'this bearer contains characters a WebSocket sub-protocol cannot carry; use a JWT or the REST transport',
    );
  return [WS_SUBPROTOCOL, WS_BEARER_PREFIX + token];
}

/** The subset of the WebSocket API used here (browser WebSocket and `ws` both provide it). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: never) => void): void;
}

export interface WssTransportOptions extends DemultiplexerOptions {
  /** Opens the socket; `connectWss` (Node) and `connectBrowserWss` supply it. */
  open: () => WebSocketLike;
  maxBodyBytes?: number;
}

export class WssTransport implements PersistentTransport {
  readonly kind = 'wss' as const;
  readonly demux: Demultiplexer;
  readonly closed: Promise<void>;
  readonly #ws: WebSocketLike;

  private constructor(ws: WebSocketLike, demux: Demultiplexer, maxBodyBytes: number) {
    this.#ws = ws;
    this.demux = demux;
    this.closed = new Promise<void>((resolve) => ws.addEventListener('close', () => resolve()));
    // The single background reader.
    ws.addEventListener('message', (event: { data: unknown }) => {
      const bytes = toBytes(event.data);
      if (bytes === undefined) return this.#fail(new Error('text WebSocket frame: binary msgpack only'));
      if (bytes.byteLength > maxBodyBytes) return this.#fail(new Error(`frame above ${maxBodyBytes} bytes`));
      try {
        demux.deliver(decodeResponse(bytes));
      } catch (error) {
        this.#fail(error);
      }
    });
    ws.addEventListener('error', () => this.#fail(new Error('WebSocket error')));
    void this.closed.then(() => demux.stop(new Error('connection closed')));
  }

  static async connect(options: WssTransportOptions): Promise<WssTransport> {
    const ws = options.open();
    ws.binaryType = 'arraybuffer';
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', (event: { message?: string; error?: unknown }) =>
        reject(
          new TransportDisconnectedError(
            `WebSocket upgrade failed${event.message ? `: ${event.message}` : ''}`,
            { cause: event.error },
          ),
        ),
      );
      ws.addEventListener('close', () =>
        reject(new TransportDisconnectedError('WebSocket closed during upgrade')),
      );
    });
    return new WssTransport(ws, new Demultiplexer(options), options.maxBodyBytes ?? CLIENT_MAX_BODY_BYTES);
  }

  call(call: WireCall): Promise<WireResult> {
    return demuxedCall(
      this.demux,
      call,
      (request) => encodeRequest(request),
      (bytes) => {
        if (this.#ws.readyState !== 1) return false;
        this.#ws.send(bytes);
        return true;
      },
    );
  }

  async close(): Promise<void> {
    this.demux.stop(new Error('closed by the client'));
    if (this.#ws.readyState < 2) this.#ws.close(1000, 'client closed');
    await this.closed;
  }

  #fail(cause: unknown): void {
    this.demux.stop(cause);
    if (this.#ws.readyState < 2) this.#ws.close(1002, 'client failure');
  }
}

function toBytes(data: unknown): Uint8Array | undefined {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (Array.isArray(data)) {
    const parts = data as Uint8Array[];
    const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let offset = 0;
    for (const part of parts) {
      out.set(part, offset);
      offset += part.byteLength;
    }
    return out;
  }
  return undefined;
}
