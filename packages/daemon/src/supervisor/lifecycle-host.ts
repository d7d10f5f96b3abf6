// What an app's lifecycle (lifecycle.ts) works with: its states, the records it keeps (the
// running process, the runtime fields, the transient state) and its one port to the rest of svc,
// LifecycleHost (the hook runner, hooks/runner.ts; a fake in the unit tests).
import type { AppDefinition } from '../model/app-definition.ts';
import type { OsIdentity } from '../privilege/os-user.ts';
import type { Clock } from '../util/clock.ts';
import type { AppLifecycle } from './lifecycle.ts';
import type { ProcessRunner, SpawnRequest } from './process-runner.ts';
import type { SupervisorEvent } from './types.ts';

export type AppState =
  | 'stopped'
  | 'scheduled'
  /** A start was due but `depends_on` is not satisfied (see `waitingFor`). */
  | 'waiting'
  | 'starting'
  | 'running'
  | 'stopping'
  | 'backoff'
  | 'disabled'
  | 'removed';

/** Why a process is being stopped on purpose; none of these triggers an exit behavior. */
export type StopIntent = 'disable' | 'remove' | 'replace' | 'timeout' | 'window';

/** What the host prepares for a spawn: env (with the injected SVC_* variables), output fd, OS user. */
export interface PreparedSpawn {
  env: Record<string, string>;
  outputFd: number;
  /** The execution user; undefined = the daemon's own user. */
  user?: OsIdentity | undefined;
  /** cgroup.procs files for a runner that places the child itself (resource_limit). */
  cgroupProcs?: readonly string[] | undefined;
}

export interface RunningProcess {
  pid: number;
  processUuid: string;
  startedAt: number;
  /** Field 22 of /proc/<pid>/stat (0 when unknown, e.g. with a fake runner). */
  startTicks: number;
  /** Not our child (re-attached after a daemon restart, or adopted by `pid`): its exit is polled. */
  adopted: boolean;
  /**
   * Started by an earlier daemon and held by the native spawner: re-attached like an adopted
   * process, but its exit (and real exit code) comes from the spawner, not from a poll.
   */
  reattached?: boolean;
  /** Adopted by the definition's `pid`: started outside svc, so its output is not captured. */
  external?: boolean;
  /** Signal the pid alone on stop (always for an external process: svc did not create its group). */
  signalPidOnly?: boolean;
  /** OS user name the process runs as (`pid_user`), when svc started it. */
  user?: string;
}

export interface Transient {
  lifecycleSeconds: number;
  /** Epoch ms after which a running process is stopped (deliberate). */
  timeoutAt: number | undefined;
}

/** Everything the lifecycle needs from outside: ports (runner, clock) and per-concern hooks. */
export interface LifecycleHost {
  readonly runner: ProcessRunner;
  readonly clock: Clock;
  readonly stopGraceMs: number;
  emit(event: SupervisorEvent): void;
  /** Build the spawn request pieces: env (with the injected SVC_* variables) and the output fd. */
  prepareSpawn(app: AppLifecycle, processUuid: string): PreparedSpawn;
  /** Called right after a process was spawned (cgroups, snapshot, health tracking). */
  started(app: AppLifecycle, process: RunningProcess): void;
  /** Called after an exit was recorded and EXIT was published. */
  exited(app: AppLifecycle, process: RunningProcess, exitCode: number | undefined): void;
  /** Why the process ended when svc knows better than its exit code (e.g. an OOM kill), before EXIT. */
  exitError?(app: AppLifecycle, process: RunningProcess): string | undefined;
  /** Runtime state changed in a way the snapshot should capture. */
  changed(app: AppLifecycle): void;
  /**
   * Signal an external (adopted by `pid`) process, alone, if it is still the process adopted and
   * still may be (privilege/adoption.ts); one that may not is let go and reported as exited.
   */
  signalExternal(app: AppLifecycle, process: RunningProcess, signal: NodeJS.Signals): void;
  /** The exit behavior `remove`, or a transient app's lifecycle ended: remove the app. */
  requestRemoval(app: AppLifecycle): void;
  /**
   * Why the app may not start now: the unmet `depends_on` names (it waits), or an error (it stays
   * stopped, `last_error` says why); undefined when it may start.
   */
  startBlocker(app: AppLifecycle): { waitingFor: string[] } | { error: string } | undefined;
}

export interface Runtime {
  starts: number;
  lastStartAt: number | undefined;
  lastExitAt: number | undefined;
  returnCode: number | undefined;
  lastError: string | undefined;
  /** Recent process uuids, newest first (to tell a superseded process key from an unknown one). */
  uuids: string[];
}

/** The runtime fields as others see them (changed only by the lifecycle). */
export type RuntimeView = Readonly<Omit<Runtime, 'uuids'>> & { readonly uuids: readonly string[] };

/** The spawn of a process of `def`, with what the host prepared (metadata goes to stdin as text). */
export function spawnRequestOf(
  def: AppDefinition,
  prepared: PreparedSpawn,
  processUuid: string,
): SpawnRequest {
  const metadata = def.metadata;
  return {
    command: def.command,
    shell: def.shell,
    login: def.session_login,
    cwd: def.working_dir,
    env: prepared.env,
    stdin:
      metadata === undefined ? undefined : typeof metadata === 'string' ? metadata : JSON.stringify(metadata),
    outputFd: prepared.outputFd,
    user: prepared.user,
    identity: { app: def.name, processUuid },
    cgroupProcs: prepared.cgroupProcs,
  };
}
