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
// Concerns that react to transitions (health checks, cgroups, snapshot, events) plug in as hooks
// (hooks/, run by the LifecycleHost). What is known of the app (definition, runtime fields,
// health) and the methods others change it with are app-record.ts's; this file moves it.
import { randomUUID } from 'node:crypto';
import type { AppDefinition } from '../model/app-definition.ts';
import { AppRecord } from './app-record.ts';
import {
  spawnRequestOf,
  type AppState,
  type LifecycleHost,
  type PreparedSpawn,
  type RunningProcess,
  type StopIntent,
} from './lifecycle-host.ts';
import type { ExitInfo, SpawnedProcess } from './process-runner.ts';
import { decideExitAction, nextBackoff } from './restart-policy.ts';
import { inWindow, isPeriodic, nextStartTime, windowEnd } from './schedule.ts';
import { DeadlineTimer } from '../util/clock.ts';

/**
 * Stand-in used only to DECIDE the exit behavior of a process whose exit code is unknown (adopted):
 * outside both the exit-status and the signal ranges, so it matches no `behavior.exit_code_actions` entry and
 * counts as a failure. It is never reported: EXIT and the output API carry `undefined`.
 */
export const UNKNOWN_EXIT_CODE = -256;
export const ADOPTED_EXIT_ERROR = 'exit code unavailable: process was adopted after a daemon restart';

export type { Clock } from '../util/clock.ts';
// The lifecycle's types (states, the running process, the host port), where they were always imported from.
export type * from './lifecycle-host.ts';

export class AppLifecycle extends AppRecord {
  #stopIntent: StopIntent | undefined;
  #stopWaiters: (() => void)[] = [];
  /** The one timer: the earliest instant the current state cares about (#deadline). */
  readonly #timer: DeadlineTimer;
  /** When the current state's deadline falls (next start, backoff end, kill, removal...). */
  #dueAt: number | undefined;
  #detached = false;

  constructor(def: AppDefinition, host: LifecycleHost) {
    super(def, host);
    this.#timer = new DeadlineTimer(host.clock, () => this.#wake());
  }

  /** Next automatic start (epoch ms) while scheduled or backing off. */
  get nextStartAt(): number | undefined {
    return this.f.state === 'scheduled' || this.f.state === 'backoff' ? this.#dueAt : undefined;
  }

  /** (Re)decide what to do now: start, schedule, or rest. Safe to call in any state. */
  decide(): void {
    if (this.f.state === 'removed' || this.f.state === 'stopping' || this.#detached) return;
    if (this.f.process !== undefined) {
      this.#arm();
      return;
    }
    const now = this.host.clock.now();
    if (!this.f.def.enabled) {
      this.#setState('disabled', undefined);
      return;
    }
    if (this.f.transient !== undefined && this.f.runtime.starts > 0) {
      // A transient run happens once; after it the app only waits for its removal.
      this.#setState(
        'stopped',
        (this.f.runtime.lastExitAt ?? now) + this.f.transient.lifecycleSeconds * 1000,
      );
      return;
    }
    const periodic = isPeriodic(this.f.def);
    if (!periodic && !this.f.wantRun) {
      this.#setState('stopped', undefined);
      return;
    }
    const history =
      periodic && this.f.runtime.lastStartAt !== undefined ? { lastStartAt: this.f.runtime.lastStartAt } : {};
    const at = nextStartTime(this.f.def, history, now);
    if (at === undefined) {
      this.#setState('stopped', undefined);
    } else if (at <= now && inWindow(this.f.def, now)) {
      this.start();
    } else {
      this.#setState('scheduled', Math.max(at, now));
    }
  }

  /** Spawn a process now, unless `depends_on` is unmet (then wait) or the app cannot run. */
  start(): void {
    const host = this.host;
    const now = host.clock.now();
    const blocker = host.startBlocker(this);
    if (blocker !== undefined && 'waitingFor' in blocker) {
      this.f.waitingFor = blocker.waitingFor;
      this.#setState('waiting', undefined);
      return;
    }
    this.f.waitingFor = undefined;
    if (blocker !== undefined) {
      this.f.runtime.lastError = blocker.error;
      this.f.wantRun = false;
      this.#setState('stopped', undefined);
      host.changed(this);
      return;
    }
    const processUuid = randomUUID();
    this.#setState('starting', undefined);
    this.recordStart(processUuid, now);
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
    const spawned = host.runner.spawn(spawnRequestOf(this.f.def, prepared, processUuid));
    const process: RunningProcess = {
      pid: spawned.pid,
      processUuid,
      startedAt: now,
      startTicks: 0,
      adopted: false,
      ...(prepared.user === undefined ? {} : { user: prepared.user.user }),
    };
    if (spawned.pid > 0) {
      this.f.process = process;
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
    this.f.process = process;
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
    if (!startRecorded) this.recordStart(process.processUuid, process.startedAt);
    this.f.wantRun = true;
    if (held === undefined) this.adopt(process);
    else this.adoptHeld(process, held);
  }

  /**
   * Take over a running process that svc did not start (the definition's `pid`): a start without a
   * spawn. START is published with a fresh process uuid; its exit is found by the supervisor's poll.
   */
  adoptExternal(pid: number, startTicks: number): RunningProcess {
    const host = this.host;
    const now = host.clock.now();
    const processUuid = randomUUID();
    this.recordStart(processUuid, now);
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
    this.f.process = process;
    this.#setState('running', undefined);
    host.emit({ type: 'START', app: this.name, pid, processUuid });
    host.started(this, process);
    return process;
  }

  /** The supervisor's poll found that an adopted process is gone. */
  adoptedExited(): void {
    const process = this.f.process;
    if (process === undefined || !process.adopted) return;
    this.#recordExit(process, undefined, ADOPTED_EXIT_ERROR);
  }

  /** Stop the running process on purpose; resolves once its exit is recorded. */
  stop(intent: StopIntent): Promise<void> {
    const process = this.f.process;
    if (process === undefined) {
      this.#timer.clear();
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
    if (this.f.state !== 'stopping') {
      const graceMs =
        this.f.def.stop_grace_period === undefined
          ? this.host.stopGraceMs
          : this.f.def.stop_grace_period.seconds * 1000;
      this.#setState('stopping', this.host.clock.now() + graceMs);
      this.#signal(process, 'SIGTERM');
    }
    return done;
  }

  /** Mark removed: no further transitions, timers cleared. */
  markRemoved(): void {
    this.#timer.clear();
    this.f.state = 'removed';
    this.#dueAt = undefined;
  }

  /**
   * Stop timers without touching the process (daemon shutdown). A detached lifecycle no longer
   * acts: a later exit of its child is not recorded (the next daemon re-attaches and sees it).
   */
  detach(): void {
    this.#detached = true;
    this.#timer.clear();
  }

  #recordExit(
    process: RunningProcess,
    exitCode: number | undefined,
    error: string | undefined,
    exitedAt?: number,
  ): void {
    if (this.f.state === 'removed' && this.f.process === undefined) return;
    if (this.#detached) return;
    const host = this.host;
    const now = host.clock.now();
    if (this.f.process === process) this.f.process = undefined;
    const intent = this.#stopIntent;
    this.#stopIntent = undefined;
    this.f.lastStop = intent;
    if (intent === 'timeout') error ??= 'stopped: run timeout exceeded';
    error ??= host.exitError?.(this, process);
    // The spawner's reap time when it has one (an exit while no daemon ran is dated when it happened).
    this.f.runtime.lastExitAt = exitedAt !== undefined && exitedAt > 0 && exitedAt <= now ? exitedAt : now;
    this.f.runtime.returnCode = exitCode;
    this.f.runtime.lastError = error;
    this.f.checkedHealth = undefined;
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
      this.f.crashed = false;
      if (intent === 'disable') this.#setState('disabled', undefined);
      else if (intent === 'remove' || intent === 'replace') this.#setState('stopped', undefined);
      else {
        // timeout (transient: waits for removal) or window end (next window)
        this.f.state = 'stopped';
        this.decide();
      }
      for (const resolve of waiters) resolve();
      host.changed(this);
      return;
    }
    if (this.f.state === 'removed') return;

    this.f.crashed = code !== 0 || this.f.def.system; // a system app exiting at all is a failure
    const action = decideExitAction(this.f.def, code);
    if (this.f.transient !== undefined || action === 'standby') {
      if (!isPeriodic(this.f.def)) this.f.wantRun = false;
      this.decide();
    } else if (action === 'remove') {
      this.f.crashed = false; // removed next: no HEALTH flap on the way out
      this.#setState('stopped', undefined);
      host.requestRemoval(this);
    } else {
      const { delayMs, state } = nextBackoff(this.f.crash, now - process.startedAt, now);
      this.f.crash = state;
      if (delayMs === 0 && this.f.def.enabled && inWindow(this.f.def, now)) this.start();
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
    if (process.external === true) this.host.signalExternal(this, process, signal);
    else if (process.signalPidOnly === true) this.host.runner.kill(process.pid, signal);
    else this.host.runner.killGroup(process.pid, signal);
  }

  #setState(state: AppState, dueAt: number | undefined): void {
    this.f.state = state;
    this.#dueAt = dueAt;
    this.#arm();
    this.refreshHealth();
  }

  /** The one timer: the earliest instant the current state cares about. */
  #deadline(): number | undefined {
    if (this.f.state === 'running') {
      const now = this.host.clock.now();
      const end = windowEnd(this.f.def, now);
      const timeout = this.f.transient?.timeoutAt;
      if (end === undefined) return timeout;
      return timeout === undefined ? end : Math.min(end, timeout);
    }
    return this.#dueAt;
  }

  #arm(): void {
    this.#timer.arm(this.#deadline());
  }

  #wake(): void {
    const now = this.host.clock.now();
    const due = this.#deadline();
    if (due !== undefined && due > now) {
      this.#arm();
      return;
    }
    switch (this.f.state) {
      case 'running': {
        const timedOut = this.f.transient?.timeoutAt !== undefined && this.f.transient.timeoutAt <= now;
        void this.stop(timedOut ? 'timeout' : 'window');
        return;
      }
      case 'stopping':
        if (this.f.process !== undefined) this.#signal(this.f.process, 'SIGKILL');
        return;
      case 'backoff':
        this.#dueAt = undefined;
        if (this.f.def.enabled && inWindow(this.f.def, now)) this.start();
        else this.decide();
        return;
      case 'scheduled':
        this.#dueAt = undefined;
        if (this.f.def.enabled && inWindow(this.f.def, now)) this.start();
        else this.decide();
        return;
      case 'stopped':
        if (this.f.transient !== undefined) this.host.requestRemoval(this);
        return;
      default:
        return;
    }
  }
}
