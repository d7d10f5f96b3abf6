// Persistence of registered applications: one YAML file per app, `work/apps/<name>.yaml`
// (CONTRACT §2). Writes are atomic (util/atomic-file.ts); a file that fails validation is reported
// and left in place, never deleted, so an acknowledged definition is never lost.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { SvcError } from '@svc/protocol';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppDefinition } from '../model/app-definition.ts';
import { NAME_PATTERN, deserializeApp, serializeApp } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { TEMP_PREFIX, fsyncDir } from '../util/atomic-file.ts';
import { GroupCommitter } from '../util/group-commit.ts';

const SUFFIX = '.yaml';
/** Pooled temp files start with TEMP_PREFIX, so loadAll skips them like any temp file. */
const POOL_TEMP_PREFIX = `${TEMP_PREFIX}pool.`;
const TEMP_POOL_SIZE = 2;
const TEMP_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_DSYNC;

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

  constructor(dir: string, crypter: SecretCrypter, options: AppStoreOptions = {}) {
    this.#dir = dir;
    this.#crypter = crypter;
    this.#trusted = options.trusted === true;
  }

  get dir(): string {
    return this.#dir;
  }

  /** Read every `<name>.yaml`; a missing directory is an empty store. Sorted by name. */
  async loadAll(): Promise<LoadResult> {
    let entries: string[];
    try {
      entries = await readdir(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { apps: [], errors: [], migrated: [] };
      throw error;
    }
    const apps: AppDefinition[] = [];
    const errors: LoadResult['errors'] = [];
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
    return this.#commits.commit(file, data);
  }

  /** Delete the file of `name` (durably: the directory is fsynced); a missing app is not an error. */
  delete(name: string): Promise<void> {
    let file: string;
    try {
      file = appFileName(name);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.#commits.commit(file, null);
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
        // O_DSYNC: the write resolves once the data is durable (one thread-pool job, no fdatasync).
        await (written ?? writeAll(temp.handle, data));
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

  /** Close the kept handles and delete pooled temp files (shutdown); a later save reopens. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#refilling;
    const handle = this.#dir$;
    this.#dir$ = undefined;
    if (handle !== undefined) await (await handle.catch(() => undefined))?.close();
    for (const temp of this.#temps.splice(0)) {
      await temp.handle.close();
      await rm(temp.path, { force: true });
    }
  }
}

async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset, offset);
    offset += bytesWritten;
  }
}
