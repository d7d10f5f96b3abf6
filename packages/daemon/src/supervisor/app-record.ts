// What is known of one application: its definition, its runtime fields and its health, read by
// the rest of the supervisor through the getters below. Only its lifecycle (lifecycle.ts, the
// subclass: the one place that moves an app between states) writes `fields`; everyone else
// changes an app through the intention-revealing methods (replace, setEnabled, markTransient,
// reportHealth, restoreRuntime, resetForRun).
import type { AppDefinition } from '../model/app-definition.ts';
import type {
  AppState,
  LifecycleHost,
  RunningProcess,
  Runtime,
  RuntimeView,
  StopIntent,
  Transient,
} from './lifecycle-host.ts';
import { INITIAL_CRASH_STATE, type CrashState } from './restart-policy.ts';

/** How many recent process uuids are kept (to tell a superseded process key from an unknown one). */
const KEPT_UUIDS = 8;

/** The mutable state of an app, written by its lifecycle only. */
export interface AppFields {
  def: AppDefinition;
  state: AppState;
  process: RunningProcess | undefined;
  readonly runtime: Runtime;
  /** Non-periodic apps: whether the app should be running (cleared by a standby exit). */
  wantRun: boolean;
  /** Present for a transient app (run / syncrun). */
  transient: Transient | undefined;
  /** Result of the last health_check_cmd run while running; undefined = use liveness. */
  checkedHealth: 0 | 1 | undefined;
  /** Why the last process was stopped on purpose; undefined when it exited on its own. */
  lastStop: StopIntent | undefined;
  /** Last published health. */
  health: 0 | 1;
  /** The unmet `depends_on` names while the state is `waiting`. */
  waitingFor: string[] | undefined;
  /** Last seen process exit was abnormal (non-zero, signal, spawn failure, unknown). */
  crashed: boolean;
  /** Restart backoff (restart-policy.ts). */
  crash: CrashState;
}

export class AppRecord {
  protected readonly f: AppFields;
  protected readonly host: LifecycleHost;

  constructor(def: AppDefinition, host: LifecycleHost) {
    this.host = host;
    this.f = {
      def,
      state: 'stopped',
      process: undefined,
      runtime: {
        starts: 0,
        lastStartAt: undefined,
        lastExitAt: undefined,
        returnCode: undefined,
        lastError: undefined,
        uuids: [],
      },
      wantRun: true,
      transient: undefined,
      checkedHealth: undefined,
      lastStop: undefined,
      health: 0,
      waitingFor: undefined,
      crashed: false,
      crash: INITIAL_CRASH_STATE,
    };
  }

  get name(): string {
    return this.f.def.name;
  }

  get def(): AppDefinition {
    return this.f.def;
  }

  get state(): AppState {
    return this.f.state;
  }

  /** The process running now (spawned, re-attached or adopted); undefined when none. */
  get process(): RunningProcess | undefined {
    return this.f.process;
  }

  get runtime(): RuntimeView {
    return this.f.runtime;
  }

  /** Non-periodic apps: whether the app should be running (cleared by a standby exit). */
  get wantRun(): boolean {
    return this.f.wantRun;
  }

  /** Present for a transient app (run / syncrun). */
  get transient(): Readonly<Transient> | undefined {
    return this.f.transient;
  }

  /** Why the last process was stopped on purpose; undefined when it exited on its own. */
  get lastStop(): StopIntent | undefined {
    return this.f.lastStop;
  }

  /** The unmet `depends_on` names while the state is `waiting`. */
  get waitingFor(): readonly string[] | undefined {
    return this.f.waitingFor;
  }

  /** The last exit was abnormal (liveness health). */
  get crashed(): boolean {
    return this.f.crashed;
  }

  /**
   * A new definition for this app (a replacement, or the same process's definition echoed back):
   * it is no longer transient. The caller stops the old process first when one must not survive.
   */
  replace(def: AppDefinition): void {
    this.f.def = def;
    this.f.transient = undefined;
  }

  /** The definition with `enabled` changed (enable, disable, or their undo); returns it. */
  setEnabled(enabled: boolean): AppDefinition {
    this.f.def = { ...this.f.def, enabled };
    return this.f.def;
  }

  /** A transient app (run / syncrun; or restored from the snapshot): runs once, then is removed. */
  markTransient(transient: Transient): void {
    this.f.transient = transient;
  }

  /** A health_check_cmd result for the running process: HEALTH is published when health changed. */
  reportHealth(health: 0 | 1): void {
    this.f.checkedHealth = health;
    this.refreshHealth();
  }

  /** Health: the check result while running with a health_check_cmd, else liveness. */
  computeHealth(): 0 | 1 {
    const { state, def, checkedHealth } = this.f;
    if (state === 'running' && def.health_check_cmd !== undefined && checkedHealth !== undefined) {
      return checkedHealth;
    }
    if (state === 'disabled' || state === 'removed') return 0;
    // A system application that is not running is down: it always should be.
    if (def.system && state !== 'running' && state !== 'starting') return 1;
    // "Should be running but is not": waiting to restart after a crash, or left down by a crash.
    if (state === 'backoff') return 1;
    if ((state === 'stopped' || state === 'scheduled') && this.f.crashed && this.f.transient === undefined)
      return 1;
    return 0;
  }

  /** Re-evaluate health and publish HEALTH when it changed. */
  refreshHealth(): void {
    const health = this.computeHealth();
    if (health === this.f.health || this.f.state === 'removed') return;
    const previousHealth = this.f.health;
    this.f.health = health;
    this.host.emit({ type: 'HEALTH', app: this.name, health, previousHealth });
  }

  /** Restore runtime fields from the snapshot. */
  restoreRuntime(runtime: Runtime, wantRun: boolean, crashed: boolean): void {
    Object.assign(this.f.runtime, runtime);
    this.f.wantRun = wantRun || this.f.def.system; // an older daemon's "left down" never holds for them
    this.f.crashed = crashed;
  }

  /** The app was (re)configured or enabled: forget crash history and run again. */
  resetForRun(): void {
    this.f.wantRun = true;
    this.f.crash = INITIAL_CRASH_STATE;
    this.f.crashed = false;
  }

  /** A start: its uuid first among the kept ones, one more start, when. */
  protected recordStart(processUuid: string, at: number): void {
    const runtime = this.f.runtime;
    runtime.uuids = [processUuid, ...runtime.uuids].slice(0, KEPT_UUIDS);
    runtime.starts++;
    runtime.lastStartAt = at;
  }
}
