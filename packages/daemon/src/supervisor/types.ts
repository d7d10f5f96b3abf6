// The supervisor as the API layer sees it. The operations in api/ call only this interface;
// everything behind it (process runner, output store, snapshot, schedule) is the supervisor's own.
import type { AppDefinition } from '../model/app-definition.ts';

/** An application as returned by the API: the definition (without secret_env values) plus runtime fields. */
export type AppView = Record<string, unknown> & { name: string };

export interface OutputQuery {
  /** Byte offset into the selected output file; default 0. */
  position: number;
  /** 0 = current process output, N = Nth previous file. */
  index: number;
  /** Maximum bytes returned; default and cap chosen by the supervisor. */
  maxSize: number | undefined;
  /** When set, the read applies only if this is (or was) the app's process; else app_not_found/not_found. */
  processUuid: string | undefined;
  /** Long poll: wait up to this many ms for new output or exit when none is available at `position`. */
  timeoutMs: number;
}

export interface OutputChunk {
  output: Buffer;
  /** Offset of the next unread byte (X-Output-Position). */
  position: number;
  /**
   * True once the process that wrote this file has exited AND this read reached the end of the
   * file: a reader that sees it has seen every byte.
   */
  exited: boolean;
  /**
   * The exit code (X-Exit-Code) when `exited` and the code is known; undefined while running, and
   * also after the exit of a process whose code cannot be known (adopted: `exited` tells them apart).
   */
  exitCode: number | undefined;
  processUuid: string | undefined;
}

export interface RunOptions {
  /** Max run time in seconds; the process is stopped after it (default 10 s for syncrun, 0 = none for run). */
  timeoutSeconds: number;
  /** Seconds the transient app is kept after exit before it is removed (run only). */
  lifecycleSeconds: number;
}

/** Events the supervisor emits for the event dispatcher (issue: events). */
export type SupervisorEvent =
  | { type: 'START'; app: string; pid: number; processUuid: string }
  | {
      type: 'EXIT';
      app: string;
      pid: number;
      /** Exit status, or -signal; undefined when unknowable (an adopted process, see `lastError`). */
      exitCode: number | undefined;
      lastError: string | undefined;
      processUuid: string;
    }
  | { type: 'HEALTH'; app: string; health: 0 | 1; previousHealth: 0 | 1 }
  | { type: 'STATUS'; app: string; enabled: boolean; previousEnabled: boolean }
  | { type: 'REMOVED'; app: string };

export interface SupervisorApi {
  list(): AppView[];
  /** The registered definition of an app (the same object until it is replaced); undefined when none. */
  definition(name: string): AppDefinition | undefined;
  /** undefined when no such app. */
  get(name: string): AppView | undefined;
  /** Owner of an app (principal id) and what others may do with it, for authorization. */
  access(
    name: string,
  ): { owner: string | undefined; others: 'deny' | 'read' | 'write'; system: boolean } | undefined;
  /**
   * Validate and register (or replace) an app; persists work/apps/<name>.yaml atomically before
   * returning. Throws SvcError('invalid_app', precise message) on a bad definition and
   * SvcError('system_app') when replacing a system app.
   */
  /**
   * `owner` is the app's owner (the caller for a new app); `caller` the principal asking, when it
   * is another one (a shared app, app-manage-all): see refuseActingAsOwner.
   */
  register(definition: unknown, owner: string, caller?: string): Promise<AppView>;
  /** Stops the process group, publishes REMOVED, deletes the file. Throws app_not_found / system_app. */
  remove(name: string): Promise<void>;
  enable(name: string): Promise<AppView>;
  disable(name: string): Promise<AppView>;
  /** 0 healthy, 1 unhealthy; undefined when no such app. */
  health(name: string): 0 | 1 | undefined;
  readOutput(name: string, query: OutputQuery): Promise<OutputChunk>;
  /**
   * Start a transient run: `input` is a full app definition (new command) or `{name, metadata?, env?}`
   * naming an existing app to copy. Returns the transient app's name and process uuid.
   */
  run(input: unknown, options: RunOptions, owner: string): Promise<{ name: string; process_uuid: string }>;
  /** Run to completion (or timeout) and return all output and the exit code. */
  syncRun(
    input: unknown,
    options: RunOptions,
    owner: string,
  ): Promise<{ output: Buffer; exitCode: number | undefined }>;
  /** Subscribe to supervisor events; returns an unsubscribe function. */
  onEvent(listener: (event: SupervisorEvent) => void): () => void;
  /** Stop supervising without killing processes (daemon shutdown; processes keep running). */
  detach(): Promise<void>;
  /**
   * How processes are spawned: `native` (svc-spawner and its pid) or `inprocess` (Node's
   * child_process, with the reason: SVC_SPAWNER=inprocess, or why the spawner is unavailable).
   */
  spawner(): { kind: 'native' | 'inprocess'; pid: number | undefined; reason: string | undefined };
}
