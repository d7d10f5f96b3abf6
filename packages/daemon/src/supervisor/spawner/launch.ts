// Which runner svcd spawns with, and starting (or finding) svc-spawner.
//
// SVC_SPAWNER=native|inprocess|auto (default auto). auto: the native spawner when its binary is
// there (built from packages/spawner/src first when the source is newer, with the system compiler),
// else in-process with a warning naming why. native: the spawner or svcd does not start.
// inprocess: Node's child_process, as before the spawner existed.
//
// The spawner lives in <work>/run/ (socket spawner.sock 0600, spawner.lock, spawner.pid,
// spawner.log). svcd connects to the one that is there (it outlived the previous svcd), or starts
// one detached in its own session, waits for its "ready" line, and connects.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log/logger.ts';
import { UserSwitch } from '../../privilege/user-switch.ts';
import { createProcessRunner, type ProcessRunner } from '../process-runner.ts';
import { SpawnerConnection } from './connection.ts';
import { createSpawnerRunner } from './spawner-runner.ts';

export type SpawnerMode = 'native' | 'inprocess' | 'auto';

export interface SpawnerPaths {
  binary: string;
  source: string;
  buildScript: string;
  runDir: string;
}

export function spawnerPaths(installRoot: string, workDir: string): SpawnerPaths {
  const pkg = join(installRoot, 'packages', 'spawner');
  return {
    binary: join(pkg, 'build', 'svc-spawner'),
    source: join(pkg, 'src', 'svc-spawner.c'),
    buildScript: join(pkg, 'build.js'),
    runDir: join(workDir, 'run'),
  };
}

const mtimeOf = (file: string): number | undefined => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
};

/** The binary, built first when missing or older than its source; or why there is none. */
export function ensureSpawnerBinary(paths: SpawnerPaths): { binary: string } | { problem: string } {
  const built = mtimeOf(paths.binary);
  const written = mtimeOf(paths.source);
  if (written !== undefined && (built === undefined || written > built)) {
    const result = spawnSync(process.execPath, [paths.buildScript, '--strict'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (result.status !== 0)
      return { problem: (result.stderr || result.error?.message || `build exit ${result.status}`).trim() };
  }
  if (mtimeOf(paths.binary) === undefined) return { problem: `${paths.binary} is missing` };
  return { binary: paths.binary };
}

/**
 * The user switch of the processes svcd starts itself: svc-spawner's `exec` mode (the binary is
 * needed for that whichever runner spawns the apps), built first when stale.
 */
export function userSwitchOf(paths: SpawnerPaths): UserSwitch {
  const found = ensureSpawnerBinary(paths);
  return 'binary' in found
    ? new UserSwitch(found.binary)
    : new UserSwitch(undefined, `svc-spawner is not available (${found.problem})`);
}

/** Start a spawner in `runDir` and wait for its "ready" line. Exit 3: another one holds the lock. */
function launch(binary: string, runDir: string, timeoutMs: number): Promise<number> {
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const log = openSync(join(runDir, 'spawner.log'), 'a', 0o600);
  try {
    const child = spawn(binary, [runDir], { detached: true, stdio: ['ignore', 'pipe', log], env: {} });
    return new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`svc-spawner did not report ready within ${timeoutMs} ms`));
      }, timeoutMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(
          Object.assign(new Error(`svc-spawner exited with ${code} before it was ready`), { exitCode: code }),
        );
      });
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        const match = /^ready (\d+)\n/.exec(out);
        if (match === null) return;
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.stdout?.destroy();
        child.unref();
        resolve(Number(match[1]));
      });
    });
  } finally {
    closeSync(log);
  }
}

/**
 * Connect to the spawner of `runDir`, starting one when none listens. A spawner that is exiting
 * (it held nothing) may still hold the lock for a moment: then try again, a few times.
 */
export async function connectSpawner(binary: string, runDir: string): Promise<SpawnerConnection> {
  const socket = join(runDir, 'spawner.sock');
  let lastError: unknown;
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      return await SpawnerConnection.open(socket);
    } catch (error) {
      lastError = error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ECONNREFUSED') throw error;
    }
    try {
      await launch(binary, runDir, 10_000);
    } catch (error) {
      lastError = error;
      if ((error as { exitCode?: number }).exitCode !== 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw lastError instanceof Error ? lastError : new Error('svc-spawner could not be reached');
}

export interface SpawnerChoice {
  connection: SpawnerConnection | undefined;
  binary: string | undefined;
  /** Why the in-process path was chosen (undefined when native). */
  reason: string | undefined;
}

/** Decide the spawn path at start-up and say so in the log. */
export async function chooseSpawner(
  mode: SpawnerMode,
  paths: SpawnerPaths,
  logger: Logger,
): Promise<SpawnerChoice> {
  if (mode === 'inprocess') {
    logger.info('processes are spawned in-process (SVC_SPAWNER=inprocess)');
    return { connection: undefined, binary: undefined, reason: 'SVC_SPAWNER=inprocess' };
  }
  const found = ensureSpawnerBinary(paths);
  let problem: string;
  if ('binary' in found) {
    try {
      const connection = await connectSpawner(found.binary, paths.runDir);
      logger.info('processes are spawned by svc-spawner', {
        pid: connection.pid,
        socket: join(paths.runDir, 'spawner.sock'),
        held: connection.held.length,
      });
      return { connection, binary: found.binary, reason: undefined };
    } catch (error) {
      problem = `svc-spawner could not be started: ${(error as Error).message}`;
    }
  } else {
    problem = `svc-spawner unavailable: ${found.problem}`;
  }
  if (mode === 'native') throw new Error(`${problem} (SVC_SPAWNER=native)`);
  logger.warn(`processes are spawned in-process: ${problem}`);
  return { connection: undefined, binary: undefined, reason: problem };
}

/**
 * The runner svcd spawns with: svc-spawner where it can run (`mode`), else Node's child_process
 * (`reason` says why). `flushSnapshot`: an exit is acknowledged (and forgotten by the spawner) once
 * the snapshot records it.
 */
export async function createRunner(
  mode: SpawnerMode,
  paths: SpawnerPaths,
  users: UserSwitch,
  flushSnapshot: () => Promise<void>,
  logger: Logger,
): Promise<{ runner: ProcessRunner; reason: string | undefined }> {
  const choice = await chooseSpawner(mode, paths, logger);
  const binary = choice.binary;
  if (choice.connection === undefined || binary === undefined)
    return { runner: createProcessRunner(users), reason: choice.reason };
  const runner = createSpawnerRunner({
    connection: choice.connection,
    reconnect: () => connectSpawner(binary, paths.runDir),
    inProcess: createProcessRunner(users),
    beforeAcknowledge: flushSnapshot,
    logger,
  });
  return { runner, reason: choice.reason };
}
