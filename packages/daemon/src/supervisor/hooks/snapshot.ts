// work/.snapshot (snapshot.ts): what a new daemon needs to re-attach to processes that outlived
// this one. Written off the start path, at most once per 50 ms, after any change of an app's
// runtime state; collected here from every app.
import type { Logger } from '../../log/logger.ts';
import type { AppLifecycle, RunningProcess } from '../lifecycle.ts';
import type { OutputStore } from '../output-store.ts';
import { readProcStat } from '../proc-stats.ts';
import { SnapshotWriter, type SnapshotApp, type SnapshotData } from '../snapshot.ts';
import type { LifecycleHook } from './hook.ts';

export interface SnapshotHookOptions {
  file: string;
  apps: () => Iterable<AppLifecycle>;
  output: Pick<OutputStore, 'files'>;
  now: () => number;
  logger: Logger;
  /** /proc/<pid>/stat's start time (a seam for unit tests). */
  startTicks?: ((pid: number) => number | undefined) | undefined;
}

export class SnapshotHook implements LifecycleHook {
  readonly writer: SnapshotWriter;
  readonly #options: SnapshotHookOptions;
  readonly #startTicks: (pid: number) => number | undefined;
  #detached = false;

  constructor(options: SnapshotHookOptions) {
    this.#options = options;
    this.#startTicks = options.startTicks ?? ((pid) => readProcStat(pid)?.startTicks);
    this.writer = new SnapshotWriter(options.file, () => this.collect(), options.logger);
  }

  /**
   * The start time of a running process, read from /proc on first need for a child we spawned:
   * off the start path (0.1-0.3 ms of synchronous /proc read per start), mostly by the next
   * snapshot write. The child is not reaped before its exit clears `app.process` (same turn), so
   * its pid cannot have been reused in between; after `detach` exits are no longer recorded, so
   * nothing is read any more (detach reads every running child first).
   */
  startTicksOf(p: RunningProcess): number {
    if (p.startTicks === 0 && !p.adopted && !this.#detached) p.startTicks = this.#startTicks(p.pid) ?? 0;
    return p.startTicks;
  }

  collect(): SnapshotData {
    const processes: SnapshotData['processes'] = [];
    const apps: Record<string, SnapshotApp> = {};
    for (const app of this.#options.apps()) {
      const p = app.process;
      if (p !== undefined && this.startTicksOf(p) > 0) {
        processes.push({
          app: app.name,
          pid: p.pid,
          startTicks: p.startTicks,
          processUuid: p.processUuid,
          startedAt: p.startedAt,
          ...(p.external === true ? { external: true } : {}),
          ...(p.signalPidOnly === true ? { signalPidOnly: true } : {}),
        });
      }
      apps[app.name] = {
        ...app.runtime,
        uuids: [...app.runtime.uuids],
        wantRun: app.wantRun,
        crashed: app.crashed,
        transient: app.transient === undefined ? undefined : { ...app.transient },
        outputs: this.#options.output.files(app.name).map((f) => ({ ...f })),
      };
    }
    return { version: 1, writtenAt: this.#options.now(), processes, apps };
  }

  poststart(): void {
    this.writer.schedule();
  }

  changed(): void {
    this.writer.schedule();
  }

  /** After this, start times are no longer read (see startTicksOf). */
  detach(): void {
    this.#detached = true;
  }
}
