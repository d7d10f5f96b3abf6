// Public request and response shapes of @svc/client. Wire-level types come from @svc/protocol.
import type { EventMessage, EventType } from '@svc/protocol';

export type { EventMessage, EventType };

/** An application definition as registered (`PUT /svc/app/{name}`). Fields beyond these pass through. */
export interface AppDefinition {
  name?: string;
  command?: string;
  shell?: boolean;
  session_login?: boolean;
  description?: string;
  working_dir?: string;
  env?: Record<string, string>;
  /** Encrypted at rest; read back as `******` (sending that back keeps the stored value). */
  secret_env?: Record<string, string>;
  metadata?: unknown;
  enabled?: boolean;
  health_check_cmd?: string;
  stdout_backup_count?: number;
  /** Epoch seconds or ISO 8601 (read back as epoch seconds). */
  start_time?: number | string;
  end_time?: number | string;
  /** Seconds or an ISO 8601 duration (read back as seconds). */
  interval?: number | string;
  cron_schedule?: string;
  /** `HH:MM[:SS]`, seconds of the day or epoch seconds (read back as seconds of the local day). */
  daily_limitation?: { daily_start: number | string; daily_end: number | string };
  /** Seconds or an ISO 8601 duration (read back as a string of seconds). */
  stop_grace_period?: number | string;
  /** Apps that must be registered, enabled, running and healthy before this one starts. */
  depends_on?: string[];
  resource_limit?: { cpu_shares?: number; memory_mb?: number; memory_virt_mb?: number };
  behavior?: {
    exit?: 'standby' | 'restart' | 'keepalive' | 'remove';
    exit_code_actions?: Record<string, 'standby' | 'restart' | 'keepalive' | 'remove'>;
  };
  /** Two digits; the tens digit is what other principals may do: 1 deny, 2 read, 3 write. */
  permission?: number;
  /** Adopt this running process. */
  pid?: number;
  docker_image?: string;
  [field: string]: unknown;
}

/** An application with its runtime fields, as listed or fetched (App Mesh 3.0 names; times in epoch seconds). */
export interface AppInfo {
  name: string;
  enabled?: boolean;
  pid?: number;
  pid_user?: string;
  process_uuid?: string;
  return_code?: number | null;
  health?: 0 | 1;
  memory?: number;
  cpu?: number;
  fd?: number;
  pstree?: string;
  starts?: number;
  register_time?: number;
  last_start_time?: number;
  last_exit_time?: number;
  next_start_time?: number;
  last_error?: string;
  /** Unmet `depends_on` names while the app waits for them. */
  waiting_for?: string[];
  stdout_file_count?: number;
  owner_principal_id?: string;
  owner_display_name?: string;
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
