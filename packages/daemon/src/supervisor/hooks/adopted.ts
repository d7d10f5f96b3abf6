// Adopted processes: not our children (re-attached from the snapshot or found by the orphan scan
// after a daemon restart, or adopted by the definition's `pid`), so their exit is found by one
// shared poll of /proc (kill-free: start time and zombie check) and their exit code is unknown.
// An external process (adopted by `pid`) is signalled alone and only through the ownership
// re-check of privilege/adoption.ts.
import type { Logger } from '../../log/logger.ts';
import {
  adoptionRefusal,
  readProcessFacts,
  type AdoptionRules,
  type ProcessFacts,
} from '../../privilege/adoption.ts';
import { signalProcess } from '../../privilege/signals.ts';
import type { AppLifecycle, RunningProcess } from '../lifecycle.ts';
import { isSameProcess } from '../proc-stats.ts';
import type { LifecycleHook } from './hook.ts';
import type { ExecutionUsers } from './identity.ts';

/** /proc and kill(2), as this hook uses them (seams for unit tests). */
export interface ProcessProbe {
  isSameProcess(pid: number, startTicks: number): boolean;
  readFacts(pid: number): ProcessFacts | undefined;
  signal(pid: number, signal: NodeJS.Signals): void;
}

const realProbe: ProcessProbe = {
  isSameProcess: (pid, startTicks) => isSameProcess(pid, startTicks),
  readFacts: (pid) => readProcessFacts(pid),
  signal: (pid, signal) => void signalProcess(pid, signal),
};

export interface AdoptedHookOptions {
  /** Period of the liveness poll (default 250 ms). */
  pollMs: number;
  users: ExecutionUsers;
  /** privilege/adoption.ts's rules for a caller uid (with svc's own processes protected). */
  rulesFor: (callerUid: number) => AdoptionRules;
  logger: Logger;
  probe?: ProcessProbe | undefined;
}

export class AdoptedHook implements LifecycleHook {
  readonly #options: AdoptedHookOptions;
  readonly #probe: ProcessProbe;
  readonly #adopted = new Set<AppLifecycle>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: AdoptedHookOptions) {
    this.#options = options;
    this.#probe = options.probe ?? realProbe;
  }

  /** Poll `app`'s adopted process until it is gone (then `adoptedExited`). */
  watch(app: AppLifecycle): void {
    this.#adopted.add(app);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.poll(), this.#options.pollMs);
      this.#timer.unref();
    }
  }

  /** Apps watched now (tests, diagnostics). */
  get watched(): number {
    return this.#adopted.size;
  }

  /** One round of the poll (the timer's). */
  poll(): void {
    for (const app of this.#adopted) {
      const p = app.process;
      if (p === undefined || !p.adopted) {
        this.#adopted.delete(app);
      } else if (!this.#probe.isSameProcess(p.pid, p.startTicks)) {
        this.#adopted.delete(app);
        app.adoptedExited();
      }
    }
    if (this.#adopted.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /**
   * Signal an external (adopted by `pid`) process, alone, if it is still the process adopted and
   * still may be (privilege/adoption.ts); one that may not is let go and reported as exited.
   */
  signal(app: AppLifecycle, p: RunningProcess, signal: NodeJS.Signals): void {
    const facts = this.#probe.readFacts(p.pid);
    if (facts === undefined || !this.#probe.isSameProcess(p.pid, p.startTicks)) return; // gone: the poll reports it
    const callerUid = this.#options.users.executionUid(app.def);
    const refusal =
      callerUid === undefined
        ? 'the execution user of the owner no longer exists'
        : adoptionRefusal(p.pid, facts, this.#options.rulesFor(callerUid));
    if (refusal === undefined) {
      this.#probe.signal(p.pid, signal);
      return;
    }
    // It may no longer be signalled for this owner (it exec'd something setuid, the owner's
    // user changed): let it go, as if it had exited, and say so.
    this.#options.logger.warn('adopted process released without a signal', {
      app: app.name,
      pid: p.pid,
      reason: refusal,
    });
    queueMicrotask(() => {
      if (app.process !== p) return;
      this.#adopted.delete(app);
      app.adoptedExited();
    });
  }

  exited(app: AppLifecycle, process: RunningProcess): void {
    if (process.adopted) this.#adopted.delete(app);
  }

  removed(app: AppLifecycle): void {
    this.#adopted.delete(app);
  }

  detach(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
