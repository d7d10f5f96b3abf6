// The file system side of /svc/file/upload and /svc/file/download, done by a short-lived child
// process running as the caller's execution user (setpriv, util-linux), so the kernel applies that
// user's rights. The bytes stream through pipes: the daemon never holds a whole file.
//
// Upload: `sh` creates a temp file in the target's directory (mode 600, exclusively, under a random
// name svcd chose, so its cleanup trap is set before the file exists; `cat` writes to the shell's
// descriptor of it, never re-creating it after a cleanup), copies stdin into it, and waits for the daemon's verdict on fd 3: only `commit` (sent after the request body ended
// cleanly) lets it fsync, apply owner and mode, rename over the target and fsync the directory. A
// client that disconnects mid-body gets no commit: the temp file is removed and the target is as it
// was. Download: `sh` opens the file as the user, prints one metadata line (size, mode, owner,
// group, type) from the opened descriptor, then `head -c <size>` streams exactly that many bytes.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '@svc/protocol';
import { argvAs, type OsIdentity } from '../util/os-user.ts';
import type { FileAttributes } from './file-policy.ts';

export interface FileMeta {
  size: number;
  /** Permission bits. */
  mode: number;
  user: string;
  group: string;
}

const UPLOAD_SCRIPT = `
dir=$1 target=$2 mode=$3 owner=$4 tmp=$5
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 1' TERM INT HUP
umask 077
set -C
command exec 4> "$tmp" || exit 10
set +C
cat >&4 || exit 11
exec 4>&-
IFS= read -r verdict <&3 || verdict=
[ "$verdict" = commit ] || exit 20
sync -- "$tmp" || exit 11
if [ -n "$owner" ]; then chown -- "$owner" "$tmp" || exit 12; fi
if [ -z "$mode" ]; then
  if [ -f "$target" ]; then mode=$(stat -c %a -- "$target") || exit 13; else mode=644; fi
fi
chmod -- "$mode" "$tmp" || exit 13
[ -d "$target" ] && [ ! -L "$target" ] && exit 15
mv -f -T -- "$tmp" "$target" || exit 14
trap - EXIT
sync -- "$dir" 2>/dev/null
stat -c '%s %a %U %G' -- "$target"
`;

const DOWNLOAD_SCRIPT = `
command exec 3< "$1" || exit 10
meta=$(stat -L -c '%s %a %U %G %F' /dev/fd/3) || exit 11
case "$meta" in *' regular file') ;; *) exit 12 ;; esac
printf '%s\\n' "$meta"
exec head -c "\${meta%% *}" <&3
`;

/** Errors by the scripts' exit codes (stderr is never shown to the client: it may name other paths). */
function failure(code: number | null, what: string, user: string): SvcError {
  switch (code) {
    case 10:
      return new SvcError(
        'forbidden',
        `${what}: ${user} may not ${what.startsWith('upload') ? 'create files in that directory' : 'read that file'}`,
      );
    case 12:
      return what.startsWith('upload')
        ? new SvcError('forbidden', `${what}: ${user} may not give the file that owner`)
        : new SvcError('bad_request', `${what}: not a regular file`);
    case 13:
      return new SvcError('forbidden', `${what}: cannot set the file mode`);
    case 14:
    case 15:
      return new SvcError('conflict', `${what}: cannot replace the target (a directory, or not writable)`);
    default:
      return new SvcError('internal', `${what} failed (exit ${code ?? 'signal'})`);
  }
}

function start(user: OsIdentity | undefined, script: string, args: string[], extraFd: boolean): ChildProcess {
  const [file, argv] =
    user === undefined
      ? ['/bin/sh', ['-c', script, 'svc-file', ...args]]
      : argvAs(user, '/bin/sh', ['-c', script, 'svc-file', ...args]);
  return spawn(file, argv, {
    cwd: '/',
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', LC_ALL: 'C' },
    stdio: extraFd ? ['pipe', 'pipe', 'ignore', 'pipe'] : ['ignore', 'pipe', 'ignore'],
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('close', (code) => resolve(code));
  });
}

async function readAll(stream: Readable, limit: number): Promise<string> {
  let text = '';
  for await (const chunk of stream) {
    text += String(chunk);
    if (text.length > limit) break;
  }
  return text;
}

function parseMeta(line: string): FileMeta {
  const [size, mode, user, group] = line.trim().split(' ');
  return { size: Number(size), mode: parseInt(mode ?? '0', 8), user: user ?? '', group: group ?? '' };
}

/**
 * Write `source` to `target` (in the existing directory `dir`) as `user` (undefined = the daemon's
 * user), atomically. Resolves with the new file's attributes.
 */
export async function uploadAs(
  user: OsIdentity | undefined,
  request: { dir: string; target: string; attributes: FileAttributes },
  source: NodeJS.ReadableStream | Uint8Array,
): Promise<FileMeta> {
  const { mode, owner } = request.attributes;
  // In the target's directory, under a name svcd chooses (so it can remove the file itself below).
  const temp = join(request.dir, `.svc-upload.${randomBytes(12).toString('hex')}`);
  const child = start(
    user,
    UPLOAD_SCRIPT,
    [
      request.dir,
      request.target,
      mode === undefined ? '' : mode.toString(8),
      owner === undefined ? '' : `${owner.user}:${owner.group}`,
      temp,
    ],
    true,
  );
  const exited = exitOf(child);
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject));
  spawnError.catch(() => undefined);
  const verdict = child.stdio[3] as Writable;
  verdict.on('error', () => undefined);
  child.stdin!.on('error', () => undefined);
  const output = readAll(child.stdout!, 4096);
  try {
    const input = source instanceof Uint8Array ? [source] : source;
    await Promise.race([pipeline(input as AsyncIterable<Uint8Array>, child.stdin!), spawnError]);
  } catch (cause) {
    // The client left (or the child died) before the body ended: no commit, the temp file goes.
    verdict.destroy();
    child.kill('SIGTERM');
    await exited;
    // The shell's EXIT trap removes its temp file, but a SIGTERM that lands while the trap's `rm`
    // runs ends the shell before that `rm` has finished: remove it here as well, once the shell is
    // gone. Only the file of this random name; unlink never follows a symbolic link.
    await unlink(temp).catch(() => undefined);
    if (child.exitCode !== null && child.exitCode !== 1 && child.exitCode !== 20)
      throw failure(child.exitCode, 'upload', user?.user ?? 'the daemon');
    throw new SvcError('bad_request', 'upload: the request body ended early; nothing was written', { cause });
  }
  verdict.end('commit\n');
  const code = await exited;
  if (code !== 0) throw failure(code, 'upload', user?.user ?? 'the daemon');
  return parseMeta(await output);
}

/**
 * Open `path` for reading as `user`. Resolves once the file is open with its attributes and a
 * stream of exactly `size` bytes; `cancel` ends the child early (client gone).
 */
export async function downloadAs(
  user: OsIdentity | undefined,
  path: string,
): Promise<{ meta: FileMeta; stream: Readable; cancel: () => void }> {
  const child = start(user, DOWNLOAD_SCRIPT, [path], false);
  const exited = exitOf(child);
  const stdout = child.stdout!;
  // The first line is the metadata; everything after it is the file.
  const header = await new Promise<{ line: string; rest: Buffer } | undefined>((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline !== -1) {
        stdout.off('data', onData);
        stdout.pause();
        resolve({
          line: buffered.subarray(0, newline).toString('utf8'),
          rest: buffered.subarray(newline + 1),
        });
      } else if (buffered.length > 4096) reject(new SvcError('internal', 'download: bad metadata'));
    };
    stdout.on('data', onData);
    stdout.once('end', () => resolve(undefined));
    child.once('error', reject);
  });
  if (header === undefined) throw failure(await exited, 'download', user?.user ?? 'the daemon');
  const meta = parseMeta(header.line);
  if (header.rest.length > 0) stdout.unshift(header.rest);
  return {
    meta,
    stream: stdout,
    cancel: () => child.kill('SIGTERM'),
  };
}

/** Read a whole file of at most `limit` bytes (TCP and WSS carry the body in one message). */
export async function readFileAs(
  user: OsIdentity | undefined,
  path: string,
  limit: number,
): Promise<{ meta: FileMeta; body: Uint8Array }> {
  const opened = await downloadAs(user, path);
  const { meta, stream } = opened;
  if (meta.size > limit) {
    opened.cancel();
    throw new SvcError(
      'payload_too_large',
      `the file has ${meta.size} bytes; over TCP and WSS at most ${limit} (use REST, which streams)`,
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return { meta, body: Buffer.concat(chunks) };
}
