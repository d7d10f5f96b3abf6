// Exits nobody can report any more: the processes of a spawner that died (kill -9) were reparented,
// so their ends are noticed by polling /proc (the pid gone, or its start time changed), with the
// exit code unknown.
import { isSameProcess, readProcStat } from '../proc-stats.ts';
import type { ExitInfo, SpawnedProcess } from '../process-runner.ts';

export const LOST_EXIT_ERROR = 'exit code unavailable: svc-spawner, which held the process, died';

export class LostExitPoller {
  readonly #pollMs: number;
  /** Processes whose spawner died, by pid: their exits are polled. */
  readonly #polled = new Map<number, { startTicks: number; deliver: (info: ExitInfo) => void }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(pollMs: number) {
    this.#pollMs = pollMs;
  }

  /** Watch a process nobody can report the exit of any more (its spawner died). */
  watch(pid: number, report: (info: ExitInfo) => void): void {
    const stat = readProcStat(pid);
    if (stat === undefined || stat.state === 'Z') {
      queueMicrotask(() => report({ exitCode: undefined, spawnError: LOST_EXIT_ERROR }));
      return;
    }
    this.#polled.set(pid, { startTicks: stat.startTicks, deliver: report });
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#poll(), this.#pollMs);
      this.#timer.unref();
    }
  }

  /** A process whose spawn reply was lost with its spawner: found in /proc, its exit polled. */
  process(pid: number): SpawnedProcess {
    let listener: ((info: ExitInfo) => void) | undefined;
    let exit: ExitInfo | undefined;
    this.watch(pid, (info) => {
      exit = info;
      listener?.(info);
    });
    return {
      pid,
      onExit(callback) {
        listener = callback;
        if (exit !== undefined) callback(exit);
      },
    };
  }

  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #poll(): void {
    for (const [pid, entry] of this.#polled) {
      if (!isSameProcess(pid, entry.startTicks)) {
        this.#polled.delete(pid);
        entry.deliver({ exitCode: undefined, spawnError: LOST_EXIT_ERROR });
      }
    }
    if (this.#polled.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
