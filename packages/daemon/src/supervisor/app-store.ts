// Persistence of registered applications: one YAML file per app, `work/apps/<name>.yaml`
// (CONTRACT §2). This file maps definitions to and from their files (serialization, migration of
// the names before App Mesh 3.0, reserved names); how the bytes become durable is the storage
// engine's (util/journaled-dir.ts: atomic writes, the write-ahead log, group commit). A file that
// fails validation is reported and left in place, never deleted, so an acknowledged definition is
// never lost.
import { NAME_PATTERN, SvcError } from '@svc/protocol';
import type { AppDefinition } from '../model/app-definition.ts';
import { deserializeApp, serializeApp } from '../model/app-definition.ts';
import type { SecretCrypter } from '../model/secret-crypter.ts';
import { TEMP_PREFIX } from '@svc/platform/atomic-file';
import { JournaledDir, type DurableDirectory } from '../util/journaled-dir.ts';

const SUFFIX = '.yaml';

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

/** `file` is the file name of a valid app name (what the log of work/apps may name). */
function isAppFileName(file: string): boolean {
  if (!file.endsWith(SUFFIX)) return false;
  try {
    return appFileName(file.slice(0, -SUFFIX.length)) === file;
  } catch {
    return false;
  }
}

export class AppStore {
  readonly #dir: string;
  readonly #crypter: SecretCrypter;
  readonly #trusted: boolean;
  readonly #files: DurableDirectory;

  constructor(dir: string, crypter: SecretCrypter, options: AppStoreOptions = {}) {
    this.#dir = dir;
    this.#crypter = crypter;
    this.#trusted = options.trusted === true;
    this.#files = new JournaledDir(dir, {
      journal: options.journal === true && !this.#trusted,
      journalBytes: options.journalBytes,
      isFileName: isAppFileName,
    });
  }

  get dir(): string {
    return this.#dir;
  }

  /**
   * Read every `<name>.yaml` (a journaled store replays its log first); a missing directory is an
   * empty store. Sorted by name.
   */
  async loadAll(): Promise<LoadResult> {
    const { entries, problems } = await this.#files.loadAll();
    const errors: LoadResult['errors'] = [...problems];
    const apps: AppDefinition[] = [];
    const migrated: LoadResult['migrated'] = [];
    for (const { name: file, path, read } of entries) {
      if (!file.endsWith(SUFFIX)) continue;
      if (file.startsWith(TEMP_PREFIX)) {
        // Temp files never end in .yaml (`.tmp-<name>.yaml.<hex>`, `.tmp-pool.<hex>`): this is an
        // app registered under a reserved name by an older svc. Listed, left in place.
        errors.push({ file: path, error: `${file}: the name is reserved (rename the app and its file)` });
        continue;
      }
      let legacy: string[] = [];
      try {
        const def = deserializeApp((await read()).toString('utf8'), this.#crypter, {
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
   * Durably write the definition (secret_env encrypted), mode 0600, atomically: a reader sees the
   * old file or the new one. Resolves once it is durable (in the log, for a journaled store) and
   * in place. The write is issued before this returns (the start path spawns meanwhile).
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
    return this.#files.put(file, data);
  }

  /** Delete the file of `name` (durably: the directory is fsynced); a missing app is not an error. */
  delete(name: string): Promise<void> {
    let file: string;
    try {
      file = appFileName(name);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.#files.delete(file);
  }

  /** Resolves once every answered save's file is in place (renamed or unlinked; not yet durable). */
  settled(): Promise<void> {
    return this.#files.settled();
  }

  /** Close the kept handles and delete pooled temp files (shutdown); a later save reopens. */
  close(): Promise<void> {
    return this.#files.close();
  }
}
