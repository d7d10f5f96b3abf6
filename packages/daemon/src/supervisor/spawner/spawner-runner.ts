// The ProcessRunner backed by svc-spawner (packages/spawner): spawns, signals and exits go through
// the spawner, which owns the processes, reaps them and keeps each exit until svcd acknowledges it.
//
// - spawn: one synchronous SPAWN round trip (the spawner forks, the child execs, the reply carries
//   the pid or why it failed, mapped to the in-process runner's codes and messages).
// - exit: the spawner's EXIT event; acknowledged (ACK) only after `beforeAcknowledge` (the daemon's
//   snapshot write that records it), so an exit is never lost between spawner and svcd.
// - signals to a process the spawner holds go through it: it signals only a process it has not
//   reaped, so a pid (or group id) can never have been reused under the signal.
// - held processes (started by an earlier daemon): `held()` lists them, `claim()` takes one over
//   with its real exit code, `settle()` acknowledges what nobody claimed.
// - the spawner dies (kill -9): the processes it held are reparented; their exits can then only be
//   polled (exit code unknown, `spawnError` says why). A new spawner is started for later spawns;
//   until it answers, spawns run in-process. A spawn whose reply was lost is looked for in /proc by
//   its process uuid before anything is started again.
import { writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import type { Logger } from '../../log/logger.ts';
import { defaultCwd } from '../../privilege/os-user.ts';
import { scanClaimingProcesses } from '../orphans.ts';
import {
  commandOf,
  failed,
  type ExitInfo,
  type HeldProcess,
  type ProcessRunner,
  type SpawnedProcess,
  type SpawnRequest,
} from '../process-runner.ts';
import { SpawnerGone, type ExitEvent, type SpawnerConnection } from './connection.ts';
import { describeSpawnFailure, encodeAck, encodeSignal, encodeSpawn, parseTag } from './frames.ts';
import { LostExitPoller } from './lost-exits.ts';

export { LOST_EXIT_ERROR } from './lost-exits.ts';

export interface SpawnerRunnerOptions {
  /** The first connection (already open). */
  connection: SpawnerConnection;
  /** Connect to a new spawner (started when none listens); used after the spawner died. */
  reconnect: () => Promise<SpawnerConnection>;
  /** Where spawns go while no spawner answers. */
  inProcess: ProcessRunner;
  /** Resolves once the exits reported so far are durable on svcd's side (the snapshot). */
  beforeAcknowledge: () => Promise<void>;
  logger: Logger;
  /** Poll period of processes whose spawner died (default 250 ms). */
  pollMs?: number;
}

interface Tracked {
  id: number;
  pid: number;
  processUuid: string;
  app: string;
  exit: ExitInfo | undefined;
  listener: ((info: ExitInfo) => void) | undefined;
  /** Claimed by this daemon (spawned by it, or a held process taken over). */
  claimed: boolean;
}

/** How long a spawn whose spawner died waits before looking for its process in /proc. */
const LOST_SPAWN_GRACE_MS = 100;

export interface SpawnerRunner extends ProcessRunner {
  readonly kind: 'native';
  /** The current spawner's pid (0 while none answers). */
  spawnerPid(): number;
}

export function createSpawnerRunner(options: SpawnerRunnerOptions): SpawnerRunner {
  return new NativeSpawnerRunner(options);
}

/** In-process spawns still honour `cgroupProcs`: the pid is moved right after the spawn. */
function inProcessWithCgroups(inProcess: ProcessRunner, logger: Logger): ProcessRunner {
  return {
    ...inProcess,
    spawn(request) {
      const spawned = inProcess.spawn(request);
      for (const procs of request.cgroupProcs ?? []) {
        try {
          if (spawned.pid > 0) writeFileSync(procs, String(spawned.pid));
        } catch (error) {
          logger.warn('process not moved into its cgroup', { pid: spawned.pid, procs, error });
        }
      }
      return spawned;
    },
  };
}

/** The process of `processUuid` in /proc (a group leader carrying it), after a lost reply. */
function findSpawned(processUuid: string): number | undefined {
  return scanClaimingProcesses({ skip: () => false }).claims.find((c) => c.processUuid === processUuid)?.pid;
}

function spawnedOf(t: Tracked): SpawnedProcess {
  return {
    pid: t.pid,
    onExit(callback) {
      t.listener = callback;
      if (t.exit !== undefined) {
        const exit = t.exit;
        queueMicrotask(() => callback(exit));
      }
    },
  };
}

/**
 * The SPAWN frame of `request` (the request id is written in per send) and the program it runs,
 * or the failed process to return when it cannot be sent.
 */
function spawnFrameOf(
  request: SpawnRequest,
): { file: string; frame: (req: number) => Buffer } | { failure: SpawnedProcess } {
  let file: string;
  let args: string[];
  try {
    ({ file, args } = commandOf(request));
  } catch (error) {
    return { failure: failed(`cannot parse command: ${(error as Error).message}`, 1) };
  }
  const user = request.user;
  const switchUser =
    user !== undefined && (user.uid !== process.getuid?.() || user.gid !== process.getgid?.());
  if (switchUser && process.getuid?.() !== 0)
    return {
      failure: failed(
        `cannot start: svcd does not run as root, so it cannot run processes as ${user.user}`,
        1,
      ),
    };
  const cwd = request.cwd ?? (user === undefined ? process.cwd() : defaultCwd(user));
  const identity = request.identity;
  try {
    const spawnFrame = encodeSpawn(0, {
      tag: identity === undefined ? '' : `${identity.processUuid}:${identity.app}`,
      file,
      argv: [file, ...args],
      env: Object.entries(request.env).map(([k, v]) => `${k}=${v}`),
      cwd,
      outputPath: `/proc/${process.pid}/fd/${request.outputFd}`,
      stdin: request.stdin === undefined ? undefined : Buffer.from(request.stdin, 'utf8'),
      user: switchUser ? { uid: user.uid, gid: user.gid, groups: user.groups } : undefined,
      cgroupProcs: request.cgroupProcs ?? [],
    });
    const frame = (req: number): Buffer => {
      spawnFrame.writeUInt32LE(req, 5); // the request id follows the length and the type
      return spawnFrame;
    };
    return { file, frame };
  } catch (error) {
    // A NUL byte in the environment or the command, or an oversized request: what Node's spawn throws too.
    return { failure: failed(`spawn failed: ${(error as Error).message}`, 1) };
  }
}

class NativeSpawnerRunner implements SpawnerRunner {
  readonly kind = 'native';
  readonly placesInCgroups = true;
  readonly #options: SpawnerRunnerOptions;
  readonly #logger: Logger;
  readonly #inProcess: ProcessRunner;
  #connection: SpawnerConnection | undefined;
  #closed = false;
  #settled = false;
  #reconnecting = false;
  /** By spawner id, for the current connection. */
  readonly #byId = new Map<number, Tracked>();
  readonly #byPid = new Map<number, Tracked>();
  readonly #byUuid = new Map<string, Tracked>();
  readonly #lostExits: LostExitPoller;

  constructor(options: SpawnerRunnerOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.#inProcess = inProcessWithCgroups(options.inProcess, options.logger);
    this.#lostExits = new LostExitPoller(options.pollMs ?? 250);
    this.#attach(options.connection);
  }

  spawnerPid(): number {
    return this.#connection?.pid ?? 0;
  }

  spawn(request: SpawnRequest): SpawnedProcess {
    const via = this.#connection;
    if (via === undefined || this.#closed) return this.#inProcess.spawn(request);
    return this.#spawnNative(via, request);
  }

  killGroup(pid: number, sig: NodeJS.Signals): boolean {
    return this.#signal(pid, sig, true);
  }

  kill(pid: number, sig: NodeJS.Signals): boolean {
    return this.#signal(pid, sig, false);
  }

  held(): HeldProcess[] {
    return [...this.#byUuid.values()]
      .filter((t) => !t.claimed)
      .map((t) => ({ app: t.app, processUuid: t.processUuid, pid: t.pid, exitCode: t.exit?.exitCode }));
  }

  claim(processUuid: string): SpawnedProcess | undefined {
    const t = this.#byUuid.get(processUuid);
    if (t === undefined || t.claimed || this.#connection === undefined) return undefined;
    t.claimed = true;
    const via = this.#connection;
    const spawned = spawnedOf(t);
    if (t.exit !== undefined) this.#acknowledge(t, via);
    return spawned;
  }

  settle(): void {
    this.#settled = true;
    const connection = this.#connection;
    if (connection === undefined) return;
    for (const t of [...this.#byId.values()])
      if (!t.claimed && t.exit !== undefined) this.#deliver(t, connection);
  }

  close(): void {
    this.#closed = true;
    this.#lostExits.close();
    this.#connection?.close();
    this.#connection = undefined;
  }

  #forget(t: Tracked): void {
    this.#byId.delete(t.id);
    if (this.#byPid.get(t.pid) === t) this.#byPid.delete(t.pid);
    if (this.#byUuid.get(t.processUuid) === t) this.#byUuid.delete(t.processUuid);
  }

  #acknowledge(t: Tracked, via: SpawnerConnection): void {
    // After the turn in which the exit is recorded (listeners run from a microtask), so the write
    // awaited below is one that includes it.
    void new Promise((resolve) => setImmediate(resolve)).then(this.#options.beforeAcknowledge).then(
      () => {
        if (this.#closed || via !== this.#connection || via.closed) return;
        try {
          via.send((req) => encodeAck(req, t.id));
        } catch {
          // gone: the next daemon (or connection) gets it again from LIST
        }
        this.#forget(t);
      },
      (error: unknown) => this.#logger.error('exit not acknowledged to svc-spawner', { pid: t.pid, error }),
    );
  }

  #deliver(t: Tracked, via: SpawnerConnection): void {
    const exit = t.exit as ExitInfo;
    if (t.claimed) {
      const listener = t.listener;
      if (listener !== undefined) queueMicrotask(() => listener(exit));
      this.#acknowledge(t, via);
    } else if (this.#settled) {
      this.#logger.info('exit of a process of an earlier daemon that nobody claimed', {
        app: t.app,
        pid: t.pid,
        exitCode: exit.exitCode,
      });
      this.#acknowledge(t, via);
    }
  }

  #onExit(via: SpawnerConnection, event: ExitEvent): void {
    const t = this.#byId.get(event.id);
    if (t === undefined || t.exit !== undefined) return;
    t.exit = { exitCode: event.code, spawnError: undefined, exitedAt: event.exitedAt };
    this.#deliver(t, via);
  }

  #lost(via: SpawnerConnection, reason: string): void {
    if (via !== this.#connection) return;
    this.#connection = undefined;
    if (this.#closed) return;
    const running = [...this.#byId.values()].filter((t) => t.exit === undefined && t.claimed);
    this.#logger.warn(
      'svc-spawner is gone: its processes are polled (exit codes unknown); starting a new one',
      { reason, pid: via.pid, processes: running.length },
    );
    for (const t of running) {
      const listener = (info: ExitInfo): void => t.listener?.(info);
      this.#lostExits.watch(t.pid, listener);
    }
    this.#byId.clear();
    this.#byPid.clear();
    this.#byUuid.clear();
    void this.#reconnectLoop();
  }

  async #reconnectLoop(): Promise<void> {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    try {
      for (let attempt = 0; !this.#closed && this.#connection === undefined; attempt++) {
        try {
          const next = await this.#options.reconnect();
          if (this.#closed) {
            next.close();
            return;
          }
          this.#attach(next);
          this.#logger.info('svc-spawner started again', { pid: next.pid, held: next.held.length });
        } catch (error) {
          this.#logger.warn('svc-spawner could not be started again; spawning in-process meanwhile', {
            error,
            attempt,
          });
          await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 200 * 2 ** attempt)).unref());
        }
      }
    } finally {
      this.#reconnecting = false;
    }
  }

  #attach(next: SpawnerConnection): void {
    this.#connection = next;
    for (const entry of next.held) {
      const tag = parseTag(entry.tag);
      if (tag === undefined) continue;
      // A process this daemon already watches by poll (an earlier spawner's) is not in this list:
      // each spawner lists only what it spawned itself.
      const t: Tracked = {
        id: entry.id,
        pid: entry.pid,
        processUuid: tag.processUuid,
        app: tag.app,
        exit: entry.exited
          ? { exitCode: entry.code, spawnError: undefined, exitedAt: entry.exitedAt }
          : undefined,
        listener: undefined,
        claimed: false,
      };
      this.#byId.set(t.id, t);
      if (!entry.exited) this.#byPid.set(t.pid, t);
      this.#byUuid.set(t.processUuid, t);
      if (t.exit !== undefined && this.#settled) this.#deliver(t, next);
    }
    next.onExit((event) => this.#onExit(next, event));
    next.onClose((reason) => this.#lost(next, reason));
  }

  #spawnNative(via: SpawnerConnection, request: SpawnRequest): SpawnedProcess {
    const spawn = spawnFrameOf(request);
    if ('failure' in spawn) return spawn.failure;
    const identity = request.identity;
    let reply;
    try {
      reply = via.request(spawn.frame);
    } catch (error) {
      if (!(error instanceof SpawnerGone)) throw error;
      // The spawner died under this spawn: the process may exist (forked before the death). A child
      // that passed its parent check just before the death execs within microseconds; give it
      // LOST_SPAWN_GRACE_MS to show its environment in /proc before looking (a rare path).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, LOST_SPAWN_GRACE_MS);
      const pid = identity === undefined ? undefined : findSpawned(identity.processUuid);
      if (pid !== undefined) {
        this.#logger.warn('spawn reply lost with svc-spawner; the process was found in /proc (exit polled)', {
          pid,
        });
        return this.#lostExits.process(pid);
      }
      return this.#inProcess.spawn(request);
    }
    if (reply.type === 'spawnFailed') {
      const failure = describeSpawnFailure(reply.stage, reply.errno, spawn.file, request.cwd);
      return failed(failure.message, failure.exitCode);
    }
    if (reply.type !== 'spawned') return failed('spawn failed: unexpected reply from svc-spawner', 1);
    const t: Tracked = {
      id: reply.id,
      pid: reply.pid,
      processUuid: identity?.processUuid ?? '',
      app: identity?.app ?? '',
      exit: undefined,
      listener: undefined,
      claimed: true,
    };
    this.#byId.set(t.id, t);
    this.#byPid.set(t.pid, t);
    if (t.processUuid !== '') this.#byUuid.set(t.processUuid, t);
    return spawnedOf(t);
  }

  /** Signal through the spawner when it holds the process; false when it has exited. */
  #signal(pid: number, sig: NodeJS.Signals, group: boolean): boolean {
    const t = this.#byPid.get(pid);
    const via = this.#connection;
    const inProcess = this.#inProcess;
    if (t === undefined || via === undefined)
      return group ? inProcess.killGroup(pid, sig) : inProcess.kill(pid, sig);
    if (t.exit !== undefined) return false;
    try {
      via.send((req) => encodeSignal(req, t.id, group, constants.signals[sig]));
      return true;
    } catch {
      return group ? inProcess.killGroup(pid, sig) : inProcess.kill(pid, sig);
    }
  }
}
