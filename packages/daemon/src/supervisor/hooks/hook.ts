// A lifecycle hook: one concern (environment, execution user, output, cgroups, health, snapshot,
// adopted processes) that reacts to the transitions of every app, in the model of Nomad's task
// runner hooks. Each implements only the phases it cares about; hooks/runner.ts calls them in the
// order of its list, and the lifecycle (lifecycle.ts) stays free of every concern but its states.
import type { AppLifecycle, PreparedSpawn, RunningProcess } from '../lifecycle.ts';

/** What the prestart hooks fill in for a spawn (each adds its part). */
export interface SpawnPreparation extends PreparedSpawn {
  readonly processUuid: string;
}

export interface LifecycleHook {
  /**
   * Before a spawn: add to the request (environment, user, output fd, cgroups). Throwing fails the
   * start (recorded as a spawn failure, `cannot start: <message>`); hooks later in the list do not run.
   */
  prestart?(app: AppLifecycle, spawn: SpawnPreparation): void;
  /** Right after a process started: spawned, or adopted by the definition's `pid`. */
  poststart?(app: AppLifecycle, process: RunningProcess): void;
  /** Why the process ended when svc knows better than its exit code (the first answer counts). */
  exitError?(app: AppLifecycle, process: RunningProcess): string | undefined;
  /** After an exit was recorded and EXIT published. */
  exited?(app: AppLifecycle, process: RunningProcess, exitCode: number | undefined): void;
  /** Runtime state changed in a way the snapshot should capture. */
  changed?(app: AppLifecycle): void;
  /** The app got a new definition (register over it, adoption); before its next start. */
  replaced?(app: AppLifecycle): void;
  /** The app was removed (its process stopped, REMOVED published). */
  removed?(app: AppLifecycle): void;
  /** Daemon shutdown: stop timers and checks; processes keep running. */
  detach?(): void;
}
