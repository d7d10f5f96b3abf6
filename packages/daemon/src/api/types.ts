// Transport-neutral request and response. REST, WSS and TCP each translate to and from these and
// call the one dispatcher (api/dispatcher.ts); no operation knows which transport carried it.
import type { Permission, Response as WireResponse } from '@svc/protocol';
import type { Principal } from '../auth/principal.ts';

export type TransportKind = 'rest' | 'wss' | 'tcp';

/** A persistent connection (TCP or WSS). Plain HTTP requests have none. */
export interface PersistentConnection {
  readonly id: string;
  readonly transport: Exclude<TransportKind, 'rest'>;
  /** Queue a server push. Returns false when the connection is closed or its queue is full. */
  push(message: WireResponse): boolean;
  /** Register a callback run once when the connection closes. */
  onClose(callback: () => void): void;
  /**
   * End the connection (revoked authorization): no further frame is read or answered and no push
   * is sent; the transport closes the socket, then the onClose callbacks run.
   */
  close(reason: string): void;
  /** The principal pinned at upgrade/first authenticated request (spec: client token contract). */
  principalId: string | undefined;
  /**
   * TCP only (App Mesh 3.0's file side channel): the frames that follow, up to an empty one, are
   * raw bytes written to `target` (ended at the empty frame, destroyed if the connection closes);
   * later frames wait until `done` settles.
   */
  receiveRawFrames?(
    target: NodeJS.WritableStream & { destroy(error?: Error): void },
    done?: Promise<unknown>,
  ): void;
}

export interface ApiRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** Path without query string, percent-decoding NOT applied (the router decodes segments). */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /**
   * REST only, for operations whose body is streamed (file upload): the request body, not read yet
   * (`body` is then empty). Undefined on every other request.
   */
  readonly bodyStream?: NodeJS.ReadableStream | undefined;
  readonly transport: TransportKind;
  /**
   * Remote address (no port): the socket's, or the client's when svc-agent relayed the request
   * (relayedByAgent, proven by the agent's process key; transports/agent-relay.ts).
   */
  readonly remoteAddress: string;
  readonly relayedByAgent?: boolean | undefined;
  readonly connection: PersistentConnection | undefined;
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  /** Content type; `application/json` unless stated. */
  contentType: string;
  body: Uint8Array;
  /**
   * REST only (file download): the body as a stream, sent after the headers instead of `body`;
   * `headers['content-length']` says its length. Operations never return it on TCP or WSS.
   */
  stream?: NodeJS.ReadableStream | undefined;
  /**
   * TCP only (App Mesh 3.0's file side channel): raw frames written after this response, then an
   * empty frame.
   */
  rawFrames?: AsyncIterable<Uint8Array> | undefined;
}

export type Access =
  | { readonly kind: 'public' }
  /** Any valid token; no permission needed (for example /svc/self). */
  | { readonly kind: 'authenticated' }
  | {
      readonly kind: 'permission';
      readonly permission: Permission;
      /**
       * Also open to the process key (`X-Svc-Process-Key`) of this one application instead of a
       * bearer; the handler verifies the key (GET /svc/metrics for svc-agent).
       */
      readonly orProcessKeyOf?: string;
    }
  /** Worker side of the task RPC: authenticated by X-Svc-Process-Key only. */
  | { readonly kind: 'process-key' };

export interface OperationContext<S = unknown> {
  readonly request: ApiRequest;
  /** Decoded path parameters, for example `name` of /svc/app/{name}. */
  readonly params: Readonly<Record<string, string>>;
  /** Present for every access kind except public and process-key. */
  readonly principal: Principal | undefined;
  readonly services: S;
}

export interface Operation<S = unknown> {
  /** Stable id, also the OpenAPI operationId. */
  readonly id: string;
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** OpenAPI-style template, for example `/svc/app/{name}/output`. */
  readonly path: string;
  readonly access: Access;
  readonly summary: string;
  /** Query parameters documented in OpenAPI. */
  readonly query?: readonly { name: string; description: string; required?: boolean }[];
  /** Whether the operation reads a JSON body (documented in OpenAPI). */
  readonly jsonBody?: boolean;
  handle(context: OperationContext<S>): Promise<ApiResponse>;
}
