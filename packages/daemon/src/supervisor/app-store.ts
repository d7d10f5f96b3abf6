// Persistence of registered applications: one YAML file per app, `work/apps/<name>.yaml`
// (CONTRACT §2). Writes are atomic (util/atomic-file.ts); a file that fails validation is reported
// and left in place, never deleted, so an acknowledged definition is never lost.
import { SvcError } from '@svc/protocol';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppDefinition } from '../model/app-definition.ts';
import { NAME_PATTERN, deserializeApp, serializeApp } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { TEMP_PREFIX, fsyncDir, tempPathFor } from '../util/atomic-file.ts';

const SUFFIX = '.yaml';

export interface LoadResult {
  apps: AppDefinition[];
  /** Files that could not be read or validated, with the reason; they stay on disk untouched. */
  errors: { file: string; error: string }[];
}

export interface AppStoreOptions {
  /** Bundled apps/*.yaml: definitions may carry `system: true`. */
  trusted?: boolean;
}

/** The file name of an app, from a validated name only. */
export function appFileName(name: string): string {
  if (!NAME_PATTERN.test(name) || name === '.' || name === '..') {
    throw new SvcError('invalid_name', `name: must match ${NAME_PATTERN.source}`);
  }
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
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { apps: [], errors: [] };
      throw error;
    }
    const apps: AppDefinition[] = [];
    const errors: LoadResult['errors'] = [];
    for (const file of entries.sort()) {
      if (!file.endsWith(SUFFIX) || file.startsWith(TEMP_PREFIX)) continue;
      const path = join(this.#dir, file);
      try {
        const def = deserializeApp(await readFile(path, 'utf8'), this.#crypter, {
          trusted: this.#trusted,
          file,
        });
        if (def.name + SUFFIX !== file) {
          throw new SvcError(
            'invalid_app',
            `${file}: name ${JSON.stringify(def.name)} does not match the file name`,
          );
        }
        apps.push(def);
      } catch (error) {
        errors.push({ file: path, error: error instanceof Error ? error.message : String(error) });
      }
    }
    return { apps, errors };
  }

  /**
   * Atomically and durably write the definition (sec_env encrypted), mode 0600: temp file, write
   * (+ chmod, in parallel), fdatasync, rename (+ close, in parallel), fsync of the directory. Same
   * guarantees as util/atomic-file.ts with fewer thread-pool round trips on the start path: the
   * directory is created once and its fd is kept open for the directory fsync.
   */
  async save(def: AppDefinition): Promise<void> {
    const file = appFileName(def.name);
    const data = serializeApp(def, this.#crypter);
    const dir = await this.#dirHandle();
    const path = join(this.#dir, file);
    const temp = tempPathFor(path);
    let renamed = false;
    try {
      const handle = await open(temp, 'wx', 0o600);
      let closed: Promise<void> | undefined;
      try {
        // The creation mode is filtered by the umask; set it explicitly.
        await Promise.all([handle.writeFile(data), handle.chmod(0o600)]);
        await handle.datasync();
        closed = handle.close();
        await rename(temp, path);
        renamed = true;
      } finally {
        await (closed ?? handle.close());
      }
      try {
        await dir.sync();
      } catch {
        this.#dir$ = undefined; // unusable handle: sync by path, reopen next time
        await fsyncDir(this.#dir);
      }
    } finally {
      if (!renamed) await rm(temp, { force: true });
    }
  }

  #dir$: Promise<FileHandle> | undefined;

  #dirHandle(): Promise<FileHandle> {
    this.#dir$ ??= (async () => {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      return open(this.#dir, 'r');
    })();
    const handle = this.#dir$;
    handle.catch(() => {
      if (this.#dir$ === handle) this.#dir$ = undefined;
    });
    return handle;
  }

  /** Close the kept directory handle (tests, shutdown); a later save reopens it. */
  async close(): Promise<void> {
    const handle = this.#dir$;
    this.#dir$ = undefined;
    if (handle !== undefined) await (await handle.catch(() => undefined))?.close();
  }

  /** Delete the file of `name`; deleting a missing app is not an error. */
  async delete(name: string): Promise<void> {
    const path = join(this.#dir, appFileName(name));
    try {
      await rm(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    await fsyncDir(this.#dir);
  }
}
