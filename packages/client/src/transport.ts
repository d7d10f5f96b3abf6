// The transport-neutral call: one API operation, whatever carries it (REST, TCP or WSS).
// A transport only translates; SvcClient builds the call (path, query, headers incl. the bearer).
import type { Demultiplexer } from './demux.ts';

export interface WireCall {
  method: string;
  path: string;
  query?: Record<string, string>;
  /** Lower-case header names. `authorization` and `x-target-host` are set by SvcClient. */
  headers?: Record<string, string>;
  body?: Uint8Array;
  /** Caller cancellation. Demultiplexed calls have no wait cap of their own (spec S1). */
  signal?: AbortSignal;
}

export interface WireResult {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string>;
  contentType: string;
  body: Uint8Array;
}

export type TransportKind = 'rest' | 'tcp' | 'wss';

export interface Transport {
  readonly kind: TransportKind;
  call(call: WireCall): Promise<WireResult>;
  close(): Promise<void>;
}

/** TCP and WSS: one connection, one background reader, one demultiplexer. */
export interface PersistentTransport extends Transport {
  readonly kind: 'tcp' | 'wss';
  readonly demux: Demultiplexer;
  /** Resolves when the connection is gone (closed by either side or failed). */
  readonly closed: Promise<void>;
}

export function isPersistent(transport: Transport): transport is PersistentTransport {
  return transport.kind === 'tcp' || transport.kind === 'wss';
}

export function queryString(query: Record<string, string> | undefined): string {
  if (query === undefined) return '';
  const text = new URLSearchParams(query).toString();
  return text === '' ? '' : `?${text}`;
}

export function lowerCaseHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) out[key.toLowerCase()] = value;
  return out;
}
