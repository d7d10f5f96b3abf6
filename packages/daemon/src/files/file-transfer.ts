// The file system side of /svc/file/upload and /svc/file/download, done by a short-lived `/bin/sh`
// child running as the caller's execution user (privilege/user-switch.ts), so the kernel applies
// that user's rights, and path resolution too: svcd never resolves, stats or opens a caller's path
// as root. The bytes stream through pipes: the daemon never holds a whole file.
//
// Both scripts first pin what they will act on, then print its REAL path (symbolic links resolved,
// as the user sees it) and wait on fd 3 for svcd's verdict on that path (`allow` below: the
// transfer policy of files/file-policy.ts); only `go` lets them touch it:
// - Upload: `cd -P` into the target's directory (every later step is relative to it, so no path is
//   resolved twice), print the directory, wait for `go`; then create a temp file there (mode 600,
//   exclusively, under a random name svcd chose, so its cleanup trap is set before the file
//   exists; `cat` writes to the shell's descriptor of it, never re-creating it after a cleanup),
//   copy stdin into it, and wait for `commit` (sent after the request body ended cleanly) before
//   fsync, owner and mode, rename over the target and fsync of the directory. A client that
//   disconnects mid-body gets no commit: the temp file is removed and the target is as it was.
// - Download: refuse a FIFO (its open would block), open the file on fd 4, print one metadata line
//   (size, mode, owner, group, type) read from the descriptor and the descriptor's real path, wait
//   for `go`, then `head -c <size>` streams exactly that many bytes.
// Each child runs in its own process group, killed whole when the request ends early; one that has
// not printed its header within OPEN_DEADLINE_MS (a file swapped for a FIFO after the check, a
// hung mount) is killed: nothing outlives its request.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '@svc/protocol';
import type { OsIdentity } from '../privilege/os-user.ts';
import { signalGroup } from '../privilege/signals.ts';
import type { UserSwitch } from '../privilege/user-switch.ts';
import type { FileAttributes } from './file-policy.ts';

export interface FileMeta {
  size: number;
  /** Permission bits. */
  mode: number;
  user: string;
  group: string;
}

/** What a transfer acts on: the caller's path, and the policy applied to its real path. */
export interface TransferTarget {
  /** Absolute, checked by filePathOf (no `.`/`..` segments, no control characters). */
  readonly path: string;
  /** Throws (an SvcError) to refuse the real path the execution user resolved. */
  allow(realPath: string): void;
}

/** How long the child may take to open what it transfers and say what it is. */
export const OPEN_DEADLINE_MS = 10_000;
/** Bound of a header (a real path of at most PATH_MAX and one metadata line). */
const MAX_HEADER_BYTES = 8192;

// Why an open or cd of $1 failed, as open(2) would say it, found as the user: 16 when a component
// is missing behind searchable directories (ENOENT), else 10 (EACCES; also a symbolic link whose
// target cannot be reached).
const WHY = `
why() {
  p= rest=\${1#/}
  while :; do
    c=\${rest%%/*}
    [ -x "\${p:-/}" ] || return 10
    p=$p/$c
    [ -L "$p" ] && ! [ -e "$p" ] && return 10
    [ -e "$p" ] || return 16
    [ "$c" = "$rest" ] && return 10
    rest=\${rest#*/}
  done
}
`;

const UPLOAD_SCRIPT = `${WHY}
dir=$1 name=$2 mode=$3 owner=$4 tmp=$5
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 1' TERM INT HUP
cd -P -- "$dir" 2>/dev/null || { why "$dir"; exit $?; }
real=$(pwd -P; echo x) || exit 11
printf '%s\\0' "\${real%?x}"
IFS= read -r verdict <&3 || verdict=
[ "$verdict" = go ] || exit 20
[ -e "$name" ] && [ ! -f "$name" ] && exit 15
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
  if [ -f "$name" ]; then mode=$(stat -c %a -- "$name") || exit 13; else mode=644; fi
fi
chmod -- "$mode" "$tmp" || exit 13
[ -d "$name" ] && [ ! -L "$name" ] && exit 15
mv -f -T -- "$tmp" "$name" || exit 14
trap - EXIT
sync -- . 2>/dev/null
stat -c '%s %a %U %G' -- "$name"
`;

const DOWNLOAD_SCRIPT = `${WHY}
[ -p "$1" ] && exit 12
command exec 4< "$1" 2>/dev/null || { why "$1"; exit $?; }
meta=$(stat -L -c '%s %a %U %G %F' /dev/fd/4) || exit 11
case "$meta" in *' regular file') ;; *) exit 12 ;; esac
real=$(readlink /proc/self/fd/4; echo x) || exit 11
printf '%s\\n%s\\0' "$meta" "\${real%?x}"
IFS= read -r verdict <&3 || verdict=
[ "$verdict" = go ] || exit 20
exec head -c "\${meta%% *}" <&4
`;

/** Errors by the scripts' exit codes (stderr is never shown to the client: it may name other paths). */
function failure(code: number | null, what: 'upload' | 'download', user: string): SvcError {
  switch (code) {
    case 10:
      return new SvcError(
        'forbidden',
        `${what}: ${user} may not ${what === 'upload' ? 'create files in that directory' : 'read that file'}`,
      );
    case 12:
      return what === 'upload'
        ? new SvcError('forbidden', `${what}: ${user} may not give the file that owner`)
        : new SvcError('bad_request', `${what}: not a regular file`);
    case 13:
      return new SvcError('forbidden', `${what}: cannot set the file mode`);
    case 14:
    case 15:
      return new SvcError(
        'conflict',
        `${what}: cannot replace the target (not a regular file, or not writable)`,
      );
    case 16:
      return new SvcError('not_found', 'no such file or directory');
    default:
      return new SvcError('internal', `${what} failed (exit ${code ?? 'signal'})`);
  }
}

interface Transfer {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** fd 3 of the script: `go` once its real path is allowed, then (upload) `commit`. */
  readonly verdict: Writable;
  /** Kill the whole process group: the shell and whatever it started. */
  readonly kill: () => void;
}

function start(
  users: UserSwitch,
  user: OsIdentity | undefined,
  script: string,
  args: string[],
  stdin: boolean,
): Transfer {
  let child: ChildProcess;
  try {
    ({ child } = users.spawn(user, {
      file: '/bin/sh',
      args: ['-c', script, 'svc-file', ...args],
      cwd: '/',
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LC_ALL: 'C' },
      detached: true,
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'ignore', 'pipe'],
    }));
  } catch (cause) {
    throw new SvcError('forbidden', (cause as Error).message, { cause });
  }
  const verdict = child.stdio[3] as Writable;
  verdict.on('error', () => undefined);
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('close', (code) => resolve(code));
  });
  return {
    child,
    exited,
    verdict,
    kill: () => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null)
        signalGroup(child.pid, 'SIGKILL');
    },
  };
}

/**
 * The script's header: everything up to its first NUL (bounded), within OPEN_DEADLINE_MS; the bytes
 * after it are pushed back onto stdout. Undefined when the script ended (or was killed) first.
 */
async function readHeader(transfer: Transfer): Promise<string | undefined> {
  const stdout = transfer.child.stdout as Readable;
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const done = (): void => {
      clearTimeout(timer);
      stdout.off('data', onData);
      stdout.off('end', onEnd);
    };
    const timer = setTimeout(() => {
      done();
      transfer.kill();
      reject(new SvcError('conflict', `the file could not be opened within ${OPEN_DEADLINE_MS} ms`));
    }, OPEN_DEADLINE_MS);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(0);
      if (end !== -1) {
        done();
        stdout.pause();
        if (end + 1 < buffered.length) stdout.unshift(buffered.subarray(end + 1));
        resolve(buffered.subarray(0, end).toString('utf8'));
      } else if (buffered.length > MAX_HEADER_BYTES) {
        done();
        transfer.kill();
        reject(new SvcError('internal', 'file transfer: header too long'));
      }
    };
    const onEnd = (): void => {
      done();
      resolve(undefined);
    };
    stdout.on('data', onData);
    stdout.once('end', onEnd);
  });
}

/** Apply `allow` to the real path, and tell the script; a refusal kills it. */
function decide(transfer: Transfer, target: TransferTarget, realPath: string): void {
  try {
    target.allow(realPath);
  } catch (error) {
    transfer.kill();
    throw error;
  }
  transfer.verdict.write('go\n');
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
 * Write `source` to `target.path` as `user` (undefined = the daemon's user), atomically. Resolves
 * with the new file's attributes.
 */
export async function uploadAs(
  users: UserSwitch,
  user: OsIdentity | undefined,
  target: TransferTarget & { attributes: FileAttributes },
  source: NodeJS.ReadableStream | Uint8Array,
): Promise<FileMeta> {
  const { mode, owner } = target.attributes;
  const name = basename(target.path);
  // In the target's directory, under a name svcd chooses (so it can remove the file itself below).
  const temp = `.svc-upload.${randomBytes(12).toString('hex')}`;
  const who = user?.user ?? 'the daemon';
  const transfer = start(
    users,
    user,
    UPLOAD_SCRIPT,
    [
      dirname(target.path),
      name,
      mode === undefined ? '' : mode.toString(8),
      owner === undefined ? '' : `${owner.user}:${owner.group}`,
      temp,
    ],
    true,
  );
  const { child, exited, verdict } = transfer;
  child.stdin!.on('error', () => undefined);
  // The body flows from the start (the script reads stdin only after `go`: until then the pipe's
  // buffer holds it), so that a client gone at any moment is seen at once.
  const input = source instanceof Uint8Array ? [source] : source;
  let cut: unknown;
  const piped = pipeline(input as AsyncIterable<Uint8Array>, child.stdin!).catch((cause: unknown) => {
    cut = cause ?? new Error('the request body failed');
    // No commit: the script ends (its EXIT trap removes the temp file) and the target is as it was.
    verdict.destroy();
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
      signalGroup(child.pid, 'SIGTERM');
  });
  const spawnError = new Promise<void>((resolve) => child.once('error', () => resolve()));
  let realDir: string | undefined;
  try {
    realDir = await readHeader(transfer);
    if (realDir !== undefined && cut === undefined) decide(transfer, target, join(realDir, name));
  } catch (error) {
    transfer.kill();
    throw error;
  }
  const output = readAll(child.stdout!, 4096);
  if (cut === undefined && realDir !== undefined) await Promise.race([piped, spawnError]);
  if (cut !== undefined || realDir === undefined || child.exitCode !== null) {
    const code = await exited;
    // The shell's EXIT trap removes its temp file, but a SIGTERM that lands while the trap's `rm`
    // runs ends the shell before that `rm` has finished: remove it here as well, once the shell is
    // gone. Only the file of this random name; unlink never follows a symbolic link.
    if (realDir !== undefined) await unlink(join(realDir, temp)).catch(() => undefined);
    if (cut === undefined || (code !== null && code !== 1 && code !== 20)) throw failure(code, 'upload', who);
    throw new SvcError('bad_request', 'upload: the request body ended early; nothing was written', {
      cause: cut,
    });
  }
  verdict.end('commit\n');
  const code = await exited;
  if (code !== 0) throw failure(code, 'upload', who);
  return parseMeta(await output);
}

/**
 * Open `target.path` for reading as `user`. Resolves once the file is open and allowed, with its
 * attributes and a stream of exactly `size` bytes; `cancel` ends the child early (client gone).
 */
export async function downloadAs(
  users: UserSwitch,
  user: OsIdentity | undefined,
  target: TransferTarget,
): Promise<{ meta: FileMeta; stream: Readable; cancel: () => void }> {
  const transfer = start(users, user, DOWNLOAD_SCRIPT, [target.path], false);
  let header: string | undefined;
  try {
    header = await readHeader(transfer);
    if (header === undefined) throw failure(await transfer.exited, 'download', user?.user ?? 'the daemon');
    const newline = header.indexOf('\n');
    decide(transfer, target, header.slice(newline + 1));
    header = header.slice(0, newline);
  } catch (error) {
    transfer.kill();
    throw error;
  }
  const stream = transfer.child.stdout as Readable;
  // A reader that goes away (the client disconnected) ends the child with it.
  stream.once('close', transfer.kill);
  return { meta: parseMeta(header), stream, cancel: transfer.kill };
}
