// The lifecycle of one application: the only place that moves an app between states.
//
//                        register / enable / load              register with `pid` (adoptExternal),
//                                 │                            load with a live snapshot entry (adopt),
//                                 │                            load: orphan found in /proc (adoptOrphan)
//                                 ▼                                                   │ no spawn
//    ┌──────────┐ disable  ┌─────────────┐  due & in window   ┌──────────┐   spawned   ▼ ┌─────────┐
//    │ disabled │◄─────────│  (decide)   │───────────────────►│ starting │─────────────►│ running │
//    └──────────┘  (any    └─────────────┘                    └──────────┘              └─────────┘
//         ▲        state)   │          │  ▲                        │ spawn failed         │   │
//         │                 │ later    │  │ timer                  ▼                      │   │ exit on its own
//         │                 ▼          │  │               (exit recorded, as a crash)     │   │ (EXIT event)
//         │          ┌───────────┐     │  │                                               │   ▼
//         │          │ scheduled │─────┼──┘                                               │  decideExitAction
//         │          └───────────┘     │ never                                            │   ├ standby → decide (periodic: next slot)
//         │                            ▼                                                  │   ├ restart → backoff (first: immediately)
//         │                      ┌──────────┐                                             │   └ remove  → removed
//         │                      │ stopped  │◄──── standby, not periodic                  │
//         │                      └──────────┘                                             │ disable / remove / replace /
//         │                                                                               │ run timeout / window end
//         │                      ┌──────────┐  SIGTERM to group, SIGKILL after grace      ▼  (deliberate: no exit behavior)
//         └──────────────────────│ stopping │◄───────────────────────────────────────────-┘
//                 exit recorded  └──────────┘──► removed (remove) · decide (replace, timeout, window)
//
//    backoff ──timer──► starting          removed: terminal; REMOVED is published before the purge
//                                         (a removal's stop publishes no EXIT)
//    any start whose depends_on is unmet ──► waiting (waitingFor) ──supervisor re-decides──► (decide)
//
// Adopted processes (not our children) leave `running` when the supervisor's /proc poll finds them
// gone (adoptedExited): exit code unknown (EXIT carries undefined), decided as a failed exit. Stop
// signals go to the process group, except for an adopted `pid` that leads none (pid only).
//
// "Decide, then act": exit actions, backoff delays and schedule times come from the pure modules
// restart-policy.ts and schedule.ts; this file only applies them. Each app owns ONE timer, armed
// for the next instant its state cares about (next start, backoff end, window end, run timeout,
// SIGKILL escalation, transient-app removal). Exits of our own children arrive through the
// runner's exit callback (no polling); adopted processes are polled by the supervisor.
//
// Concerns that react to transitions (health checks, cgroups, snapshot, events) plug in as hooks.
import { randomUUID } from 'node:crypto';
import type { OsIdentity } from '../privilege/os-user.ts';
import type { AppDefinition } from '../model/app-definition.ts';
import type { ExitInfo, ProcessRunner, SpawnedProcess } from './process-runner.ts';
import { decideExitAction, INITIAL_CRASH_STATE, nextBackoff } from './restart-policy.ts';
import type { CrashState } from './restart-policy.ts';
import { inWindow, isPeriodic, nextStartTime, windowEnd } from './schedule.ts';
import type { SupervisorEvent } from './types.ts';
import type { Clock } from '../util/clock.ts';

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

/**
 * Stand-in used only to DECIDE the exit behavior of a process whose exit code is unknown (adopted):
 * outside both the exit-status and the signal ranges, so it matches no `behavior.exit_code_actions` entry and
 * counts as a failure. It is never reported: EXIT and the output API carry `undefined`.
 */
export const UNKNOWN_EXIT_CODE = -256;
export const ADOPTED_EXIT_ERROR = 'exit code unavailable: process was adopted after a daemon restart';

export type { Clock } from '../util/clock.ts';

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

const KEPT_UUIDS = 8;

export class AppLifecycle {
  // Every field is private: what the rest of the supervisor may change goes through the methods
  // below (start, stop, adopt*, replace, setEnabled, markTransient, reportHealth, ...).
  #def: AppDefinition;
  #state: AppState = 'stopped';
  #process: RunningProcess | undefined;
  readonly #runtime: Runtime = {
    starts: 0,
    lastStartAt: undefined,
    lastExitAt: undefined,
    returnCode: undefined,
    lastError: undefined,
    uuids: [],
  };
  /** Non-periodic apps: whether the app should be running (cleared by a standby exit). */
  #wantRun = true;
  #transient: Transient | undefined;
  /** Result of the last health_check_cmd run while running; undefined = use liveness. */
  #checkedHealth: 0 | 1 | undefined;
  /** Why the last process was stopped on purpose; undefined when it exited on its own. */
  #lastStop: StopIntent | undefined;
  /** Last published health. */
  #health: 0 | 1 = 0;
  /** The unmet `depends_on` names while the state is `waiting`. */
  #waitingFor: string[] | undefined;
  /** Last seen process exit was abnormal (non-zero, signal, spawn failure, unknown). */
  #crashed = false;
  #crash: CrashState = INITIAL_CRASH_STATE;
  #stopIntent: StopIntent | undefined;
  #stopWaiters: (() => void)[] = [];
  #timer: unknown;
  #timerAt: number | undefined;
  /** When the current state's deadline falls (next start, backoff end, kill, removal...). */
  #dueAt: number | undefined;
  readonly #host: LifecycleHost;
  #detached = false;

  constructor(def: AppDefinition, host: LifecycleHost) {
    this.#def = def;
    this.#host = host;
  }

  get name(): string {
    return this.#def.name;
  }

  get def(): AppDefinition {
    return this.#def;
  }

  get state(): AppState {
    return this.#state;
  }

  /** The process running now (spawned, re-attached or adopted); undefined when none. */
  get process(): RunningProcess | undefined {
    return this.#process;
  }

  get runtime(): RuntimeView {
    return this.#runtime;
  }

  /** Non-periodic apps: whether the app should be running (cleared by a standby exit). */
  get wantRun(): boolean {
    return this.#wantRun;
  }

  /** Present for a transient app (run / syncrun). */
  get transient(): Readonly<Transient> | undefined {
    return this.#transient;
  }

  /** Why the last process was stopped on purpose; undefined when it exited on its own. */
  get lastStop(): StopIntent | undefined {
    return this.#lastStop;
  }

  /** The unmet `depends_on` names while the state is `waiting`. */
  get waitingFor(): readonly string[] | undefined {
    return this.#waitingFor;
  }

  /**
   * A new definition for this app (a replacement, or the same process's definition echoed back):
   * it is no longer transient. The caller stops the old process first when one must not survive.
   */
  replace(def: AppDefinition): void {
    this.#def = def;
    this.#transient = undefined;
  }

  /** The definition with `enabled` changed (enable, disable, or their undo); returns it. */
  setEnabled(enabled: boolean): AppDefinition {
    this.#def = { ...this.#def, enabled };
    return this.#def;
  }

  /** A transient app (run / syncrun; or restored from the snapshot): runs once, then is removed. */
  markTransient(transient: Transient): void {
    this.#transient = transient;
  }

  /** A health_check_cmd result for the running process: HEALTH is published when health changed. */
  reportHealth(health: 0 | 1): void {
    this.#checkedHealth = health;
    this.refreshHealth();
  }

  /** Next automatic start (epoch ms) while scheduled or backing off. */
  get nextStartAt(): number | undefined {
    return this.#state === 'scheduled' || this.#state === 'backoff' ? this.#dueAt : undefined;
  }

  /** (Re)decide what to do now: start, schedule, or rest. Safe to call in any state. */
  decide(): void {
    if (this.#state === 'removed' || this.#state === 'stopping' || this.#detached) return;
    if (this.#process !== undefined) {
      this.#arm();
      return;
    }
    const now = this.#host.clock.now();
    if (!this.#def.enabled) {
      this.#setState('disabled', undefined);
      return;
    }
    if (this.#transient !== undefined && this.#runtime.starts > 0) {
      // A transient run happens once; after it the app only waits for its removal.
      this.#setState('stopped', (this.#runtime.lastExitAt ?? now) + this.#transient.lifecycleSeconds * 1000);
      return;
    }
    const periodic = isPeriodic(this.#def);
    if (!periodic && !this.#wantRun) {
      this.#setState('stopped', undefined);
      return;
    }
    const history =
      periodic && this.#runtime.lastStartAt !== undefined ? { lastStartAt: this.#runtime.lastStartAt } : {};
    const at = nextStartTime(this.#def, history, now);
    if (at === undefined) {
      this.#setState('stopped', undefined);
    } else if (at <= now && inWindow(this.#def, now)) {
      this.start();
    } else {
      this.#setState('scheduled', Math.max(at, now));
    }
  }

  /** Spawn a process now, unless `depends_on` is unmet (then wait) or the app cannot run. */
  start(): void {
    const host = this.#host;
    const now = host.clock.now();
    const blocker = host.startBlocker(this);
    if (blocker !== undefined && 'waitingFor' in blocker) {
      this.#waitingFor = blocker.waitingFor;
      this.#setState('waiting', undefined);
      return;
    }
    this.#waitingFor = undefined;
    if (blocker !== undefined) {
      this.#runtime.lastError = blocker.error;
      this.#wantRun = false;
      this.#setState('stopped', undefined);
      host.changed(this);
      return;
    }
    const processUuid = randomUUID();
    this.#setState('starting', undefined);
    this.#runtime.uuids = [processUuid, ...this.#runtime.uuids].slice(0, KEPT_UUIDS);
    this.#runtime.starts++;
    this.#runtime.lastStartAt = now;
    let prepared: PreparedSpawn;
    try {
      prepared = host.prepareSpawn(this, processUuid);
    } catch (error) {
      this.#recordExit(
        { pid: 0, processUuid, startedAt: now, startTicks: 0, adopted: false },
        1,
        `cannot start: ${(error as Error).message}`,
      );
      return;
    }
    const metadata = this.#def.metadata;
    const spawned = host.runner.spawn({
      command: this.#def.command,
      shell: this.#def.shell,
      login: this.#def.session_login,
      cwd: this.#def.working_dir,
      env: prepared.env,
      stdin:
        metadata === undefined
          ? undefined
          : typeof metadata === 'string'
            ? metadata
            : JSON.stringify(metadata),
      outputFd: prepared.outputFd,
      user: prepared.user,
      identity: { app: this.name, processUuid },
      cgroupProcs: prepared.cgroupProcs,
    });
    const process: RunningProcess = {
      pid: spawned.pid,
      processUuid,
      startedAt: now,
      startTicks: 0,
      adopted: false,
      ...(prepared.user === undefined ? {} : { user: prepared.user.user }),
    };
    if (spawned.pid > 0) {
      this.#process = process;
      this.#setState('running', undefined);
      host.emit({ type: 'START', app: this.name, pid: spawned.pid, processUuid });
      host.started(this, process);
    }
    // The callback runs from the event loop, never synchronously: START is always published first.
    spawned.onExit((info: ExitInfo) =>
      this.#recordExit(process, info.exitCode, info.spawnError, info.exitedAt),
    );
  }

  /** Take over a process that outlived the previous daemon; its exit is reported by `adoptedExited`. */
  adopt(process: RunningProcess): void {
    this.#process = process;
    this.#setState('running', undefined);
  }

  /**
   * Take over a process that outlived the previous daemon and that the native spawner holds: its
   * exit, with its real exit code (also one that happened while no daemon ran), comes through `held`.
   */
  adoptHeld(process: RunningProcess, held: SpawnedProcess): void {
    process.adopted = false;
    process.reattached = true;
    this.adopt(process);
    held.onExit((info: ExitInfo) => this.#recordExit(process, info.exitCode, info.spawnError, info.exitedAt));
  }

  /**
   * Take over a process of ours that the snapshot does not list (found by the supervisor's /proc scan
   * at start-up, its process key verified). `startRecorded` false: the snapshot predates its start,
   * so the start is recorded now (uuid, `starts`, launch time). No START: the daemon that spawned it
   * published one. A start happens only when the app wants to run, hence `wantRun`.
   */
  adoptOrphan(process: RunningProcess, startRecorded: boolean, held?: SpawnedProcess): void {
    if (!startRecorded) {
      this.#runtime.uuids = [process.processUuid, ...this.#runtime.uuids].slice(0, KEPT_UUIDS);
      this.#runtime.starts++;
      this.#runtime.lastStartAt = process.startedAt;
    }
    this.#wantRun = true;
    if (held === undefined) this.adopt(process);
    else this.adoptHeld(process, held);
  }

  /**
   * Take over a running process that svc did not start (the definition's `pid`): a start without a
   * spawn. START is published with a fresh process uuid; its exit is found by the supervisor's poll.
   */
  adoptExternal(pid: number, startTicks: number): RunningProcess {
    const host = this.#host;
    const now = host.clock.now();
    const processUuid = randomUUID();
    this.#runtime.uuids = [processUuid, ...this.#runtime.uuids].slice(0, KEPT_UUIDS);
    this.#runtime.starts++;
    this.#runtime.lastStartAt = now;
    const process: RunningProcess = {
      pid,
      processUuid,
      startedAt: now,
      startTicks,
      adopted: true,
      external: true,
      // svc did not create its process group: only the process itself is ever signalled.
      signalPidOnly: true,
    };
    this.#process = process;
    this.#setState('running', undefined);
    host.emit({ type: 'START', app: this.name, pid, processUuid });
    host.started(this, process);
    return process;
  }

  /** The supervisor's poll found that an adopted process is gone. */
  adoptedExited(): void {
    const process = this.#process;
    if (process === undefined || !process.adopted) return;
    this.#recordExit(process, undefined, ADOPTED_EXIT_ERROR);
  }

  /** Stop the running process on purpose; resolves once its exit is recorded. */
  stop(intent: StopIntent): Promise<void> {
    const process = this.#process;
    if (process === undefined) {
      this.#clearTimer();
      return Promise.resolve();
    }
    // A stronger intent replaces a weaker one (remove beats disable beats window/timeout).
    if (
      this.#stopIntent === undefined ||
      intent === 'remove' ||
      intent === 'replace' ||
      intent === 'disable'
    ) {
      this.#stopIntent = intent;
    }
    const done = new Promise<void>((resolve) => this.#stopWaiters.push(resolve));
    if (this.#state !== 'stopping') {
      const graceMs =
        this.#def.stop_grace_period === undefined
          ? this.#host.stopGraceMs
          : this.#def.stop_grace_period.seconds * 1000;
      this.#setState('stopping', this.#host.clock.now() + graceMs);
      this.#signal(process, 'SIGTERM');
    }
    return done;
  }

  /** Mark removed: no further transitions, timers cleared. */
  markRemoved(): void {
    this.#clearTimer();
    this.#state = 'removed';
    this.#dueAt = undefined;
  }

  /**
   * Stop timers without touching the process (daemon shutdown). A detached lifecycle no longer
   * acts: a later exit of its child is not recorded (the next daemon re-attaches and sees it).
   */
  detach(): void {
    this.#detached = true;
    this.#clearTimer();
  }

  /** Health: the check result while running with a health_check_cmd, else liveness. */
  computeHealth(): 0 | 1 {
    if (
      this.#state === 'running' &&
      this.#def.health_check_cmd !== undefined &&
      this.#checkedHealth !== undefined
    ) {
      return this.#checkedHealth;
    }
    if (this.#state === 'disabled' || this.#state === 'removed') return 0;
    // A system application that is not running is down: it always should be.
    if (this.#def.system && this.#state !== 'running' && this.#state !== 'starting') return 1;
    // "Should be running but is not": waiting to restart after a crash, or left down by a crash.
    if (this.#state === 'backoff') return 1;
    if (
      (this.#state === 'stopped' || this.#state === 'scheduled') &&
      this.#crashed &&
      this.#transient === undefined
    )
      return 1;
    return 0;
  }

  /** Re-evaluate health and publish HEALTH when it changed. */
  refreshHealth(): void {
    const health = this.computeHealth();
    if (health === this.#health || this.#state === 'removed') return;
    const previousHealth = this.#health;
    this.#health = health;
    this.#host.emit({ type: 'HEALTH', app: this.name, health, previousHealth });
  }

  /** Restore runtime fields from the snapshot. */
  restoreRuntime(runtime: Runtime, wantRun: boolean, crashed: boolean): void {
    Object.assign(this.#runtime, runtime);
    this.#wantRun = wantRun || this.#def.system; // an older daemon's "left down" never holds for them
    this.#crashed = crashed;
  }

  get crashed(): boolean {
    return this.#crashed;
  }

  /** The app was (re)configured or enabled: forget crash history and run again. */
  resetForRun(): void {
    this.#wantRun = true;
    this.#crash = INITIAL_CRASH_STATE;
    this.#crashed = false;
  }

  #recordExit(
    process: RunningProcess,
    exitCode: number | undefined,
    error: string | undefined,
    exitedAt?: number,
  ): void {
    if (this.#state === 'removed' && this.#process === undefined) return;
    if (this.#detached) return;
    const host = this.#host;
    const now = host.clock.now();
    if (this.#process === process) this.#process = undefined;
    const intent = this.#stopIntent;
    this.#stopIntent = undefined;
    this.#lastStop = intent;
    if (intent === 'timeout') error ??= 'stopped: run timeout exceeded';
    error ??= host.exitError?.(this, process);
    // The spawner's reap time when it has one (an exit while no daemon ran is dated when it happened).
    this.#runtime.lastExitAt = exitedAt !== undefined && exitedAt > 0 && exitedAt <= now ? exitedAt : now;
    this.#runtime.returnCode = exitCode;
    this.#runtime.lastError = error;
    this.#checkedHealth = undefined;
    const code = exitCode ?? UNKNOWN_EXIT_CODE;
    // A process stopped by the app's removal has no EXIT: REMOVED (published by the remover right
    // after) is what a waiter sees, "app removed" rather than the code of the kill.
    if (intent !== 'remove') {
      host.emit({
        type: 'EXIT',
        app: this.name,
        pid: process.pid,
        exitCode,
        lastError: error,
        processUuid: process.processUuid,
      });
    }
    host.exited(this, process, exitCode);

    const waiters = this.#stopWaiters;
    this.#stopWaiters = [];
    if (intent !== undefined) {
      // Deliberate stop: no exit behavior. Whoever asked decides what comes next.
      this.#crashed = false;
      if (intent === 'disable') this.#setState('disabled', undefined);
      else if (intent === 'remove' || intent === 'replace') this.#setState('stopped', undefined);
      else {
        // timeout (transient: waits for removal) or window end (next window)
        this.#state = 'stopped';
        this.decide();
      }
      for (const resolve of waiters) resolve();
      host.changed(this);
      return;
    }
    if (this.#state === 'removed') return;

    this.#crashed = code !== 0 || this.#def.system; // a system app exiting at all is a failure
    const action = decideExitAction(this.#def, code);
    if (this.#transient !== undefined || action === 'standby') {
      if (!isPeriodic(this.#def)) this.#wantRun = false;
      this.decide();
    } else if (action === 'remove') {
      this.#crashed = false; // removed next: no HEALTH flap on the way out
      this.#setState('stopped', undefined);
      host.requestRemoval(this);
    } else {
      const { delayMs, state } = nextBackoff(this.#crash, now - process.startedAt, now);
      this.#crash = state;
      if (delayMs === 0 && this.#def.enabled && inWindow(this.#def, now)) this.start();
      else if (delayMs === 0) this.decide();
      else this.#setState('backoff', now + delayMs);
    }
    host.changed(this);
  }

  /**
   * Stop signals go to the whole process group svc created; an external (adopted) process is
   * signalled alone, and only through the host's ownership check.
   */
  #signal(process: RunningProcess, signal: NodeJS.Signals): void {
    if (process.external === true) this.#host.signalExternal(this, process, signal);
    else if (process.signalPidOnly === true) this.#host.runner.kill(process.pid, signal);
    else this.#host.runner.killGroup(process.pid, signal);
  }

  #setState(state: AppState, dueAt: number | undefined): void {
    this.#state = state;
    this.#dueAt = dueAt;
    this.#arm();
    this.refreshHealth();
  }

  /** The one timer: the earliest instant the current state cares about. */
  #deadline(): number | undefined {
    if (this.#state === 'running') {
      const now = this.#host.clock.now();
      const end = windowEnd(this.#def, now);
      const timeout = this.#transient?.timeoutAt;
      if (end === undefined) return timeout;
      return timeout === undefined ? end : Math.min(end, timeout);
    }
    return this.#dueAt;
  }

  #arm(): void {
    const at = this.#deadline();
    if (at === this.#timerAt && this.#timer !== undefined) return;
    this.#clearTimer();
    if (at === undefined) return;
    const clock = this.#host.clock;
    this.#timerAt = at;
    // setTimeout holds at most 2^31-1 ms; a longer wait re-arms when it fires.
    this.#timer = clock.setTimeout(() => this.#wake(), Math.min(Math.max(0, at - clock.now()), 2 ** 31 - 1));
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#host.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = undefined;
  }

  #wake(): void {
    this.#timer = undefined;
    this.#timerAt = undefined;
    const now = this.#host.clock.now();
    const due = this.#deadline();
    if (due !== undefined && due > now) {
      this.#arm();
      return;
    }
    switch (this.#state) {
      case 'running': {
        const timedOut = this.#transient?.timeoutAt !== undefined && this.#transient.timeoutAt <= now;
        void this.stop(timedOut ? 'timeout' : 'window');
        return;
      }
      case 'stopping':
        if (this.#process !== undefined) this.#signal(this.#process, 'SIGKILL');
        return;
      case 'backoff':
        this.#dueAt = undefined;
        if (this.#def.enabled && inWindow(this.#def, now)) this.start();
        else this.decide();
        return;
      case 'scheduled':
        this.#dueAt = undefined;
        if (this.#def.enabled && inWindow(this.#def, now)) this.start();
        else this.decide();
        return;
      case 'stopped':
        if (this.#transient !== undefined) this.#host.requestRemoval(this);
        return;
      default:
        return;
    }
  }
}
