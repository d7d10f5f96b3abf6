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
import { isSameProcess, readProcStat } from '../proc-stats.ts';
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

export const LOST_EXIT_ERROR = 'exit code unavailable: svc-spawner, which held the process, died';

export interface SpawnerRunner extends ProcessRunner {
  readonly kind: 'native';
  /** The current spawner's pid (0 while none answers). */
  spawnerPid(): number;
}


export function createSpawnerRunner(options: SpawnerRunnerOptions): SpawnerRunner {
  const { logger } = options;
  /** In-process spawns still honour `cgroupProcs`: the pid is moved right after the spawn. */
  const inProcess: ProcessRunner = {
    ...options.inProcess,
    spawn(request) {
      const spawned = options.inProcess.spawn(request);
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
  let connection: SpawnerConnection | undefined;
  let closed = false;
  let settled = false;
  /** By spawner id, for the current connection. */
  const byId = new Map<number, Tracked>();
  const byPid = new Map<number, Tracked>();
  const byUuid = new Map<string, Tracked>();
  /** Processes whose spawner died: their exits are polled. */
  const polled = new Map<number, { startTicks: number; deliver: (info: ExitInfo) => void }>();
  let pollTimer: NodeJS.Timeout | undefined;

  const forget = (t: Tracked): void => {
    byId.delete(t.id);
    if (byPid.get(t.pid) === t) byPid.delete(t.pid);
    if (byUuid.get(t.processUuid) === t) byUuid.delete(t.processUuid);
  };

  const acknowledge = (t: Tracked, via: SpawnerConnection): void => {
    // After the turn in which the exit is recorded (listeners run from a microtask), so the write
    // awaited below is one that includes it.
    void new Promise((resolve) => setImmediate(resolve)).then(options.beforeAcknowledge).then(
      () => {
        if (closed || via !== connection || via.closed) return;
        try {
          via.send((req) => encodeAck(req, t.id));
        } catch {
          // gone: the next daemon (or connection) gets it again from LIST
        }
        forget(t);
      },
      (error: unknown) => logger.error('exit not acknowledged to svc-spawner', { pid: t.pid, error }),
    );
  };

  const deliver = (t: Tracked, via: SpawnerConnection): void => {
    const exit = t.exit as ExitInfo;
    if (t.claimed) {
      const listener = t.listener;
      if (listener !== undefined) queueMicrotask(() => listener(exit));
      acknowledge(t, via);
    } else if (settled) {
      logger.info('exit of a process of an earlier daemon that nobody claimed', {
        app: t.app,
        pid: t.pid,
        exitCode: exit.exitCode,
      });
      acknowledge(t, via);
    }
  };

  const onExit = (via: SpawnerConnection, event: ExitEvent): void => {
    const t = byId.get(event.id);
    if (t === undefined || t.exit !== undefined) return;
    t.exit = { exitCode: event.code, spawnError: undefined, exitedAt: event.exitedAt };
    deliver(t, via);
  };

  const poll = (): void => {
    for (const [pid, entry] of polled) {
      if (!isSameProcess(pid, entry.startTicks)) {
        polled.delete(pid);
        entry.deliver({ exitCode: undefined, spawnError: LOST_EXIT_ERROR });
      }
    }
    if (polled.size === 0 && pollTimer !== undefined) {
      clearInterval(pollTimer);
      pollTimer = undefined;
    }
  };

  /** Watch a process nobody can report the exit of any more (its spawner died). */
  const watch = (pid: number, report: (info: ExitInfo) => void): void => {
    const stat = readProcStat(pid);
    if (stat === undefined || stat.state === 'Z') {
      queueMicrotask(() => report({ exitCode: undefined, spawnError: LOST_EXIT_ERROR }));
      return;
    }
    polled.set(pid, { startTicks: stat.startTicks, deliver: report });
    if (pollTimer === undefined) {
      pollTimer = setInterval(poll, options.pollMs ?? 250);
      pollTimer.unref();
    }
  };

  const lost = (via: SpawnerConnection, reason: string): void => {
    if (via !== connection) return;
    connection = undefined;
    if (closed) return;
    const running = [...byId.values()].filter((t) => t.exit === undefined && t.claimed);
    logger.warn('svc-spawner is gone: its processes are polled (exit codes unknown); starting a new one', {
      reason,
      pid: via.pid,
      processes: running.length,
    });
    for (const t of running) {
      const listener = (info: ExitInfo): void => t.listener?.(info);
      watch(t.pid, listener);
    }
    byId.clear();
    byPid.clear();
    byUuid.clear();
    void reconnectLoop();
  };

  let reconnecting = false;
  const reconnectLoop = async (): Promise<void> => {
    if (reconnecting) return;
    reconnecting = true;
    try {
      for (let attempt = 0; !closed && connection === undefined; attempt++) {
        try {
          const next = await options.reconnect();
          if (closed) {
            next.close();
            return;
          }
          attach(next);
          logger.info('svc-spawner started again', { pid: next.pid, held: next.held.length });
        } catch (error) {
          logger.warn('svc-spawner could not be started again; spawning in-process meanwhile', {
            error,
            attempt,
          });
          await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 200 * 2 ** attempt)).unref());
        }
      }
    } finally {
      reconnecting = false;
    }
  };

  const attach = (next: SpawnerConnection): void => {
    connection = next;
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
      byId.set(t.id, t);
      if (!entry.exited) byPid.set(t.pid, t);
      byUuid.set(t.processUuid, t);
      if (t.exit !== undefined && settled) deliver(t, next);
    }
    next.onExit((event) => onExit(next, event));
    next.onClose((reason) => lost(next, reason));
  };

  /** The process of `processUuid` in /proc (a group leader carrying it), after a lost reply. */
  const findSpawned = (processUuid: string): number | undefined =>
    scanClaimingProcesses({ skip: () => false }).claims.find((c) => c.processUuid === processUuid)?.pid;

  const tracked = (t: Tracked): SpawnedProcess => ({
    pid: t.pid,
    onExit(callback) {
      t.listener = callback;
      if (t.exit !== undefined) {
        const exit = t.exit;
        queueMicrotask(() => callback(exit));
      }
    },
  });

  /** A process whose spawn reply was lost with its spawner: found in /proc, its exit polled. */
  const polledProcess = (pid: number): SpawnedProcess => {
    let listener: ((info: ExitInfo) => void) | undefined;
    let exit: ExitInfo | undefined;
    watch(pid, (info) => {
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
  };

  const spawnNative = (via: SpawnerConnection, request: SpawnRequest): SpawnedProcess => {
    let file: string;
    let args: string[];
    try {
      ({ file, args } = commandOf(request));
    } catch (error) {
      return failed(`cannot parse command: ${(error as Error).message}`, 1);
    }
    const user = request.user;
    const switchUser =
      user !== undefined && (user.uid !== process.getuid?.() || user.gid !== process.getgid?.());
    if (switchUser && process.getuid?.() !== 0)
      return failed(`cannot start: svcd does not run as root, so it cannot run processes as ${user.user}`, 1);
    const cwd = request.cwd ?? (user === undefined ? process.cwd() : defaultCwd(user));
    const identity = request.identity;
    let frame: (req: number) => Buffer;
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
      frame = (req) => {
        spawnFrame.writeUInt32LE(req, 5); // the request id follows the length and the type
        return spawnFrame;
      };
    } catch (error) {
      // A NUL byte in the environment or the command, or an oversized request: what Node's spawn throws too.
      return failed(`spawn failed: ${(error as Error).message}`, 1);
    }
    let reply;
    try {
      reply = via.request(frame);
    } catch (error) {
      if (!(error instanceof SpawnerGone)) throw error;
      // The spawner died under this spawn: the process may exist (forked before the death). A child
      // that passed its parent check just before the death execs within microseconds; give it
      // LOST_SPAWN_GRACE_MS to show its environment in /proc before looking (a rare path).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, LOST_SPAWN_GRACE_MS);
      const pid = identity === undefined ? undefined : findSpawned(identity.processUuid);
      if (pid !== undefined) {
        logger.warn('spawn reply lost with svc-spawner; the process was found in /proc (exit polled)', {
          pid,
        });
        return polledProcess(pid);
      }
      return inProcess.spawn(request);
    }
    if (reply.type === 'spawnFailed') {
      const failure = describeSpawnFailure(reply.stage, reply.errno, file, request.cwd);
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
    byId.set(t.id, t);
    byPid.set(t.pid, t);
    if (t.processUuid !== '') byUuid.set(t.processUuid, t);
    return tracked(t);
  };

  /** Signal through the spawner when it holds the process; false when it has exited. */
  const signal = (pid: number, sig: NodeJS.Signals, group: boolean): boolean => {
    const t = byPid.get(pid);
    const via = connection;
    if (t === undefined || via === undefined)
      return group ? inProcess.killGroup(pid, sig) : inProcess.kill(pid, sig);
    if (t.exit !== undefined) return false;
    try {
      via.send((req) => encodeSignal(req, t.id, group, constants.signals[sig]));
      return true;
    } catch {
      return group ? inProcess.killGroup(pid, sig) : inProcess.kill(pid, sig);
    }
  };

  attach(options.connection);

  return {
    kind: 'native',
    placesInCgroups: true,
    spawnerPid: () => connection?.pid ?? 0,
    spawn(request) {
      const via = connection;
      if (via === undefined || closed) return inProcess.spawn(request);
      return spawnNative(via, request);
    },
    killGroup: (pid, sig) => signal(pid, sig, true),
    kill: (pid, sig) => signal(pid, sig, false),
    held(): HeldProcess[] {
      return [...byUuid.values()]
        .filter((t) => !t.claimed)
        .map((t) => ({ app: t.app, processUuid: t.processUuid, pid: t.pid, exitCode: t.exit?.exitCode }));
    },
    claim(processUuid) {
      const t = byUuid.get(processUuid);
      if (t === undefined || t.claimed || connection === undefined) return undefined;
      t.claimed = true;
      const via = connection;
      const spawned = tracked(t);
      if (t.exit !== undefined) acknowledge(t, via);
      return spawned;
    },
    settle() {
      settled = true;
      if (connection === undefined) return;
      for (const t of [...byId.values()]) if (!t.claimed && t.exit !== undefined) deliver(t, connection);
    },
    close() {
      closed = true;
      if (pollTimer !== undefined) clearInterval(pollTimer);
      pollTimer = undefined;
      connection?.close();
      connection = undefined;
    },
  };
}

