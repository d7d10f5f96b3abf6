// The common shape of every process manager the benchmarks compare.
export type ManagerKind = 'floor' | 'svc' | 'pm2' | 'supervisord';

export const MANAGER_KINDS: readonly ManagerKind[] = ['floor', 'svc', 'pm2', 'supervisord'];

export interface AppSpec {
  name: string;
  /** argv of the long-running command; never through a shell unless argv says so. */
  argv: string[];
  /** Restart when the process exits with a failure (crash benchmark). */
  restart: boolean;
}

export interface Timed<T> {
  value: T;
  /** Measured inside the manager's own process (the floor); undefined = time it at the client. */
  innerMs?: number;
}

export interface Manager {
  readonly kind: ManagerKind;
  readonly version: string;
  /** Pid of the process whose RSS counts as the manager's. */
  readonly pid: number;
  /** Other processes of the manager whose RSS counts too (svc: svc-spawner, which holds the apps). */
  helperPids?(): number[];
  /** Untimed preparation before `start` (supervisord: include file + reloadConfig + addProcessGroup). */
  prepare(specs: readonly AppSpec[]): Promise<void>;
  /** The timed call: resolves once the manager reports the new process started. */
  start(spec: AppSpec): Promise<Timed<void>>;
  /** Untimed, after `start`: the pid of the app's current process (0 when none). */
  pidOf(name: string): Promise<number>;
  /** The timed call: resolves once the manager reports the process stopped (SIGTERM). */
  stop(name: string): Promise<Timed<void>>;
  /** Untimed: forget the app and kill whatever is left of it. */
  remove(name: string): Promise<void>;
  /** Stop the manager and everything it started. */
  close(): Promise<void>;
}

/** Quote argv for a manager that takes one command line (svc, supervisord): POSIX single quotes. */
export function commandLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_./=:-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
