// Output capture (output-store.ts): each process writes its stdout and stderr itself into
// work/stdout/<name>.out, opened for it before its spawn; its exit is marked there so readers and
// long polls learn it; the files go with the app.
import { closeSync } from 'node:fs';
import type { AppLifecycle, RunningProcess } from '../lifecycle.ts';
import type { OutputStore } from '../output-store.ts';
import type { LifecycleHook, SpawnPreparation } from './hook.ts';

export type OutputFiles = Pick<OutputStore, 'openForProcess' | 'markExited' | 'remove'>;

export class OutputHook implements LifecycleHook {
  readonly #output: OutputFiles;

  constructor(output: OutputFiles) {
    this.#output = output;
  }

  prestart(app: AppLifecycle, spawn: SpawnPreparation): void {
    const fd = this.#output.openForProcess(app.name, spawn.processUuid, app.def.stdout_backup_count);
    // The child holds its own copy of the fd once spawned; ours is closed right after.
    queueMicrotask(() => closeSync(fd));
    spawn.outputFd = fd;
  }

  poststart(app: AppLifecycle, process: RunningProcess): void {
    if (process.external === true) {
      // No output to capture, but a (empty) file per process keeps reads by process_uuid and
      // long polls (woken at exit) uniform.
      closeSync(this.#output.openForProcess(app.name, process.processUuid, app.def.stdout_backup_count));
    }
  }

  exited(app: AppLifecycle, process: RunningProcess, exitCode: number | undefined): void {
    // A process stopped by its app's removal has no exit to report (no EXIT, no X-Exit-Code):
    // the output goes with the app, and a long poll on it answers 404.
    if (app.lastStop !== 'remove') this.#output.markExited(app.name, process.processUuid, exitCode);
  }

  removed(app: AppLifecycle): void {
    this.#output.remove(app.name);
  }
}
