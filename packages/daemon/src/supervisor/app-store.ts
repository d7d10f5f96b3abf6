// Persistence of registered applications: one YAML file per app, `work/apps/<name>.yaml`
// (CONTRACT §2). Writes are atomic (util/atomic-file.ts); a file that fails validation is reported
// and left in place, never deleted, so an acknowledged definition is never lost.
import { randomBytes } from 'node:crypto';
import { constants, writeSync } from 'node:fs';
import { SvcError } from '@svc/protocol';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppDefinition } from '../model/app-definition.ts';
import { NAME_PATTERN, deserializeApp, serializeApp } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { TEMP_PREFIX, fsyncDir } from '../util/atomic-file.ts';
import { GroupCommitter } from '../util/group-commit.ts';
import { DEFAULT_LOG_BYTES, LogFullError, WriteAheadLog } from '../util/write-ahead-log.ts';

const SUFFIX = '.yaml';
/** Pooled temp files start with TEMP_PREFIX, so loadAll skips them like any temp file. */
const POOL_TEMP_PREFIX = `${TEMP_PREFIX}pool.`;
const TEMP_POOL_SIZE = 2;
const TEMP_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
/** The write-ahead log of a journaled store (util/write-ahead-log.ts); not a `.yaml`, never loaded. */
export const JOURNAL_FILE = '.journal';
/** Definitions larger than this (or a quarter of the log) are written directly (then a barrier). */
const MAX_LOGGED_BYTES = 64 * 1024;
/** An idle log with more than this in it is reset (keeps the replay at start-up short). */
const RESET_AFTER_BYTES = 64 * 1024;
/** How long renamed files wait for their fdatasync + directory fsync (they are in the log). */
const CHECKPOINT_DELAY_MS = 20;
/** Record ops; Barrier: the file on disk is newer than every earlier record of it (a direct write). */
const Op = { Put: 0, Delete: 1, Barrier: 2 } as const;
type Op = (typeof Op)[keyof typeof Op];
type Temp = { path: string; handle: FileHandle };
/** A file renamed into place by a journaled save, its handle still open (see #current). */
type Placed = { file: string; handle: FileHandle };
/** Handles of durable files kept open (see AppStore #current). */
const CURRENT_HANDLES = 256;
interface OpenedLog {
  log: WriteAheadLog;
  problems: { file: string; error: string }[];
}
const noop = (): void => undefined;

export interface LoadResult {
  apps: AppDefinition[];
  /** Files that could not be read or validated, with the reason; they stay on disk untouched. */
  errors: { file: string; error: string }[];
  /**
   * Files that used the names before App Mesh 3.0's and were rewritten (atomically) in the current
   * shape, with the old names found; `error` when the rewrite failed (the old file still loads).
   */
  migrated: { file: string; fields: string[]; error?: string }[];
}

export interface AppStoreOptions {
  /** Bundled apps/*.yaml: definitions may carry `system: true`. */
  trusted?: boolean;
  /**
   * Acknowledge a save once its record is durable in `<dir>/.journal` (one write, no file-system
   * journal commit) and the file renamed into place; the file itself is made durable right after,
   * and replayed from the log at the next load if the host went down first (work/apps).
   */
  journal?: boolean;
  /** Size of the log (tests; default util/write-ahead-log.ts DEFAULT_LOG_BYTES). */
  journalBytes?: number;
}

/**
 * Prefixes of svc's own files next to the apps' files: `.tmp-` (temp files of atomic writes, skipped
 * when loading work/apps) and `.pool-` (pre-opened output files, deleted at start-up in
 * work/stdout). An app with such a name would be acknowledged and then lost, so they are refused.
 */
export const RESERVED_NAME_PREFIXES: readonly string[] = [TEMP_PREFIX, '.pool-'];

/** Throws invalid_name (400) for a name svc reserves for its own files. */
export function refuseReservedName(name: string): void {
  const prefix = RESERVED_NAME_PREFIXES.find((p) => name.startsWith(p));
  if (prefix !== undefined)
    throw new SvcError(
      'invalid_name',
      `name: names beginning with ${JSON.stringify(prefix)} are reserved for svc's own files`,
    );
}

/** The file name of an app, from a validated name only. */
export function appFileName(name: string): string {
  if (!NAME_PATTERN.test(name) || name === '.' || name === '..') {
    throw new SvcError('invalid_name', `name: must match ${NAME_PATTERN.source}`);
  }
  refuseReservedName(name);
  return name + SUFFIX;
}

export class AppStore {
  readonly #dir: string;
  readonly #crypter: SecretCrypter;
  readonly #trusted: boolean;

  readonly #journaled: boolean;
  readonly #journalBytes: number | undefined;

  constructor(dir: string, crypter: SecretCrypter, options: AppStoreOptions = {}) {
    this.#dir = dir;
    this.#crypter = crypter;
    this.#trusted = options.trusted === true;
    this.#journaled = options.journal === true && !this.#trusted;
    this.#journalBytes = options.journalBytes;
  }

  get dir(): string {
    return this.#dir;
  }

  /** Read every `<name>.yaml`; a missing directory is an empty store. Sorted by name. */
  async loadAll(): Promise<LoadResult> {
    const errors: LoadResult['errors'] = [];
    if (this.#journaled) {
      // Replays what the log holds (acknowledged saves whose files may not have reached the disk).
      errors.push(...(await this.#openLog()).problems);
    }
    let entries: string[];
    try {
      entries = await readdir(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { apps: [], errors, migrated: [] };
      throw error;
    }
    const apps: AppDefinition[] = [];
    const migrated: LoadResult['migrated'] = [];
    for (const file of entries.sort()) {
      if (!file.endsWith(SUFFIX)) continue;
      const path = join(this.#dir, file);
      if (file.startsWith(TEMP_PREFIX)) {
        // Temp files never end in .yaml (`.tmp-<name>.yaml.<hex>`, `.tmp-pool.<hex>`): this is an
        // app registered under a reserved name by an older svc. Listed, left in place.
        errors.push({ file: path, error: `${file}: the name is reserved (rename the app and its file)` });
        continue;
      }
      let legacy: string[] = [];
      try {
        const def = deserializeApp(await readFile(path, 'utf8'), this.#crypter, {
          trusted: this.#trusted,
          file,
          onLegacy: (fields) => (legacy = fields),
        });
        if (def.name + SUFFIX !== file) {
          throw new SvcError(
            'invalid_app',
            `${file}: name ${JSON.stringify(def.name)} does not match the file name`,
          );
        }
        apps.push(def);
        // Bundled files belong to the install root and are never rewritten.
        if (legacy.length > 0 && !this.#trusted) {
          const entry: LoadResult['migrated'][number] = { file: path, fields: legacy };
          await this.save(def).catch((error: unknown) => {
            entry.error = error instanceof Error ? error.message : String(error);
          });
          migrated.push(entry);
        }
      } catch (error) {
        errors.push({ file: path, error: error instanceof Error ? error.message : String(error) });
      }
    }
    if (migrated.length > 0) await this.settled(); // the rewritten files are in place on return
    return { apps, errors, migrated };
  }

  /**
   * Atomically and durably write the definition (secret_env encrypted), mode 0600: write a temp file
   * opened O_DSYNC (durable when the write returns), rename it over <name>.yaml (closing it
   * meanwhile), fsync the directory. Same guarantees as util/atomic-file.ts with fewer thread-pool
   * round trips on the start path: the temp file comes from a small pool of pre-created,
   * pre-chmod'ed empty files (creating a file costs 0.5-1 ms here), the directory is created once
   * and its fd kept open for its fsync. Group commit (util/group-commit.ts): concurrent saves and
   * deletes share directory fsyncs, and saves of one app coalesce (the last definition wins).
   */
  save(def: AppDefinition): Promise<void> {
    let file: string;
    let data: Buffer;
    try {
      file = appFileName(def.name);
      data = Buffer.from(serializeApp(def, this.#crypter));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    // The write is issued NOW, before returning to the caller, unless a write of the same file is
    // still applying: the start path spawns right after this call, synchronously, and the write
    // proceeds in the thread pool meanwhile.
    return this.#journaled ? this.#logged(file, data) : this.#commits.commit(file, data);
  }

  /** Delete the file of `name` (durably: the directory is fsynced); a missing app is not an error. */
  delete(name: string): Promise<void> {
    let file: string;
    try {
      file = appFileName(name);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.#journaled ? this.#logged(file, null) : this.#commits.commit(file, null);
  }

  readonly #commits = new GroupCommitter<Buffer | null>({
    apply: (file, data) => (data === null ? this.#unlink(file) : this.#replace(file, data)),
    sync: () => this.#syncDir(),
  });

  /** Write `data` to a temp file and rename it over `file`: visible, not yet durable. */
  #replace(file: string, data: Buffer): Promise<void> {
    const pooled = this.#temps.shift();
    const written = pooled === undefined ? undefined : writeAll(pooled.handle, data);
    void this.#refill();
    return this.#finish(join(this.#dir, file), data, pooled, written);
  }

  async #unlink(file: string): Promise<void> {
    try {
      await rm(join(this.#dir, file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  async #syncDir(): Promise<void> {
    const dir = this.#dirHandle();
    try {
      await (await dir).sync();
    } catch {
      this.#dir$ = undefined; // unusable handle: sync by path, reopen next time
      await fsyncDir(this.#dir);
    }
  }

  async #finish(
    path: string,
    data: Buffer,
    pooled: { path: string; handle: FileHandle } | undefined,
    written: Promise<void> | undefined,
  ): Promise<void> {
    const dir = this.#dirHandle();
    dir.catch(() => undefined);
    let temp = pooled;
    let renamed = false;
    try {
      if (
        temp !== undefined &&
        !(await written?.then(
          () => true,
          () => false,
        ))
      ) {
        // The pooled file is unusable (closed, or deleted by another store): use a fresh one.
        await temp.handle.close().catch(() => undefined);
        await rm(temp.path, { force: true });
        temp = undefined;
        written = undefined;
      }
      temp ??= await this.#createTemp();
      let closed: Promise<void> | undefined;
      try {
        await (written ?? writeAll(temp.handle, data));
        await temp.handle.datasync();
        closed = temp.handle.close();
        try {
          await rename(temp.path, path);
        } catch (error) {
          if (pooled === undefined || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
          // The pooled file was deleted under us (another store's cleanup): write a fresh one.
          await closed;
          temp = await this.#createTemp();
          closed = undefined;
          await writeAll(temp.handle, data);
          await temp.handle.datasync();
          closed = temp.handle.close();
          await rename(temp.path, path);
        }
        renamed = true;
      } finally {
        await (closed ?? temp.handle.close());
      }
    } finally {
      if (!renamed && temp !== undefined) await rm(temp.path, { force: true });
    }
  }

  #dir$: Promise<FileHandle> | undefined;
  readonly #temps: { path: string; handle: FileHandle }[] = [];
  #refilling: Promise<void> | undefined;
  /** Pool refills stop once closed; a later save still works (fresh temp files). */
  #closed = false;

  #dirHandle(): Promise<FileHandle> {
    this.#dir$ ??= (async () => {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      // Temp files of a previous daemon's pool (never renamed: they hold nothing).
      for (const name of await readdir(this.#dir)) {
        if (name.startsWith(POOL_TEMP_PREFIX)) await rm(join(this.#dir, name), { force: true });
      }
      return open(this.#dir, 'r');
    })();
    const handle = this.#dir$;
    handle.catch(() => {
      if (this.#dir$ === handle) this.#dir$ = undefined;
    });
    return handle;
  }

  async #createTemp(): Promise<{ path: string; handle: FileHandle }> {
    await this.#dirHandle(); // the directory exists (and stale pool files are gone)
    const path = join(this.#dir, `${POOL_TEMP_PREFIX}${randomBytes(6).toString('hex')}`);
    const handle = await open(path, TEMP_FLAGS, 0o600);
    try {
      await handle.chmod(0o600); // the creation mode is filtered by the umask
    } catch (error) {
      await handle.close();
      await rm(path, { force: true });
      throw error;
    }
    return { path, handle };
  }

  #refill(): Promise<void> {
    if (this.#refilling !== undefined) return this.#refilling;
    // (The loop below always awaits at least once, so `finally` never runs before the assignment.)
    if (this.#closed || this.#temps.length >= TEMP_POOL_SIZE) return Promise.resolve();
    this.#refilling = (async () => {
      try {
        while (this.#temps.length < TEMP_POOL_SIZE && !this.#closed) {
          const temp = await this.#createTemp();
          if (this.#closed) {
            await temp.handle.close();
            await rm(temp.path, { force: true });
          } else {
            this.#temps.push(temp);
          }
        }
      } catch {
        // Saves fall back to creating their temp file.
      } finally {
        this.#refilling = undefined;
      }
    })();
    return this.#refilling;
  }

  // ---- journaled saves (options.journal) -------------------------------------------------------
  //
  // A save: its record is appended to the log (group-committed, issued at once) while its data is
  // written, without sync, into a pooled temp file; once the record is durable the temp file is
  // renamed over <name>.yaml (never before: a rename that reached the disk ahead of its data could
  // otherwise replace an acknowledged definition with garbage after a power loss) and the save is
  // answered. Then, off the answer's path, the file's data is fdatasync'ed and the directory
  // fsynced (shared by every file of the moment: #checkpoints); when nothing logged is waiting for
  // that any more, the log is reset. Renames and unlinks of one file keep the order of their saves.

  #log: WriteAheadLog | undefined;
  #log$: Promise<OpenedLog> | undefined;
  /** Records appended (or being appended) whose files are not durable yet: the log keeps them. */
  #pending = 0;
  #drainWaiters: (() => void)[] = [];
  #checkpointError: Error | undefined;
  readonly #publishing = new Map<string, Promise<void>>();
  #checkpointKey = 0;
  readonly #unsynced: (Placed | null)[] = [];
  #checkpointTimer: NodeJS.Timeout | undefined;
  readonly #checkpoints = new GroupCommitter<Placed | null>({
    apply: async (_key, placed) => {
      // An unlink: the directory fsync makes it durable. A file replaced since: the newer one is
      // synced by its own checkpoint (its record keeps the log from being reset until then).
      if (placed === null || this.#current.get(placed.file) !== placed.handle) return;
      await placed.handle.datasync();
    },
    sync: () => this.#syncDir(),
  });
  /**
   * Handle of the file now at each name, as renamed by this store: kept open so that the next
   * rename over it (or unlink) only drops a name: the inode is freed when the handle is closed,
   * after that rename, off the answer's path (a rename that frees the replaced inode costs ~0.3 ms
   * here, p90 3 ms, against ~0.05 ms). At most CURRENT_HANDLES are kept once their files are durable.
   */
  readonly #current = new Map<string, FileHandle>();

  /** `handle` is now the file at `file`; the one it replaced is closed in the background. */
  #setCurrent(file: string, handle: FileHandle | undefined): void {
    const replaced = this.#current.get(file);
    this.#current.delete(file);
    if (handle !== undefined) this.#current.set(file, handle);
    if (replaced !== undefined && replaced !== handle) void replaced.close().catch(noop);
  }

  /** Durable files beyond CURRENT_HANDLES: their handles are closed (oldest first). */
  #trimCurrent(): void {
    if (this.#unsynced.length > 0 || this.#pending > 0) return;
    for (const [file, handle] of this.#current) {
      if (this.#current.size <= CURRENT_HANDLES) break;
      this.#current.delete(file);
      void handle.close().catch(noop);
    }
  }

  /**
   * Open the log and replay it: every file it names gets its last logged state, durably. A file
   * that cannot be written is reported (LoadResult.errors) and the log then kept as it is.
   */
  #openLog(): Promise<OpenedLog> {
    this.#log$ ??= (async () => {
      await this.#dirHandle();
      const opened = await WriteAheadLog.open(join(this.#dir, JOURNAL_FILE), this.#journalBytes);
      const last = new Map<string, Buffer | null | undefined>();
      for (const record of opened.records) {
        const decoded = decodeRecord(record);
        if (decoded === undefined) continue;
        last.set(
          decoded.file,
          decoded.op === Op.Put ? decoded.data : decoded.op === Op.Delete ? null : undefined,
        );
      }
      const problems: LoadResult['errors'] = [];
      if (opened.discarded !== undefined)
        problems.push({ file: opened.discarded, error: 'write-ahead log with an invalid header: set aside' });
      const replays = [...last].flatMap(([file, state]) =>
        state === undefined
          ? []
          : [
              this.#commits.commit(file, state).catch((error: unknown) => {
                problems.push({
                  file: join(this.#dir, file),
                  error: `replay from ${JOURNAL_FILE}: ${asError(error).message}`,
                });
              }),
            ],
      );
      await Promise.all(replays);
      if (problems.length === 0 || opened.discarded !== undefined) await opened.log.reset();
      this.#log = opened.log;
      void this.#refill(); // the first save finds a pooled temp file
      return { log: opened.log, problems };
    })();
    const opening = this.#log$;
    opening.catch(() => {
      if (this.#log$ === opening) this.#log$ = undefined;
    });
    return opening;
  }

  #logged(file: string, data: Buffer | null): Promise<void> {
    const log = this.#log;
    if (log === undefined) return this.#openLog().then(() => this.#logged(file, data));
    if (
      data !== null &&
      data.length > Math.min(MAX_LOGGED_BYTES, (this.#journalBytes ?? DEFAULT_LOG_BYTES) / 4)
    )
      return this.#inOrder(file, () => this.#direct(log, file, data));
    // Both issued now, before the caller's next step (the spawn): the log write and the data write.
    this.#pending++;
    const durable = this.#append(log, encodeRecord(file, data === null ? Op.Delete : Op.Put, data));
    const staged = data === null ? undefined : this.#stage(data);
    staged?.catch(noop);
    // The answer waits for the record and for the file being in place (renames keep the order).
    durable.catch(noop);
    return this.#inOrder(file, () => this.#publish(log, file, data, durable, staged));
  }

  /**
   * After its record is durable: the rename (or unlink) of a journaled save, then its checkpoint
   * is scheduled. A save whose file cannot be put in place fails: a barrier record (the file on
   * disk stands) is logged first so that no restart replays what was answered with an error.
   */
  async #publish(
    log: WriteAheadLog,
    file: string,
    data: Buffer | null,
    durable: Promise<void>,
    staged: Promise<Temp> | undefined,
  ): Promise<void> {
    let temp: Temp | undefined;
    let stageError: unknown;
    try {
      temp = await staged;
    } catch (error) {
      stageError = error;
    }
    try {
      await durable;
    } catch (error) {
      if (temp !== undefined) await discard(temp);
      throw error;
    }
    let placeError = stageError;
    if (placeError === undefined) {
      try {
        if (temp === undefined) await this.#unlink(file);
        else await rename(temp.path, join(this.#dir, file));
      } catch (error) {
        placeError = error;
      }
    }
    if (placeError !== undefined) {
      if (temp !== undefined) await discard(temp);
      this.#pending++;
      await this.#append(log, encodeRecord(file, Op.Barrier, null)).then(
        () => this.#checkpointed(),
        noop, // not logged: a restart may still replay the save (an answer lost in transit)
      );
      this.#checkpointed();
      throw asError(placeError);
    }
    this.#setCurrent(file, temp?.handle);
    this.#scheduleCheckpoint(temp === undefined ? null : { file, handle: temp.handle });
    // Refilled once the rename is done: creating files in the directory would compete with it
    // (the directory's lock, the file-system journal) on the answer's path.
    void this.#refill();
  }

  /** Resolves once every answered save's file is in place (renamed or unlinked; not yet durable). */
  async settled(): Promise<void> {
    while (this.#publishing.size > 0) await Promise.all([...this.#publishing.values()]);
  }

  /**
   * Files renamed into place wait CHECKPOINT_DELAY_MS, then are made durable together (fdatasync
   * each, one directory fsync): a burst costs one checkpoint, and its fsyncs do not queue in front
   * of the next request's log write on the device.
   */
  #scheduleCheckpoint(placed: Placed | null): void {
    this.#unsynced.push(placed);
    if (this.#checkpointTimer !== undefined) return;
    this.#checkpointTimer = setTimeout(() => this.#checkpointNow(), CHECKPOINT_DELAY_MS);
    this.#checkpointTimer.unref();
  }

  #checkpointNow(): void {
    if (this.#checkpointTimer !== undefined) clearTimeout(this.#checkpointTimer);
    this.#checkpointTimer = undefined;
    for (const placed of this.#unsynced.splice(0)) {
      this.#checkpoints.commit(String(++this.#checkpointKey), placed).then(
        () => this.#checkpointed(),
        (error: unknown) => {
          // The log keeps the record (never reset now): the next start replays it.
          this.#checkpointError ??= asError(error);
          this.#wakeDrainWaiters();
        },
      );
    }
  }

  /** Runs `step` after every earlier step of `file` (renames and unlinks keep the saves' order). */
  #inOrder(file: string, step: () => Promise<void>): Promise<void> {
    const previous = this.#publishing.get(file) ?? Promise.resolve();
    const done = previous.then(step);
    const settled = done.then(noop, noop);
    this.#publishing.set(file, settled);
    void settled.then(() => {
      if (this.#publishing.get(file) === settled) this.#publishing.delete(file);
    });
    return done;
  }

  /** Append with room: a full log is reset once every earlier record's file is durable. */
  async #append(log: WriteAheadLog, record: Buffer): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await log.append(record);
        return;
      } catch (error) {
        this.#pending--;
        this.#wakeDrainWaiters();
        if (!(error instanceof LogFullError) || attempt >= 3) throw error;
      }
      await this.#drained();
      await log.reset(() => this.#pending === 0);
      this.#pending++;
    }
  }

  /** A definition too large for the log: written durably in place, then a barrier record. */
  async #direct(log: WriteAheadLog, file: string, data: Buffer): Promise<void> {
    await this.#commits.commit(file, data);
    this.#setCurrent(file, undefined); // that inode was replaced
    this.#pending++;
    await this.#append(log, encodeRecord(file, Op.Barrier, null));
    this.#checkpointed();
  }

  /**
   * The data of a journaled save in a temp file, not synced (the log makes it durable first): into
   * a pooled file synchronously (a page-cache copy, ~10 µs, cheaper than a thread-pool round trip),
   * else into a new one.
   */
  async #stage(data: Buffer): Promise<Temp> {
    const pooled = this.#temps.shift();
    if (pooled !== undefined) {
      try {
        let offset = 0;
        while (offset < data.length)
          offset += writeSync(pooled.handle.fd, data, offset, data.length - offset, offset);
        return pooled;
      } catch {
        await discard(pooled); // closed, or deleted by another store: use a fresh one
      }
    }
    const temp = await this.#createTemp();
    try {
      await writeAll(temp.handle, data);
    } catch (error) {
      await discard(temp);
      throw error;
    }
    return temp;
  }

  #checkpointed(): void {
    this.#pending--;
    this.#wakeDrainWaiters();
    const log = this.#log;
    if (this.#pending === 0 && log !== undefined && log.used > RESET_AFTER_BYTES)
      void log.reset(() => this.#pending === 0).catch(noop);
    if (this.#pending === 0) this.#trimCurrent();
  }

  #wakeDrainWaiters(): void {
    if (this.#pending !== 0 && this.#checkpointError === undefined) return;
    for (const wake of this.#drainWaiters.splice(0)) wake();
  }

  /** Resolves when every logged record's file is durable; throws if one could not be made so. */
  async #drained(): Promise<void> {
    this.#checkpointNow(); // someone waits: no delay
    if (this.#pending !== 0 && this.#checkpointError === undefined)
      await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    if (this.#checkpointError !== undefined) throw this.#checkpointError;
  }

  /** Close the kept handles and delete pooled temp files (shutdown); a later save reopens. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#refilling;
    const logging = this.#log$;
    this.#log$ = undefined;
    this.#log = undefined;
    const log = await logging?.then((opened) => opened.log).catch(() => undefined);
    if (log !== undefined) {
      await this.settled();
      // A clean shutdown leaves an empty log when every file is durable (else the next start replays).
      const drained = await this.#drained().then(
        () => true,
        () => false,
      );
      if (drained) await log.reset(() => this.#pending === 0).catch(noop);
      await log.close();
      const current = [...this.#current.values()];
      this.#current.clear();
      await Promise.all(current.map((handle) => handle.close().catch(noop)));
    }
    const handle = this.#dir$;
    this.#dir$ = undefined;
    if (handle !== undefined) await (await handle.catch(() => undefined))?.close();
    for (const temp of this.#temps.splice(0)) {
      await temp.handle.close();
      await rm(temp.path, { force: true });
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(typeof error === 'string' ? error : 'write failed');
}

/** Close and delete a temp file that will not be renamed. */
async function discard(temp: Temp): Promise<void> {
  await temp.handle.close().catch(noop);
  await rm(temp.path, { force: true }).catch(noop); // gone with its directory, or left for the next start's cleanup
}

/** A log record: u16 file-name length, the name, u8 op, the data (Put only). */
function encodeRecord(file: string, op: Op, data: Buffer | null): Buffer {
  const name = Buffer.from(file);
  const head = Buffer.alloc(3 + name.length);
  head.writeUInt16LE(name.length, 0);
  name.copy(head, 2);
  head.writeUInt8(op, 2 + name.length);
  return data === null ? head : Buffer.concat([head, data]);
}

/** A record back; undefined for one that is not well formed or names no valid app file. */
function decodeRecord(record: Buffer): { file: string; op: Op; data: Buffer } | undefined {
  if (record.length < 3) return undefined;
  const length = record.readUInt16LE(0);
  if (record.length < 3 + length) return undefined;
  const file = record.subarray(2, 2 + length).toString();
  const op = record.readUInt8(2 + length) as Op;
  if (op !== Op.Put && op !== Op.Delete && op !== Op.Barrier) return undefined;
  if (!file.endsWith(SUFFIX)) return undefined;
  try {
    if (appFileName(file.slice(0, -SUFFIX.length)) !== file) return undefined;
  } catch {
    return undefined;
  }
  return { file, op, data: record.subarray(3 + length) };
}

async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset, offset);
    offset += bytesWritten;
  }
}
