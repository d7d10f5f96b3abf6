// Rules of the bootstrap secret files (spec: "Bootstrap secret files"): every file in
// work/auth/secrets/ is a regular file (not a symbolic link), has mode exactly 0600, is owned by the
// owner of its directory and has exactly one hard link. They are checked on each use: readSecretFile
// checks the path, opens it without following links and checks the opened file again, so a file
// swapped between the check and the read is refused too.
import { constants } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname } from 'node:path';
import { CredentialError } from './errors.ts';

/** Largest secret file accepted (they hold a few lines). */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

function describeType(info: Stats): string {
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** Throws a CredentialError naming the file and the first rule `info` breaks. */
export function checkSecretStats(file: string, info: Stats, dirOwner: number): void {
  if (!info.isFile())
    throw new CredentialError(file, `secret file must be a regular file (it is ${describeType(info)})`);
  const mode = info.mode & 0o7777;
  if (mode !== 0o600)
    throw new CredentialError(
      file,
      `secret file must have mode 600 (it has ${mode.toString(8).padStart(3, '0')})`,
    );
  if (info.uid !== dirOwner)
    throw new CredentialError(
      file,
      `secret file must be owned by the owner of its directory (uid ${dirOwner}; the file is owned by uid ${info.uid})`,
    );
  if (info.nlink !== 1)
    throw new CredentialError(file, `secret file must have exactly one hard link (it has ${info.nlink})`);
}

/** Check `file` against the secret-file rules. ENOENT is reported as a CredentialError too. */
export async function checkSecretFile(file: string): Promise<void> {
  const [info, dir] = await Promise.all([lstatOrThrow(file), stat(dirname(file))]);
  checkSecretStats(file, info, dir.uid);
}

/** Whether `file` exists (as anything, a dangling link included). */
export async function secretFileExists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

async function lstatOrThrow(file: string): Promise<Stats> {
  try {
    return await lstat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CredentialError(file, 'secret file is missing');
    throw new CredentialError(
      file,
      `secret file cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}

/** Check the rules, then read the file as UTF-8 through a descriptor that is checked again. */
export async function readSecretFile(file: string): Promise<string> {
  await checkSecretFile(file);
  const dir = await stat(dirname(file));
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP')
      throw new CredentialError(file, 'secret file must be a regular file (it is a symbolic link)');
    throw new CredentialError(file, `secret file cannot be opened (${code ?? 'error'})`);
  }
  try {
    const info = await handle.stat();
    checkSecretStats(file, info, dir.uid);
    if (info.size > MAX_SECRET_FILE_BYTES)
      throw new CredentialError(file, `secret file must be at most ${MAX_SECRET_FILE_BYTES} bytes`);
    const bytes = await handle.readFile();
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    try {
      return text.decode(bytes);
    } catch {
      throw new CredentialError(file, 'secret file must be UTF-8 text');
    }
  } finally {
    await handle.close();
  }
}
