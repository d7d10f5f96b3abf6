// The hook runner: the LifecycleHost every AppLifecycle talks to. It runs the hooks of each phase
// in the order of their list (see supervisor.ts for the list and why that order) and forwards what
// is the registry's to decide (events, depends_on, removals) to it.
import type { AppLifecycle, Clock, LifecycleHost, PreparedSpawn, RunningProcess } from '../lifecycle.ts';
import type { ProcessRunner } from '../process-runner.ts';
import type { SupervisorEvent } from '../types.ts';
import type { LifecycleHook, SpawnPreparation } from './hook.ts';

export interface HookRunnerOptions {
  runner: ProcessRunner;
  clock: Clock;
  stopGraceMs: number;
  hooks: readonly LifecycleHook[];
  emit(event: SupervisorEvent): void;
  startBlocker: LifecycleHost['startBlocker'];
  requestRemoval(app: AppLifecycle): void;
  signalExternal: LifecycleHost['signalExternal'];
}

type Phase = keyof LifecycleHook;

export class HookRunner implements LifecycleHost {
  readonly runner: ProcessRunner;
  readonly clock: Clock;
  readonly stopGraceMs: number;
  readonly #options: HookRunnerOptions;
  /** Per phase, the hooks that implement it (the start path iterates no hook it does not need). */
  readonly #by = new Map<Phase, LifecycleHook[]>();

  constructor(options: HookRunnerOptions) {
    this.runner = options.runner;
    this.clock = options.clock;
    this.stopGraceMs = options.stopGraceMs;
    this.#options = options;
    const phases: Phase[] = [
      'prestart',
      'poststart',
      'exitError',
      'exited',
      'changed',
      'replaced',
      'removed',
      'detach',
    ];
    for (const phase of phases)
      this.#by.set(
        phase,
        options.hooks.filter((hook) => hook[phase] !== undefined),
      );
  }

  #hooks(phase: Phase): readonly LifecycleHook[] {
    return this.#by.get(phase) ?? [];
  }

  emit(event: SupervisorEvent): void {
    this.#options.emit(event);
  }

  startBlocker(app: AppLifecycle): ReturnType<LifecycleHost['startBlocker']> {
    return this.#options.startBlocker(app);
  }

  requestRemoval(app: AppLifecycle): void {
    this.#options.requestRemoval(app);
  }

  signalExternal(app: AppLifecycle, process: RunningProcess, signal: NodeJS.Signals): void {
    this.#options.signalExternal(app, process, signal);
  }

  prepareSpawn(app: AppLifecycle, processUuid: string): PreparedSpawn {
    const spawn: SpawnPreparation = { processUuid, env: {}, outputFd: -1 };
    for (const hook of this.#hooks('prestart')) hook.prestart?.(app, spawn);
    return spawn;
  }

  started(app: AppLifecycle, process: RunningProcess): void {
    for (const hook of this.#hooks('poststart')) hook.poststart?.(app, process);
  }

  exitError(app: AppLifecycle, process: RunningProcess): string | undefined {
    for (const hook of this.#hooks('exitError')) {
      const error = hook.exitError?.(app, process);
      if (error !== undefined) return error;
    }
    return undefined;
  }

  exited(app: AppLifecycle, process: RunningProcess, exitCode: number | undefined): void {
    for (const hook of this.#hooks('exited')) hook.exited?.(app, process, exitCode);
  }

  changed(app: AppLifecycle): void {
    for (const hook of this.#hooks('changed')) hook.changed?.(app);
  }

  replaced(app: AppLifecycle): void {
    for (const hook of this.#hooks('replaced')) hook.replaced?.(app);
  }

  removed(app: AppLifecycle): void {
    for (const hook of this.#hooks('removed')) hook.removed?.(app);
  }

  detach(): void {
    for (const hook of this.#hooks('detach')) hook.detach?.();
  }
}
