// work/.snapshot: what a new daemon needs to re-attach to processes that outlived the old one.
// JSON, written atomically (temp + fsync + rename, mode 0600) and coalesced: at most one write in
// flight, and a change during a write triggers exactly one more. Writes are off the start path
// (a crash between a spawn and the next write loses only the re-attachment of that process).
//
// Re-attachment rule: a process is adopted only when /proc/<pid>/stat exists AND its start time
// (field 22, clock ticks since boot) equals the recorded one; a reused pid never matches.
import { readFile } from 'node:fs/promises';
import type { Logger } from '../log/logger.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import type { OutputFileInfo } from './output-store.ts';

export interface SnapshotProcess {
  app: string;
  pid: number;
  /** Field 22 of /proc/<pid>/stat. */
  startTicks: number;
  processUuid: string;
  /** Epoch ms. */
  startedAt: number;
}

export interface SnapshotApp {
  starts: number;
  lastStartAt: number | undefined;
  lastExitAt: number | undefined;
  returnCode: number | undefined;
  lastError: string | undefined;
  /** Most recent process uuids, newest first (process keys of superseded processes). */
  uuids: string[];
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

export class SnapshotWriter {
  readonly #file: string;
  readonly #collect: () => SnapshotData;
  readonly #logger: Logger;
  #dirty = false;
  #writing: Promise<void> | undefined;
  #closed = false;

  constructor(file: string, collect: () => SnapshotData, logger: Logger) {
    this.#file = file;
    this.#collect = collect;
    this.#logger = logger;
  }

  /** Mark the snapshot stale; it is written soon, off the caller's path. */
  schedule(): void {
    if (this.#closed) return;
    this.#dirty = true;
    this.#writing ??= this.#loop();
  }

  async #loop(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#dirty) {
        this.#dirty = false;
        try {
          await writeFileAtomic(this.#file, JSON.stringify(this.#collect()), 0o600);
        } catch (error) {
          this.#logger.error('snapshot write failed', { file: this.#file, error });
        }
      }
    } finally {
      this.#writing = undefined;
    }
  }

  /** Write now (after any write in flight) and stop accepting schedules. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
    await writeFileAtomic(this.#file, JSON.stringify(this.#collect()), 0o600);
  }
}
