// Spawning and signalling OS processes, behind a small port so the lifecycle machine can be unit
// tested with an in-memory twin (FakeRunner in lifecycle.test.ts).
//
// Contract of the real runner:
// - every child gets its own process group (`detached: true`) and is unref'd, so it survives the
//   daemon; stopping signals the whole group (`kill(-pid)`).
// - stdout and stderr are one file descriptor opened O_APPEND by the caller and handed to the
//   child as-is: the daemon never relays bytes, so nothing is lost or duplicated and capture
//   continues while the daemon is down.
// - `metadata` is written to stdin, then stdin is closed; without metadata stdin is /dev/null.
// - a spawn failure (ENOENT, EACCES, bad cwd) never throws: it is reported through `onExit` with
//   `spawnError` set and a shell-like exit code (127 not found, 126 not executable, 1 otherwise).
import { constants } from 'node:os';
import type { OsIdentity } from '../privilege/os-user.ts';
import { signalGroup, signalProcess } from '../privilege/signals.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import { describeSpawnFailure } from './spawner/frames.ts';

export interface SpawnRequest {
  command: string;
  /** Run through `/bin/sh -c <command>`; otherwise split with a quote-aware splitter, no shell. */
  shell: boolean;
  /** `session_login`: run through a login shell (`/bin/sh -l -c`), which reads the user's profile. */
  login?: boolean;
  cwd: string | undefined;
  /** The complete environment of the child. */
  env: Record<string, string>;
  /** Written to stdin, then stdin is closed; undefined = stdin is /dev/null. */
  stdin: string | undefined;
  /** File descriptor used for both stdout and stderr. The caller closes it after spawn returns. */
  outputFd: number;
  /**
   * Run as this OS user (uid, gid, supplementary groups; the caller puts HOME/USER in `env`);
   * undefined = the daemon's user. Without `cwd` the child starts in the user's home.
   */
  user?: OsIdentity | undefined;
  /** Which process this is (the native spawner keeps it with the process, for the next daemon). */
  identity?: { app: string; processUuid: string } | undefined;
  /**
   * cgroup.procs files the process must be in (resource_limit). A runner that `placesInCgroups`
   * writes the child into them before exec; otherwise the caller moves the pid after spawn.
   */
  cgroupProcs?: readonly string[] | undefined;
}

export interface ExitInfo {
  /**
   * Exit status, or minus the signal number when killed by a signal; undefined when it cannot be
   * known (the native spawner holding the process died, so its exit was polled: `spawnError` says so).
   */
  exitCode: number | undefined;
  /** Set when the process never started. */
  spawnError: string | undefined;
  /**
   * When it exited (epoch ms), when the runner knows better than "now": svc-spawner reaped it,
   * possibly while no daemon ran.
   */
  exitedAt?: number | undefined;
}

export interface SpawnedProcess {
  /** 0 when spawning failed (then `onExit` fires soon with spawnError). */
  readonly pid: number;
  /** Called exactly once. */
  onExit(callback: (info: ExitInfo) => void): void;
}

/** A process the native spawner held when this daemon connected (started by an earlier daemon). */
export interface HeldProcess {
  app: string;
  processUuid: string;
  pid: number;
  /** undefined while it runs; its real exit code once it ended (while no daemon was there, maybe). */
  exitCode: number | undefined;
}

export interface ProcessRunner {
  /** `native`: the spawner (spawner/spawner-runner.ts); `inprocess`: Node's child_process. */
  readonly kind: 'native' | 'inprocess';
  /** The child writes itself into `cgroupProcs` before exec (else the caller moves it after spawn). */
  readonly placesInCgroups: boolean;
  spawn(request: SpawnRequest): SpawnedProcess;
  /** Signal a whole process group; returns false when it no longer exists. */
  killGroup(pid: number, signal: NodeJS.Signals): boolean;
  /** Signal one process (an adopted process that does not lead a group); false when gone. */
  kill(pid: number, signal: NodeJS.Signals): boolean;
  /** Processes held from before this daemon and not claimed yet (native spawner only). */
  held?(): HeldProcess[];
  /** Take over a held process: its exit (already past, or to come) is reported through `onExit`. */
  claim?(processUuid: string): SpawnedProcess | undefined;
  /**
   * Start-up is over: held processes nobody claimed are not this daemon's to report. Their exits
   * (now or later) are acknowledged and forgotten.
   */
  settle?(): void;
  /** Daemon shutdown: let go of the spawner without acknowledging anything (processes keep running). */
  close?(): void;
}

/** The program and arguments of a request (shell, login shell, or split), before any user switch. */
export function commandOf(request: SpawnRequest): { file: string; args: string[] } {
  if (request.shell || request.login === true) {
    return {
      file: '/bin/sh',
      args: request.login === true ? ['-l', '-c', request.command] : ['-c', request.command],
    };
  }
  const argv = splitCommandLine(request.command);
  if (argv.length === 0) throw new Error('empty command');
  return { file: argv[0] as string, args: argv.slice(1) };
}

/** Split a command line into argv: whitespace separates, '…' is literal, "…" honours \" \\ \$ \`, \ escapes. */
export function splitCommandLine(line: string): string[] {
  const args: string[] = [];
  let current = '';
  let inArg = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else current += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1] as string))
        current += line[++i];
      else current += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inArg = true;
    } else if (c === '\\' && i + 1 < line.length) {
      current += line[++i];
      inArg = true;
    } else if (/\s/.test(c)) {
      if (inArg) args.push(current);
      current = '';
      inArg = false;
    } else {
      current += c;
      inArg = true;
    }
  }
  if (quote !== undefined) throw new Error(`unterminated ${quote} quote in command`);
  if (inArg) args.push(current);
  return args;
}

export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  if (signal !== null) return -(constants.signals[signal] ?? 0);
  return -1;
}

/** The shell-like exit code of a spawn error: 127 not found, 126 not executable, 1 otherwise. */
export function spawnErrorCode(error: { code?: string | undefined }): number {
  if (error.code === 'ENOENT') return 127;
  if (error.code === 'EACCES' || error.code === 'ENOEXEC') return 126;
  return 1;
}

export function createProcessRunner(users: UserSwitch): ProcessRunner {
  return {
    kind: 'inprocess',
    placesInCgroups: false,
    spawn(request) {
      let file: string;
      let args: string[];
      try {
        ({ file, args } = commandOf(request));
      } catch (error) {
        return failed(`cannot parse command: ${(error as Error).message}`, 1);
      }
      const refusal = users.refusal(request.user);
      if (refusal !== undefined) return failed(`cannot start: ${refusal}`, 1);
      let exited: ExitInfo | undefined;
      let listener: ((info: ExitInfo) => void) | undefined;
      const finish = (info: ExitInfo): void => {
        if (exited !== undefined) return;
        exited = info;
        listener?.(info);
      };
      let spawned;
      try {
        spawned = users.spawn(request.user, {
          file,
          args,
          cwd: request.cwd,
          env: request.env,
          detached: true,
          stdio: [request.stdin === undefined ? 'ignore' : 'pipe', request.outputFd, request.outputFd],
        });
      } catch (error) {
        // Synchronous throws: invalid arguments (e.g. a NUL byte in env), EAGAIN/EMFILE.
        return failed(`spawn failed: ${(error as Error).message}`, 1);
      }
      const { child, started } = spawned;
      // The exit is reported once the start's verdict is known: a process that never ran (the
      // helper's user switch, chdir or exec failed) is a spawn failure, not an exit.
      child.on('exit', (code, signal) => {
        void started.then((failure) => {
          if (failure === undefined) finish({ exitCode: exitCodeOf(code, signal), spawnError: undefined });
        });
      });
      void started.then((failure) => {
        if (failure === undefined) return;
        if (failure.kind === 'helper') {
          const { message, exitCode } = describeSpawnFailure(failure.stage, failure.errno, file, request.cwd);
          finish({ exitCode, spawnError: message });
        } else if (child.pid === undefined) {
          const where =
            failure.error.code === 'ENOENT' && request.cwd !== undefined
              ? ` (command or working_dir ${request.cwd})`
              : '';
          finish({
            exitCode: spawnErrorCode(failure.error),
            spawnError: `spawn failed: ${failure.error.message}${where}`,
          });
        }
      });
      if (request.stdin !== undefined && child.stdin !== null) {
        // The child may exit without reading: EPIPE is not an error of the daemon.
        child.stdin.on('error', () => undefined);
        child.stdin.end(request.stdin);
      }
      child.unref();
      return {
        pid: child.pid ?? 0,
        onExit(callback) {
          listener = callback;
          if (exited !== undefined) callback(exited);
        },
      };
    },
    killGroup: signalGroup,
    kill: signalProcess,
  };
}

/** A spawn that failed before any process existed: `onExit` reports it from the event loop. */
export function failed(message: string, exitCode: number): SpawnedProcess {
  return {
    pid: 0,
    onExit(callback) {
      queueMicrotask(() => callback({ exitCode, spawnError: message }));
    },
  };
}
