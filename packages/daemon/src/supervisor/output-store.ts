// Captured output: work/stdout/<name>.out is the current (or last) process's stdout+stderr,
// <name>.out.1 … .out.N the N previous ones (N = stdout_backup_count), rotated at each new start.
//
// Contracts:
// - The child writes its own file (an O_APPEND fd opened here and passed as stdio), so the file is
//   append-only and a byte position identifies a byte forever: consecutive reads by position never
//   lose or duplicate a byte.
// - Rotation is synchronous (renames in one JS turn) and a read resolves its file to an open fd
//   in one JS turn too, so a read never lands on a file that was rotated under it.
// - `exited` (and `exitCode`, when known) is returned only when the process had exited BEFORE the file size was taken and
//   the read reached that size: a reader that sees it has seen every byte.
// - Size cap (`maxFileBytes`, default 16 MiB): a file holds at most about that many bytes on disk.
//   Every TRIM_INTERVAL_MS the current file of each app is checked; over the cap, its oldest bytes
//   are released by punching a hole over [0, S) (S = size − cap/2, page aligned) through the
//   daemon's own fd (`fallocate --punch-hole` on /proc/<pid>/fd/<fd>, so a rename at a new start
//   cannot redirect it). The file's size and every offset stay as they were, so positions stay
//   continuous and the child's O_APPEND fd needs no change; `start` (the first kept position)
//   is set and made durable in the snapshot BEFORE the punch, so no read ever returns the hole's
//   zeros. A read below `start` starts at `start` (the bytes before are gone). Disk per file is
//   bounded by cap + what the child writes in one interval.
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  open,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  watch,
} from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SvcError } from '@svc/protocol';
import type { OutputChunk, OutputQuery } from './types.ts';

const POOL_PREFIX = '.pool-';
const POOL_SIZE = 4;

/** Default and maximum bytes returned by one read. */
export const MAX_READ_BYTES = 1024 * 1024;
/** Long polls re-stat at this period in case an inotify event is missed (e.g. on NFS). */
const SAFETY_RESTAT_MS = 500;
/** Default cap of one output file on disk (`output_max_bytes`). */
export const DEFAULT_OUTPUT_MAX_BYTES = 16 * 1024 * 1024;
/** How often current files are checked against the cap. */
export const TRIM_INTERVAL_MS = 500;
const PAGE = 4096;

export interface OutputStoreOptions {
  /** Cap of one file on disk (bytes); default DEFAULT_OUTPUT_MAX_BYTES. */
  maxFileBytes?: number;
  /** Makes the new `start` of a file durable (the snapshot) before its bytes are released. */
  beforeRelease?: () => Promise<void>;
  /** Reports a failed release (e.g. a filesystem without hole punching): logged by the caller. */
  onReleaseError?: (app: string, error: Error) => void;
}

export interface OutputFileInfo {
  processUuid: string | undefined;
  exited: boolean;
  /** Undefined while running, or when the process was adopted and its exit code is unknown. */
  exitCode: number | undefined;
  /** First position still held (bytes before it were released by the size cap); absent = 0. */
  start?: number;
}

interface AppOutput {
  /** files[0] = <name>.out, files[i] = <name>.out.i */
  files: OutputFileInfo[];
  waiters: Set<() => void>;
}

export class OutputStore {
  readonly dir: string;
  readonly #apps = new Map<string, AppOutput>();

  /**
   * Pre-created, already opened empty files (`.pool-<hex>`): creating a file costs 0.5-1 ms on this
   * kind of host (ext4 inode allocation) while a rename costs ~0.05 ms, so a start renames a pooled
   * file to <name>.out instead of creating one on the event loop. Refilled in the background.
   */
  readonly #pool: { path: string; fd: number }[] = [];
  #refilling = false;
  #refillQueued = false;
  #closed = false;
  readonly #maxFileBytes: number;
  readonly #options: OutputStoreOptions;
  readonly #trimming = new Set<string>();
  readonly #trimTimer: NodeJS.Timeout;
  #punchUnsupported = false;

  constructor(dir: string, options: OutputStoreOptions = {}) {
    this.dir = dir;
    this.#options = options;
    this.#maxFileBytes = Math.max(2 * PAGE, options.maxFileBytes ?? DEFAULT_OUTPUT_MAX_BYTES);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const file of readdirSync(dir)) {
      if (file.startsWith(POOL_PREFIX)) rmSync(join(dir, file), { force: true }); // a previous daemon's
    }
    void this.#refill();
    this.#trimTimer = setInterval(() => this.#trimAll(), TRIM_INTERVAL_MS);
    this.#trimTimer.unref();
  }

  #trimAll(): void {
    if (this.#punchUnsupported) return;
    for (const app of this.#apps.keys()) {
      if (!this.#trimming.has(app)) void this.#trim(app);
    }
  }

  /**
   * Release the oldest bytes of the app's current file when it is over the cap. The fd is opened
   * in the same JS turn as files[0] is read (a rotation is synchronous too), so it is that file.
   */
  async #trim(app: string): Promise<void> {
    const info = this.#apps.get(app)?.files[0];
    if (info === undefined) return;
    let fd: number;
    try {
      fd = openSync(this.path(app, 0), 'r');
    } catch {
      return;
    }
    this.#trimming.add(app);
    try {
      const { size } = fstatSync(fd);
      const start = info.start ?? 0;
      if (size - start <= this.#maxFileBytes) return;
      const cut = Math.floor((size - this.#maxFileBytes / 2) / PAGE) * PAGE;
      if (cut <= start) return;
      info.start = cut; // reads skip the released bytes from now on
      await this.#options.beforeRelease?.(); // throws: retried at the next check
      // Closed meanwhile (shutdown): no release after the snapshot's final write; the next daemon's
      // check releases them.
      if (this.#closed) return;
      const punched = await new Promise<Error | undefined>((resolve) =>
        execFile(
          'fallocate',
          ['--punch-hole', '--offset', '0', '--length', String(cut), `/proc/${process.pid}/fd/${fd}`],
          { timeout: 30_000 },
          (error) => resolve(error === null ? undefined : new Error(`fallocate: ${error.message}`)),
        ),
      );
      if (punched !== undefined) {
        this.#punchUnsupported = true; // not retried: the cap is then not enforced (logged once)
        this.#options.onReleaseError?.(app, punched);
      }
    } catch (error) {
      this.#options.onReleaseError?.(app, error as Error);
    } finally {
      closeSync(fd);
      this.#trimming.delete(app);
    }
  }

  /**
   * Refill after the current turn: issuing the opens costs ~0.15 ms of main-thread time, which
   * would otherwise sit between a start's rotation and its spawn.
   */
  #scheduleRefill(): void {
    if (this.#refillQueued || this.#refilling || this.#closed) return;
    this.#refillQueued = true;
    setImmediate(() => {
      this.#refillQueued = false;
      void this.#refill();
    });
  }

  async #refill(): Promise<void> {
    if (this.#refilling || this.#closed) return;
    this.#refilling = true;
    try {
      while (this.#pool.length < POOL_SIZE && !this.#closed) {
        const path = join(this.dir, `${POOL_PREFIX}${randomBytes(6).toString('hex')}`);
        const fd = await new Promise<number>((resolve, reject) =>
          open(path, 'a', 0o600, (error, opened) => (error === null ? resolve(opened) : reject(error))),
        );
        if (this.#closed) {
          closeSync(fd);
          rmSync(path, { force: true });
          break;
        }
        this.#pool.push({ path, fd });
      }
    } catch {
      // Directory gone or no fds: starts fall back to creating their file directly.
    } finally {
      this.#refilling = false;
    }
  }

  /** Close and delete the pooled files (daemon shutdown). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#trimTimer);
    for (const { path, fd } of this.#pool.splice(0)) {
      closeSync(fd);
      rmSync(path, { force: true });
    }
  }

  /** A fresh, empty O_APPEND fd at <name>.out: a pooled file renamed into place, else created. */
  #openFresh(path: string): number {
    const pooled = this.#pool.shift();
    this.#scheduleRefill();
    if (pooled !== undefined) {
      try {
        renameSync(pooled.path, path);
        return pooled.fd;
      } catch {
        closeSync(pooled.fd);
        rmSync(pooled.path, { force: true });
      }
    }
    return openSync(path, 'a', 0o600);
  }

  path(app: string, index: number): string {
    return join(this.dir, index === 0 ? `${app}.out` : `${app}.out.${index}`);
  }

  #state(app: string): AppOutput {
    let state = this.#apps.get(app);
    if (state === undefined) {
      state = { files: [], waiters: new Set() };
      this.#apps.set(app, state);
    }
    return state;
  }

  /**
   * Restore what is known about an app's files after a daemon restart: from the snapshot when it
   * has the app, else from the files on disk (process uuids unknown, all exited).
   */
  restore(app: string, files: readonly OutputFileInfo[] | undefined): void {
    const state = this.#state(app);
    if (files !== undefined) {
      state.files = files.filter((_, i) => existsSync(this.path(app, i))).map((f) => ({ ...f }));
      return;
    }
    const found: OutputFileInfo[] = [];
    while (existsSync(this.path(app, found.length))) {
      const start = releasedPrefix(this.path(app, found.length));
      found.push({
        processUuid: undefined,
        exited: true,
        exitCode: undefined,
        ...(start > 0 ? { start } : {}),
      });
    }
    state.files = found;
  }

  /**
   * Restore the files of an app whose running process was found by the orphan scan (not listed in
   * the snapshot). Its start rotated the files and created <name>.out for it, and no later start
   * can have happened while it ran, so <name>.out is its file (it still writes there through its
   * inherited fd: nothing is rotated now). `saved` = the snapshot's list when it has the app: when
   * that list predates the start, every file moved up one index. Older files are marked exited
   * (their processes cannot be running: one process per app at a time).
   */
  restoreForOrphan(app: string, processUuid: string, saved: readonly OutputFileInfo[] | undefined): void {
    const current: OutputFileInfo = { processUuid, exited: false, exitCode: undefined };
    if (saved !== undefined) {
      this.restore(app, saved[0]?.processUuid === processUuid ? saved : [current, ...saved]);
    } else {
      this.restore(app, undefined);
    }
    const state = this.#state(app);
    state.files = [current, ...state.files.slice(1).map((f) => (f.exited ? f : { ...f, exited: true }))];
  }

  files(app: string): readonly OutputFileInfo[] {
    return this.#apps.get(app)?.files ?? [];
  }

  /** Number of older output files kept. */
  cacheSize(app: string): number {
    return Math.max(0, (this.#apps.get(app)?.files.length ?? 0) - 1);
  }

  /**
   * Rotate and open a fresh <name>.out for a new process; returns an O_APPEND fd that the caller
   * passes to the child and then closes. `keep` = number of older files kept.
   */
  openForProcess(app: string, processUuid: string, keep: number): number {
    const state = this.#state(app);
    const files = state.files;
    for (let i = files.length - 1; i >= 0; i--) {
      try {
        if (i + 1 > keep) rmSync(this.path(app, i), { force: true });
        else renameSync(this.path(app, i), this.path(app, i + 1));
      } catch {
        // A file removed by hand: its slot is simply empty from now on.
      }
    }
    const fd = this.#openFresh(this.path(app, 0));
    state.files = [{ processUuid, exited: false, exitCode: undefined }, ...files].slice(0, keep + 1);
    return fd;
  }

  /** Record that a process exited and wake its long polls. */
  markExited(app: string, processUuid: string, exitCode: number | undefined): void {
    const state = this.#apps.get(app);
    if (state === undefined) return;
    const file = state.files.find((f) => f.processUuid === processUuid);
    if (file !== undefined) {
      file.exited = true;
      file.exitCode = exitCode;
    }
    this.#wake(state);
  }

  #wake(state: AppOutput): void {
    for (const waiter of [...state.waiters]) waiter();
  }

  /** Delete every file of the app and wake its long polls (they then return what they have). */
  remove(app: string): void {
    const state = this.#apps.get(app);
    if (state === undefined) return;
    for (let i = 0; i < Math.max(state.files.length, 1); i++) rmSync(this.path(app, i), { force: true });
    this.#apps.delete(app);
    this.#wake(state);
  }

  async read(app: string, query: OutputQuery): Promise<OutputChunk> {
    const state = this.#state(app);
    let index = query.index;
    if (query.processUuid !== undefined) {
      index = state.files.findIndex((f) => f.processUuid === query.processUuid);
      if (index < 0)
        throw new SvcError('not_found', `no output of process ${query.processUuid} is kept for ${app}`);
    }
    if (!Number.isInteger(index) || index < 0)
      throw new SvcError('invalid_query', 'stdout_index must be >= 0');
    const file = state.files[index];
    if (file === undefined) {
      if (index === 0)
        return {
          output: Buffer.alloc(0),
          position: 0,
          exited: false,
          exitCode: undefined,
          processUuid: undefined,
        };
      throw new SvcError('not_found', `${app} has no output file with index ${index}`);
    }
    const cap =
      query.maxSize !== undefined && query.maxSize > 0
        ? Math.min(query.maxSize, MAX_READ_BYTES)
        : MAX_READ_BYTES;
    let position = Math.max(file.start ?? 0, Math.floor(query.position));
    const deadline = Date.now() + Math.max(0, query.timeoutMs);

    // Open by path and watch in the same JS turn: rotation cannot slip in between.
    let fd: number;
    try {
      fd = openSync(this.path(app, index), 'r');
    } catch {
      return {
        output: Buffer.alloc(0),
        position,
        exited: file.exited,
        exitCode: file.exited ? file.exitCode : undefined,
        processUuid: file.processUuid,
      };
    }
    let watcher: FSWatcher | undefined;
    let wake: (() => void) | undefined;
    const changed = (): void => wake?.();
    try {
      if (query.timeoutMs > 0 && !file.exited) {
        try {
          watcher = watch(this.path(app, index), { persistent: false }, changed);
          watcher.on('error', changed);
        } catch {
          // No inotify: the safety re-stat below still finds new bytes.
        }
        state.waiters.add(changed);
      }
      for (;;) {
        const exited = file.exited;
        const size = fstatSync(fd).size;
        if (position < size) {
          const length = Math.min(cap, size - position);
          const buffer = Buffer.allocUnsafe(length);
          let got = 0;
          while (got < length) {
            const n = readSync(fd, buffer, got, length - got, position + got);
            if (n === 0) break;
            got += n;
          }
          if ((file.start ?? 0) > position) {
            // Released by the size cap while this read ran: those bytes may be the hole's zeros.
            position = file.start ?? 0;
            continue;
          }
          const next = position + got;
          const complete = exited && next >= size;
          return {
            output: got === length ? buffer : buffer.subarray(0, got),
            position: next,
            exited: complete,
            exitCode: complete ? file.exitCode : undefined,
            processUuid: file.processUuid,
          };
        }
        const remaining = deadline - Date.now();
        // Removed while this read waited: the answer is the removal (404), never an exit code.
        if (this.#apps.get(app) !== state)
          throw new SvcError('app_not_found', `application ${app} was removed`);
        if (exited || remaining <= 0) {
          return {
            output: Buffer.alloc(0),
            position: size,
            exited,
            exitCode: exited ? file.exitCode : undefined,
            processUuid: file.processUuid,
          };
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(remaining, SAFETY_RESTAT_MS));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    } finally {
      watcher?.close();
      state.waiters.delete(changed);
      closeSync(fd);
    }
  }
}

/**
 * Without a snapshot, the bytes a size-cap release punched out of a file: a sparse file whose first
 * page reads as zeros is taken to have a hole over [0, S), S = size − allocated bytes, page aligned
 * (what the release leaves behind). 0 when the file is not sparse or starts with data.
 */
function releasedPrefix(path: string): number {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const { size, blocks } = fstatSync(fd);
    const allocated = blocks * 512;
    if (allocated + PAGE >= size) return 0;
    const first = Buffer.alloc(PAGE);
    const n = readSync(fd, first, 0, PAGE, 0);
    if (n < PAGE || first.some((byte) => byte !== 0)) return 0;
    // Blocks allocated beyond the end (preallocation) make the estimate low: skip zero pages.
    let start = Math.min(size, Math.ceil((size - allocated) / PAGE) * PAGE);
    for (let i = 0; i < 256 && start < size; i++) {
      const got = readSync(fd, first, 0, PAGE, start);
      if (first.subarray(0, got).some((byte) => byte !== 0)) break;
      start += PAGE;
    }
    return Math.min(start, size);
  } catch {
    return 0;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
