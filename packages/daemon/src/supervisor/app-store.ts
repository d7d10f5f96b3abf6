// Persistence of registered applications: one YAML file per app, `work/apps/<name>.yaml`
// (CONTRACT §2). Writes are atomic (util/atomic-file.ts); a file that fails validation is reported
// and left in place, never deleted, so an acknowledged definition is never lost.
import { SvcError } from '@svc/protocol';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppDefinition } from '../model/app-definition.ts';
import { NAME_PATTERN, deserializeApp, serializeApp } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { TEMP_PREFIX, fsyncDir, writeFileAtomic } from '../util/atomic-file.ts';

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

  /** Atomically write the definition (sec_env encrypted), mode 0600. */
  async save(def: AppDefinition): Promise<void> {
    const file = appFileName(def.name);
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(join(this.#dir, file), serializeApp(def, this.#crypter), 0o600);
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
