// work/.snapshot: what a new daemon needs to re-attach to processes that outlived the old one.
// JSON, written atomically (temp + rename, mode 0600; no fsync, see writeSnapshotFile) and
// coalesced: at most one write in flight, at most one per SNAPSHOT_MIN_INTERVAL_MS, and a change
// during a write triggers exactly one more. Writes are off the start path: a daemon crash between a
// spawn and the next write loses that process's entry, and the next daemon finds the process by the
// orphan scan instead (orphans.ts: SVC_* environment, verified process key); `flush` writes at once
// (pid adoption, which must survive a daemon restart before it is acknowledged: an external process
// carries no svc environment, so the scan cannot find it).
//
// Re-attachment rule: a process is adopted only when /proc/<pid>/stat exists AND its start time
// (field 22, clock ticks since boot) equals the recorded one; a reused pid never matches.
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from '../log/logger.ts';
import type { Runtime } from './lifecycle-host.ts';
import type { OutputFileInfo } from './output-store.ts';

export interface SnapshotProcess {
  app: string;
  pid: number;
  /** Field 22 of /proc/<pid>/stat. */
  startTicks: number;
  processUuid: string;
  /** Epoch ms. */
  startedAt: number;
  /** Adopted by the definition's `pid` (output not captured). */
  external?: boolean;
  /** Signal the pid alone on stop (an external process that leads no group). */
  signalPidOnly?: boolean;
}

/** An app's runtime fields (lifecycle-host.ts Runtime: starts, times, last error, recent uuids) and more. */
export interface SnapshotApp extends Runtime {
  /** Non-periodic app that should be running (false after a standby exit). */
  wantRun: boolean;
  /** The last exit was abnormal (liveness health). */
  crashed: boolean;
  /** Present for transient apps created by run/syncrun. */
  transient?: { lifecycleSeconds: number; timeoutAt: number | undefined } | undefined;
  /** Output files, index 0 = current. */
  outputs: OutputFileInfo[];
}

export interface SnapshotData {
  version: 1;
  writtenAt: number;
  processes: SnapshotProcess[];
  apps: Record<string, SnapshotApp>;
}

export async function readSnapshot(file: string, logger: Logger): Promise<SnapshotData | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const data = JSON.parse(text) as SnapshotData;
    if (data.version !== 1 || !Array.isArray(data.processes) || typeof data.apps !== 'object') {
      throw new Error('unknown snapshot format');
    }
    return data;
  } catch (error) {
    logger.warn('snapshot unreadable, ignored', { file, error });
    return undefined;
  }
}

/** Snapshot writes are at most this often (a burst of starts costs one write, not one per start). */
export const SNAPSHOT_MIN_INTERVAL_MS = 50;

/**
 * Replace `file` atomically with respect to a daemon crash: temp file + rename, no fsync. The
 * snapshot only matters while processes outlive the daemon; a power loss kills them all, so its
 * durability is not worth an fsync competing with the fsync of acknowledged definitions.
 */
async function writeSnapshotFile(file: string, data: string): Promise<void> {
  const temp = `${dirname(file)}/.tmp-${basename(file)}.${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(temp, data, { mode: 0o600 });
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

export class SnapshotWriter {
  readonly #file: string;
  readonly #collect: () => SnapshotData;
  readonly #logger: Logger;
  readonly #minIntervalMs: number;
  #dirty = false;
  #writing: Promise<void> | undefined;
  #lastWriteAt = 0;
  #closed = false;
  /** Ends the loop's pause between writes early (close). */
  #wake: (() => void) | undefined;

  constructor(
    file: string,
    collect: () => SnapshotData,
    logger: Logger,
    minIntervalMs = SNAPSHOT_MIN_INTERVAL_MS,
  ) {
    this.#file = file;
    this.#collect = collect;
    this.#logger = logger;
    this.#minIntervalMs = minIntervalMs;
  }

  /** Mark the snapshot stale; it is written soon (within minIntervalMs), off the caller's path. */
  schedule(): void {
    if (this.#closed) return;
    this.#dirty = true;
    this.#writing ??= this.#loop();
  }

  /** Resolve once a write that includes the current state has completed. */
  async flush(): Promise<void> {
    this.schedule();
    while (this.#writing !== undefined) await this.#writing;
  }

  async #write(): Promise<void> {
    this.#dirty = false;
    this.#lastWriteAt = Date.now();
    try {
      await writeSnapshotFile(this.#file, JSON.stringify(this.#collect()));
    } catch (error) {
      this.#logger.error('snapshot write failed', { file: this.#file, error });
    }
  }

  async #loop(): Promise<void> {
    try {
      while (this.#dirty && !this.#closed) {
        const wait = this.#lastWriteAt + this.#minIntervalMs - Date.now();
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          if (wait > 0) setTimeout(resolve, wait).unref();
          else setImmediate(resolve);
        });
        this.#wake = undefined;
        if (this.#closed) break;
        await this.#write();
      }
    } finally {
      this.#writing = undefined;
    }
  }

  /** Write now (after any write in flight) and stop accepting schedules. */
  async close(): Promise<void> {
    this.#closed = true;
    // The pause is an unref'd timer: at shutdown nothing else may keep the event loop alive, and
    // waiting for it would let the process end before the final write below (seen in CI: the
    // snapshot then lacked a process started just before SIGTERM).
    this.#wake?.();
    await this.#writing;
    await writeSnapshotFile(this.#file, JSON.stringify(this.#collect()));
  }
}
