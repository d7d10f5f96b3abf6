// health_check_cmd: run through /bin/sh -c every `intervalMs` while the app's process runs, with a
// timeout; exit 0 = healthy (0), anything else (including the timeout) = unhealthy (1). Each check
// runs in its own process group, killed as a whole at the timeout (and after the check exits).
// One shared timer for all tracked apps (not one per app); a check still running when the next
// tick comes is not started twice. Apps without a command use liveness (lifecycle.ts).
import type { ChildProcess } from 'node:child_process';
import type { OsIdentity } from '../privilege/os-user.ts';
import { signalGroup } from '../privilege/signals.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';

export interface HealthTarget {
  readonly name: string;
  readonly command: string | undefined;
  readonly cwd: string | undefined;
  readonly env: Record<string, string>;
  /** The app's execution user: the check runs as it too. */
  readonly user?: OsIdentity | undefined;
  report(health: 0 | 1): void;
}

export function runHealthCommand(
  users: UserSwitch,
  command: string,
  options: {
    cwd: string | undefined;
    env: Record<string, string>;
    timeoutMs: number;
    user?: OsIdentity | undefined;
  },
): Promise<0 | 1> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (health: 0 | 1): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(health);
    };
    let child: ChildProcess;
    try {
      // Its own process group, so that the timeout kills everything the command started (a
      // `sleep` under `sh -c` would otherwise outlive the shell and pile up). As the app's
      // execution user, switched before the command, its working directory or its environment
      // apply (privilege/user-switch.ts).
      ({ child } = users.spawn(options.user, {
        file: '/bin/sh',
        args: ['-c', command],
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ['ignore', 'ignore', 'ignore'],
      }));
    } catch {
      resolve(1);
      return;
    }
    const timer = setTimeout(() => {
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      finish(1);
    }, options.timeoutMs);
    timer.unref();
    child.on('error', () => finish(1));
    child.on('exit', (code) => {
      // A helper that could not switch, enter the directory or exec exits 127: unhealthy too.
      finish(code === 0 ? 0 : 1);
      // Leftovers of a command that exited but left children in its group.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    });
    child.unref();
  });
}

export class HealthChecker {
  readonly #targets = new Map<string, HealthTarget>();
  readonly #running = new Set<string>();
  readonly #users: UserSwitch;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(users: UserSwitch, intervalMs: number, timeoutMs = Math.min(intervalMs, 5_000)) {
    this.#users = users;
    this.#intervalMs = intervalMs;
    this.#timeoutMs = timeoutMs;
  }

  /** Start checking (first check right away). */
  track(target: HealthTarget): void {
    if (target.command === undefined) return;
    this.#targets.set(target.name, target);
    this.#check(target);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
      this.#timer.unref();
    }
  }

  untrack(name: string): void {
    this.#targets.delete(name);
    if (this.#targets.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  close(): void {
    this.#targets.clear();
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #tick(): void {
    for (const target of this.#targets.values()) this.#check(target);
  }

  #check(target: HealthTarget): void {
    if (target.command === undefined || this.#running.has(target.name)) return;
    this.#running.add(target.name);
    void runHealthCommand(this.#users, target.command, {
      cwd: target.cwd,
      env: target.env,
      user: target.user,
      timeoutMs: this.#timeoutMs,
    }).then((health) => {
      this.#running.delete(target.name);
      // Only report for the target still tracked (not a stale check of a stopped process).
      if (this.#targets.get(target.name) === target) target.report(health);
    });
  }
}
