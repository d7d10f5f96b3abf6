// Everything of @svc/client that runs unchanged in Node and in browsers.
export { RUN_LIFECYCLE_SECONDS, SvcClient } from './client.ts';
export type { CallOptions, RegisterOptions, SvcClientOptions } from './client.ts';
export { Demultiplexer, MAX_PENDING_EVENTS_PER_SUBSCRIPTION, MAX_PENDING_SUBSCRIPTIONS } from './demux.ts';
export type { DemultiplexerOptions } from './demux.ts';
export {
  API_ERRORS,
  ApiError,
  AppRemovedError,
  ProcessSupersededError,
  SvcClientError,
  TransportDisconnectedError,
  WorkerEnvironmentError,
  WorkerRejectedError,
  apiErrorFrom,
} from './errors.ts';
export { FetchTransport } from './fetch-transport.ts';
export type { FetchTransportOptions } from './fetch-transport.ts';
export { waitForAsyncRun } from './run-wait.ts';
export type { WaitForAsyncRunOptions } from './run-wait.ts';
export { isPersistent } from './transport.ts';
export type { PersistentTransport, Transport, TransportKind, WireCall, WireResult } from './transport.ts';
export { WS_SUBPROTOCOL, WssTransport } from './ws-transport.ts';
export type { WebSocketLike, WssTransportOptions } from './ws-transport.ts';
export { WORKER_RETRY_FLOOR_MS } from './worker.ts';
export type { RunWorkerOptions, TaskHandler, WorkerReply, WorkerTask } from './worker.ts';
export type * from './types.ts';
export { CLIENT_MAX_BODY_BYTES, DISCONNECTED_EVENT, ERROR_CODES, EVENT_TYPES } from '@svc/protocol';
export type { ErrorCode, EventMessage, EventType } from '@svc/protocol';
