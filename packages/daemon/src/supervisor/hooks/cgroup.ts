// resource_limit through cgroups (resource-limit.ts): the app's cgroups are made before a spawn
// whose child writes itself into them (svc-spawner), else the pid is moved in right after the
// spawn; an OOM kill is reported as the exit's reason; the cgroups go with the process.
import type { AppLifecycle, RunningProcess } from '../lifecycle.ts';
import type { ProcessRunner } from '../process-runner.ts';
import type { ResourceLimiter } from '../resource-limit.ts';
import type { LifecycleHook, SpawnPreparation } from './hook.ts';

export class CgroupHook implements LifecycleHook {
  readonly #limiter: ResourceLimiter;
  readonly #runner: Pick<ProcessRunner, 'placesInCgroups'>;
  /** resource_limit_status of each app as last applied (the app view). */
  readonly #status = new Map<string, string>();
  /** Apps whose process being spawned writes itself into its cgroups (prestart → poststart). */
  readonly #placed = new Set<string>();

  /** `runner.placesInCgroups`: the process runner writes the child into its cgroups before exec. */
  constructor(limiter: ResourceLimiter, runner: Pick<ProcessRunner, 'placesInCgroups'>) {
    this.#limiter = limiter;
    this.#runner = runner;
  }

  get limiter(): ResourceLimiter {
    return this.#limiter;
  }

  /** resource_limit_status per app, as last applied. */
  get status(): ReadonlyMap<string, string> {
    return this.#status;
  }

  prestart(app: AppLifecycle, spawn: SpawnPreparation): void {
    // svc-spawner's child writes itself into the app's cgroups before exec (the process never
    // runs a single instruction outside its limits); in-process, the pid is moved after spawn.
    const limit = app.def.resource_limit;
    this.#placed.delete(app.name);
    if (limit === undefined || !this.#runner.placesInCgroups || this.#limiter.version === undefined) return;
    const { status, procs } = this.#limiter.prepare(app.name, limit);
    this.#status.set(app.name, status);
    if (procs.length > 0) {
      this.#placed.add(app.name);
      spawn.cgroupProcs = procs;
    }
  }

  poststart(app: AppLifecycle, process: RunningProcess): void {
    if (this.#placed.delete(app.name)) {
      // already in its cgroups (svc-spawner's child wrote itself there before exec)
    } else if (app.def.resource_limit !== undefined) {
      this.#status.set(app.name, this.#limiter.apply(app.name, process.pid, app.def.resource_limit));
    }
  }

  exitError(app: AppLifecycle): string | undefined {
    return app.def.resource_limit === undefined ? undefined : this.#limiter.exitReason(app.name);
  }

  exited(app: AppLifecycle): void {
    this.#placed.delete(app.name);
    // The app's cgroups go with its process (re-created at the next start).
    if (app.def.resource_limit !== undefined && this.#limiter.version !== undefined)
      this.#limiter.release(app.name);
  }

  replaced(app: AppLifecycle): void {
    this.#status.delete(app.name);
  }

  removed(app: AppLifecycle): void {
    this.#limiter.release(app.name);
    this.#status.delete(app.name);
  }

  detach(): void {
    this.#limiter.close();
  }
}
