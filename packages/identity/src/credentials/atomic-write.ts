// Crash-safe replacement of a secret file (spec "Password rules" 4): write a temporary file in the
// same directory (created exclusively, mode 0600, owned by the directory owner when running as
// root so that ownership is preserved), fsync it, rename it over the target (or link it, to create
// without replacing), fsync the directory. Readers see the old or the new content, never a mix.
import { randomBytes } from 'node:crypto';
import { link, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Prefix of temporary files in the secrets directory. */
export const TEMP_PREFIX = '.tmp-';

export interface AtomicWriteOptions {
  /** Mode of the new file (default 0o600; set explicitly, the umask does not apply). */
  mode?: number;
  /** Create only: resolve false, leaving the existing file alone, when the target exists. */
  exclusive?: boolean;
}

/** Atomically write `data` to `file`; resolves false only for `exclusive` when `file` existed. */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<boolean> {
  const dir = dirname(file);
  const mode = options.mode ?? 0o600;
  const temp = join(dir, `${TEMP_PREFIX}${basename(file)}.${randomBytes(6).toString('hex')}`);
  let placed = false;
  try {
    const owner = await stat(dir);
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.chmod(mode);
      // Running as root in a directory owned by another user (the container's uid 482): the file
      // must stay owned by the directory owner.
      if (process.getuid?.() === 0 && (owner.uid !== 0 || owner.gid !== 0))
        await handle.chown(owner.uid, owner.gid);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive === true) {
      try {
        await link(temp, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw error;
      }
      await rm(temp, { force: true });
    } else {
      await rename(temp, file);
    }
    placed = true;
    await fsyncDir(dir);
    return true;
  } finally {
    if (!placed) await rm(temp, { force: true });
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
