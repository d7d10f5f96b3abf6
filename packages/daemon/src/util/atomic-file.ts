// Crash-safe file replacement. A reader sees either the old content or the new content, never a
// mix, and after this resolves the new content survives a power loss: the data is fsynced before
// the rename and the directory is fsynced after it.
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Prefix of temporary files; readers that list a directory skip names starting with it. */
export const TEMP_PREFIX = '.tmp-';

/** Temp file name for `path`: hidden, in the same directory (rename stays on one filesystem). */
export function tempPathFor(path: string): string {
  return join(dirname(path), `${TEMP_PREFIX}${basename(path)}.${randomBytes(6).toString('hex')}`);
}

/**
 * Atomically replace `path` with `data`: write a temp file in the same directory (created with
 * `mode`, default 0o600, exclusively), fsync it, rename it over `path`, fsync the directory.
 * On failure the temp file is removed and `path` is unchanged.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const temp = tempPathFor(path);
  let renamed = false;
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(data);
      // The creation mode is filtered by the umask; set it explicitly.
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    renamed = true;
    await fsyncDir(dirname(path));
  } finally {
    if (!renamed) await rm(temp, { force: true });
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
