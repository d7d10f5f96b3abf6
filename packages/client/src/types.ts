// Public request and response shapes of @svc/client. Wire-level types come from @svc/protocol.
import type { EventMessage, EventType } from '@svc/protocol';

export type { EventMessage, EventType };

/** An application definition as registered (`PUT /svc/app/{name}`). Fields beyond these pass through. */
export interface AppDefinition {
  name?: string;
  command?: string;
  shell?: boolean;
  [field: string]: unknown;
}

/** An application with its runtime fields, as listed or fetched. */
export interface AppInfo {
  name: string;
  [field: string]: unknown;
}

/** Answer of a registration; `subscription_id` is present when `subscribeEvents` was given. */
export interface RegisteredApp extends AppInfo {
  subscription_id?: string;
}

/** Event selection: event names, or `'ALL'`; an empty list means all events. */
export type EventSelection = readonly (EventType | 'ALL')[];

/** The client-local (or gateway) `__disconnected__` event: only these two fields are guaranteed. */
export interface DisconnectedEvent {
  subscription_id: string;
  event_type: '__disconnected__';
  app_name?: string;
  data?: { message?: string };
}

/** What a subscription callback receives. */
export type SubscriptionEvent = EventMessage | DisconnectedEvent;

/**
 * A subscription callback. Called serially per subscription in arrival order. It may return a
 * promise: later events of the same subscription wait for it, the socket reader never does.
 */
export type EventCallback = (event: SubscriptionEvent) => void | Promise<void>;

export interface SubscriptionInfo {
  subscription_id: string;
  /** The app, or `*` for an all-apps subscription. */
  app_name: string;
  events: string[];
}

export interface OutputOptions {
  /** Byte offset to read from (default 0). */
  position?: number;
  /** 0 = current process, N = Nth previous output file. */
  index?: number;
  maxSize?: number;
  processUuid?: string;
  /** Long poll: seconds to wait for new output or exit. */
  timeoutSeconds?: number;
}

export interface OutputChunk {
  /** The bytes read, as UTF-8 text. */
  output: string;
  /** Byte length of `output` in the file (from `X-Output-Position` minus the requested position). */
  bytes: number;
  /** Byte offset of the next read (`X-Output-Position`). */
  nextPosition: number;
  /** Exit code once the process exited; null when it exited with an unknown code; undefined while running. */
  exitCode: number | null | undefined;
  processUuid: string | undefined;
}

export interface RunOptions {
  /** Stop the run after this many seconds. */
  timeoutSeconds?: number;
  /** Remove the transient app this many seconds after it exits. */
  lifecycleSeconds?: number;
}

/** Answer of `POST /svc/app/run`. */
export interface AsyncRun {
  name: string;
  process_uuid: string;
}

export interface SyncRunResult {
  output: string;
  /** `X-Exit-Code`, or undefined when the daemon did not report one (for example on its timeout). */
  exitCode: number | undefined;
}

export interface TaskOptions {
  timeoutSeconds?: number;
  taskId?: string;
  /** Content type of the payload (default application/octet-stream, or application/json for objects). */
  contentType?: string;
}

export interface TaskResult {
  taskId: string | undefined;
  contentType: string;
  body: Uint8Array;
  text(): string;
  json<T = unknown>(): T;
}

export interface SelfInfo {
  principal_id: string;
  roles: string[];
  permissions: string[];
  status: string;
  [field: string]: unknown;
}

export interface AuthConfig {
  flows: string[];
  [field: string]: unknown;
}

export type JsonObject = Record<string, unknown>;
