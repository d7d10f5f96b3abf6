// Transport-neutral request and response. REST, WSS and TCP each translate to and from these and
// call the one dispatcher (api/dispatcher.ts); no operation knows which transport carried it.
import type { Readable } from 'node:stream';
import type { Response as WireResponse } from '@svc/protocol';
import type * as z from 'zod';
import type { AccessRule, Grant } from '../auth/access-rules.ts';
import type { Principal } from '../auth/principal.ts';

export type TransportKind = 'rest' | 'wss' | 'tcp';

/** A persistent connection (TCP or WSS). Plain HTTP requests have none. */
export interface PersistentConnection {
  readonly id: string;
  /** For metrics and logs; nothing decides on it (the capabilities below say what differs). */
  readonly transport: Exclude<TransportKind, 'rest'>;
  /**
   * The bearer is presented when the connection opens (WSS, at the upgrade) and frames only repeat
   * it: a connection opened without one may only use the worker task RPC (spec).
   */
  readonly bearerAtOpen?: boolean | undefined;
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
   * App Mesh 3.0's file side channel, on connections that carry raw frames (TCP): a file is
   * received as the frames that follow a request, and sent as the frames that follow an answer
   * (`ApiResponse.rawFrames`), each ended by an empty frame.
   */
  readonly rawFrames?: RawFrameChannel | undefined;
}

export interface RawFrameChannel {
  /**
   * The frames that follow, up to an empty one, are raw bytes written to `target` (ended at the
   * empty frame, destroyed if the connection closes); later frames wait until `done` settles.
   */
  receive(target: NodeJS.WritableStream & { destroy(error?: Error): void }, done?: Promise<unknown>): void;
}

/**
 * What the dispatcher allows a request's body once the access rule has let the request through:
 * the transport then reads it within these bounds (REST: from the declared length, before a byte
 * is read; TCP and WSS: the message is in memory already, its frame paid for from its header).
 */
export interface BodyAdmission {
  /** The request proved a bearer or a process key (REST: `limits.max_body_bytes`, else 1 MiB). */
  readonly authenticated: boolean;
  /**
   * Who pays for the body in the in-flight budget (transports/inflight-budget.ts): a principal
   * id, or `process:<app>` for a process key; undefined: the caller's address.
   */
  readonly payer?: string | undefined;
  /** The operation reads at most this many bytes (BodySpec.maxBytes), when it says so. */
  readonly maxBytes?: number | undefined;
}

/**
 * A request's body, read only when the dispatcher asks for it: after routing, authentication and
 * the access rule as far as the head decides it, so that a refused request reads no body.
 */
export interface RequestBody {
  /** The length the peer announced (Content-Length, or the message's); undefined when chunked. */
  readonly declaredLength: number | undefined;
  /** The whole body within `admission`; SvcError 413 or 429 (nothing read) when it does not fit. */
  bytes(admission: BodyAdmission): Promise<Uint8Array>;
  /**
   * The body as a stream, never held whole (file upload): the REST request as it arrives, or the
   * one message of TCP and WSS. Not counted against the in-flight budget (nothing is held).
   */
  stream(): NodeJS.ReadableStream;
}

export interface ApiRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** Path without query string, percent-decoding NOT applied (the router decodes segments). */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  /** Not read yet: the dispatcher asks for it after the access rule (RequestBody). */
  readonly body: RequestBody;
  /** For metrics and logs; operations and the dispatcher never decide on it. */
  readonly transport: TransportKind;
  /**
   * Remote address (no port): the socket's, or the client's when svc-agent relayed the request
   * (relayedByAgent, proven by the agent's process key; transports/agent-relay.ts).
   */
  readonly remoteAddress: string;
  readonly relayedByAgent?: boolean | undefined;
  readonly connection: PersistentConnection | undefined;
  /**
   * REST: called when the request proved a bearer or a process key (its connection is then no
   * longer the first to be closed under a full connection cap; transports/connection-guard.ts).
   */
  readonly authenticated?: (() => void) | undefined;
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  /** Content type; `application/json` unless stated. */
  contentType: string;
  body: Uint8Array;
  /**
   * The body in parts, shared between readers (api/app-listing.ts); `body` is then empty. Every
   * transport writes them one after the other.
   */
  bodyParts?: readonly Uint8Array[] | undefined;
  /**
   * The body as a stream (file download), instead of `body`; `headers['content-length']` says its
   * length. REST sends it as it comes; TCP and WSS carry it in one message, up to
   * `limits.max_body_bytes` (413 above, from the length, without reading it).
   */
  stream?: Readable | undefined;
  /**
   * Raw frames written after this response, then an empty frame (App Mesh 3.0's file side
   * channel; only on a connection with `rawFrames`).
   */
  rawFrames?: AsyncIterable<Uint8Array> | undefined;
}

/** The access rule of an operation (auth/access-rules.ts); `Access` is its older name. */
export type Access = AccessRule;

/** How an operation takes its request body. */
export type BodySpec =
  /**
   * A JSON document, parsed then validated by `schema`, which is also what the OpenAPI document
   * shows; a refusal is 400 with `errorCode`.
   */
  | {
      readonly kind: 'json';
      readonly schema: z.ZodType;
      readonly errorCode?: 'bad_request' | 'invalid_app';
      /** The refusal's message from zod's issues (default: "<dotted path>: <message>", joined by "; "). */
      readonly describeIssues?: (issues: readonly z.core.$ZodIssue[]) => string;
      /**
       * The largest body the operation reads, when smaller than `REST.Limits.MaxBodyBytes`: a REST
       * request announcing more is answered 413 from its head, a TCP/WSS one 413 unparsed.
       */
      readonly maxBytes?: number;
    }
  /**
   * Any content type, handed to the handler as bytes (task payloads and results); with `stream`
   * not read by the dispatcher at all: the handler reads `request.body.stream()` (file upload).
   */
  | { readonly kind: 'raw'; readonly description: string; readonly stream?: true };

/** One documented answer of an operation; the first of `responses` is its success. */
export type ResponseSpec =
  | { readonly status: number; readonly description: string; readonly json: z.ZodType }
  | {
      readonly status: number;
      readonly description: string;
      /** A body that is not JSON: `text/plain`, or whatever content type the peer chose (`*\/*`). */
      readonly media: 'text/plain' | '*/*' | 'none';
      /** Headers that carry part of the answer, by name, with their meaning. */
      readonly headers?: Readonly<Record<string, string>>;
    };

/** The validated input of a request, as the operation's schemas produce it. */
export interface OperationInput<Q = Record<string, unknown>, B = unknown> {
  readonly params: Readonly<Record<string, string>>;
  readonly query: Q;
  readonly body: B;
}

export interface OperationContext<S = unknown, Q = Record<string, unknown>, B = unknown> {
  readonly request: ApiRequest;
  /** Decoded path parameters, for example `name` of /svc/app/{name}. */
  readonly params: Readonly<Record<string, string>>;
  /** Validated query and body. */
  readonly input: OperationInput<Q, B>;
  /** Present for every access kind except public and process-key. */
  readonly principal: Principal | undefined;
  /** What the access rule granted beyond yes (system-app visibility, the resolved app). */
  readonly grant: Grant;
  readonly services: S;
}

export interface Operation<S = unknown, Q = Record<string, unknown>, B = unknown> {
  /** Stable id, also the OpenAPI operationId. */
  readonly id: string;
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** OpenAPI-style template, for example `/svc/app/{name}/output`. */
  readonly path: string;
  /** The one rule that authorizes this operation (auth/access-rules.ts). */
  readonly access: AccessRule;
  readonly summary: string;
  /**
   * `persistent`: only on a TCP or WSS connection (subscriptions); plain HTTP gets 405
   * persistent_connection_required after authentication, before the access rule.
   */
  readonly connection?: 'persistent';
  /**
   * Query parameters: an object schema over the raw string values (unknown names are ignored).
   * Transforms may throw SvcError('invalid_query') naming the parameter.
   */
  readonly query?: z.ZodType<Q>;
  readonly body?: BodySpec;
  /** The success answer first, then other answers worth documenting (errors are implied). */
  readonly responses: readonly [ResponseSpec, ...ResponseSpec[]];
  handle(context: OperationContext<S, Q, B>): Promise<ApiResponse>;
}

/**
 * Declare an operation with typed input: the query and body types are inferred from the schemas.
 * The result is stored in the table with its input types erased.
 */
export function defineOperation<
  S,
  QS extends z.ZodType = z.ZodType<Record<string, never>>,
  BS extends z.ZodType = z.ZodType<undefined>,
>(
  operation: Omit<Operation<S, z.output<QS>, z.output<BS>>, 'query' | 'body'> & {
    readonly query?: QS;
    readonly body?: (BodySpec & { kind: 'json'; schema: BS }) | (BodySpec & { kind: 'raw' });
  },
): Operation<S> {
  return operation as unknown as Operation<S>;
}
