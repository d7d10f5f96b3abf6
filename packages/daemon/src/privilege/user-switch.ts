// The privilege boundary for every process svcd starts itself on a caller's behalf (the in-process
// runner, health checks, file transfers; svc-spawner's children cross the same boundary in the
// spawner): docs/security.md, "The privilege boundary".
//
// When the process must run as another OS user, svcd never execs anything as root with what the
// caller sent. It starts `svc-spawner exec <request-fd> <status-fd>` with an EMPTY environment and
// `/` as working directory, and hands it the command, working directory, environment and user in
// one SPAWN frame on a pipe (never in argv: secret_env would show in process listings). The helper
// switches groups, gid and uid, then enters the working directory as the user, then execs with the
// caller's environment (become_and_exec in packages/spawner/src/svc-spawner.c, the same code the
// spawner's own children run). So LD_PRELOAD, a working_dir only root may enter, or a shell
// variable take effect only once the process is the user. A failure before exec (user, chdir,
// exec) comes back on the status pipe as (stage, errno), like the spawner's SPAWN_FAILED.
//
// Without a switch (the execution user is the daemon's own user) the process is spawned directly:
// the caller then acts as the daemon's user by definition (docs/security.md, administrator-
// equivalent permissions).
import { spawn, type ChildProcess, type StdioNull, type StdioPipe } from 'node:child_process';
import type { Writable } from 'node:stream';
import { decodeExecStatus, encodeSpawn } from '../supervisor/spawner/frames.ts';
import { defaultCwd, needsSwitch, type OsIdentity } from './os-user.ts';

/** Why a process never ran: the helper's (stage, errno), or Node's spawn error. */
export type StartFailure =
  | { kind: 'helper'; stage: number; errno: number }
  | { kind: 'spawn'; error: NodeJS.ErrnoException };

export interface SpawnAsRequest {
  file: string;
  args: readonly string[];
  /** undefined: the user's home (`/` when it has none); the daemon's own cwd without a user. */
  cwd: string | undefined;
  /** The complete environment of the process. */
  env: Readonly<Record<string, string>>;
  /** stdin, stdout, stderr and any further descriptors the process gets (by index). */
  stdio: ReadonlyArray<StdioNull | StdioPipe | number>;
  /** Its own session and process group (and not waited for by the daemon's event loop). */
  detached: boolean;
}

export interface SpawnedAs {
  readonly child: ChildProcess;
  /**
   * Settles once the target program runs (undefined) or never will (why). Always settles before
   * or with the child's 'close'.
   */
  readonly started: Promise<StartFailure | undefined>;
}

export class UserSwitch {
  /** The svc-spawner binary whose `exec` mode switches users; undefined: switching is refused. */
  readonly #helper: string | undefined;
  /** Why there is no helper (the spawner could not be built), for the refusal's message. */
  readonly #missing: string;

  constructor(helper: string | undefined, missing = 'svc-spawner is not built') {
    this.#helper = helper;
    this.#missing = missing;
  }

  /**
   * Why `user` cannot be switched to, or undefined when it can (or needs no switch). Checked
   * before a spawn so that the refusal is a clear message, never a process run as the wrong user.
   */
  refusal(user: OsIdentity | undefined): string | undefined {
    if (!needsSwitch(user)) return undefined;
    if (process.getuid?.() !== 0) return `svcd does not run as root, so it cannot run processes as ${user.user}`;
    if (this.#helper === undefined) return `cannot run processes as ${user.user}: ${this.#missing}`;
    return undefined;
  }

  /** Start `request` as `user` (undefined = the daemon's user). Throws what Node's spawn throws synchronously. */
  spawn(user: OsIdentity | undefined, request: SpawnAsRequest): SpawnedAs {
    const refusal = this.refusal(user);
    if (refusal !== undefined) throw new Error(refusal);
    if (!needsSwitch(user)) return direct(user, request);
    const requestFd = Math.max(request.stdio.length, 3);
    const stdio: Array<StdioNull | StdioPipe | number> = [...request.stdio];
    while (stdio.length < requestFd) stdio.push('ignore');
    stdio.push('pipe', 'pipe');
    const frame = encodeSpawn(0, {
      tag: '',
      file: request.file,
      argv: [request.file, ...request.args],
      env: Object.entries(request.env).map(([k, v]) => `${k}=${v}`),
      cwd: request.cwd ?? defaultCwd(user),
      outputPath: '',
      stdin: undefined,
      user: { uid: user.uid, gid: user.gid, groups: user.groups },
      cgroupProcs: [],
    });
    const child = spawn(this.#helper as string, ['exec', String(requestFd), String(requestFd + 1)], {
      cwd: '/',
      env: {},
      detached: request.detached,
      stdio,
    });
    const requestPipe = child.stdio[requestFd] as Writable | null;
    requestPipe?.on('error', () => undefined); // the helper died first: reported on the status pipe
    requestPipe?.end(frame);
    return { child, started: statusOf(child, requestFd + 1) };
  }
}

function direct(user: OsIdentity | undefined, request: SpawnAsRequest): SpawnedAs {
  const child = spawn(request.file, [...request.args], {
    cwd: request.cwd ?? (user === undefined ? undefined : defaultCwd(user)),
    env: request.env,
    detached: request.detached,
    stdio: [...request.stdio],
  });
  const started = new Promise<StartFailure | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ kind: 'spawn', error }));
  });
  return { child, started };
}

/** The helper's verdict: 5 status bytes (stage, errno LE) = failed; EOF without them = exec'd. */
function statusOf(child: ChildProcess, statusFd: number): Promise<StartFailure | undefined> {
  return new Promise((resolve) => {
    const status = child.stdio[statusFd];
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ kind: 'spawn', error }));
    if (status === null || status === undefined) return;
    const chunks: Buffer[] = [];
    status.on('data', (chunk: Buffer) => chunks.push(chunk));
    status.on('error', () => undefined);
    status.once('close', () => {
      const failed = decodeExecStatus(Buffer.concat(chunks));
      resolve(failed === undefined ? undefined : { kind: 'helper', ...failed });
    });
  });
}
