// Crash-safe file replacement, the one implementation for svcd, svc-agent and svc-identity. A reader
// sees either the old content or the new content, never a mix, and after this resolves the new
// content survives a power loss: the data is fsynced before the rename (or link) and the directory
// is fsynced after it.
import { randomBytes } from 'node:crypto';
import { link, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Prefix of temporary files; readers that list a directory skip names starting with it. */
export const TEMP_PREFIX = '.tmp-';

export interface AtomicWriteOptions {
  /** Mode of the new file (default 0o600; set explicitly, the umask does not apply). */
  mode?: number;
  /** Create only: resolve false, leaving the existing file alone, when the target exists. */
  exclusive?: boolean;
  /**
   * Running as root in a directory owned by another user (the container's uid 482 for svc-identity's
   * secret files): give the file to the directory's owner, so that ownership is preserved.
   */
  ownerFromDirectory?: boolean;
}

/** Temp file name for `path`: hidden, in the same directory (rename stays on one filesystem). */
export function tempPathFor(path: string): string {
  return join(dirname(path), `${TEMP_PREFIX}${basename(path)}.${randomBytes(6).toString('hex')}`);
}

/**
 * Atomically write `data` to `path`: write a temp file in the same directory (created exclusively
 * with `mode`), fsync it, rename it over `path` (or, for `exclusive`, link it to `path`), fsync the
 * directory. On failure the temp file is removed and `path` is unchanged. Resolves false only for
 * `exclusive` when `path` existed.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<boolean> {
  const dir = dirname(path);
  const mode = options.mode ?? 0o600;
  const temp = tempPathFor(path);
  let placed = false;
  try {
    const owner = options.ownerFromDirectory === true ? await stat(dir) : undefined;
    const handle = await open(temp, 'wx', mode);
    try {
      // The creation mode is filtered by the umask; set it explicitly.
      await handle.chmod(mode);
      if (owner !== undefined && process.getuid?.() === 0 && (owner.uid !== 0 || owner.gid !== 0))
        await handle.chown(owner.uid, owner.gid);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive === true) {
      try {
        await link(temp, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw error;
      }
      await rm(temp, { force: true });
    } else {
      await rename(temp, path);
    }
    placed = true;
    await fsyncDir(dir);
    return true;
  } finally {
    if (!placed) await rm(temp, { force: true });
  }
}

/** fsync a directory so that a rename or unlink inside it is durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
