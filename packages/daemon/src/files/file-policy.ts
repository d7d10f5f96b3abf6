// What POST /svc/file/upload and GET /svc/file/download accept (App Mesh 3.0's headers) and which
// paths they may reach. Pure: no file system access; the caller resolves symbolic links first and
// passes the real path, so a link cannot lead a transfer out of what this policy allows.
//
// Policy, in order (docs/decisions.md, "File transfer"):
// 1. `X-File-Path` (percent-encoded, as the SDKs send it) is an absolute path without NUL, control
//    characters, `.` or `..` segments, at most 4096 bytes.
// 2. When `BaseConfig.FileTransferRoots` is configured, the real path must lie inside one of them.
// 3. The daemon's own files (SVC_HOME/work and the install root) are refused to every caller that
//    is not an administrator (role svc-admin), whatever its OS user could read.
// 4. The transfer itself runs as the caller's execution user, so the OS refuses what that user may
//    not read or write.
import { posix } from 'node:path';
import { SvcError } from '@svc/protocol';

export const MAX_FILE_PATH_BYTES = 4096;
const OWNER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/;

export interface FileAttributes {
  /** Permission bits 0..0o777 (X-File-Mode is decimal, as the SDKs send `st_mode & 0o777`). */
  mode?: number;
  /** X-File-User and X-File-Group (names or numeric ids), applied together. */
  owner?: { user: string; group: string };
}

/** The decoded, checked `X-File-Path` of a request. */
export function filePathOf(headers: Readonly<Record<string, string>>): string {
  const raw = headers['x-file-path'];
  if (raw === undefined || raw === '')
    throw new SvcError('bad_request', 'the X-File-Path header is required');
  if (raw.length > MAX_FILE_PATH_BYTES * 3) throw new SvcError('bad_request', 'X-File-Path: too long');
  let path: string;
  try {
    path = decodeURIComponent(raw);
  } catch (cause) {
    throw new SvcError('bad_request', 'X-File-Path: not valid percent-encoding', { cause });
  }
  if (Buffer.byteLength(path) > MAX_FILE_PATH_BYTES)
    throw new SvcError('bad_request', `X-File-Path: longer than ${MAX_FILE_PATH_BYTES} bytes`);
  // eslint-disable-next-line no-control-regex -- the point is to find control characters
  if (/[\u0000-\u001f\u007f]/.test(path))
    throw new SvcError('bad_request', 'X-File-Path: contains NUL or control characters');
  if (!path.startsWith('/')) throw new SvcError('bad_request', 'X-File-Path: must be an absolute path');
  const segments = path.split('/');
  if (segments.some((s) => s === '..' || s === '.'))
    throw new SvcError('bad_request', 'X-File-Path: "." and ".." segments are not allowed');
  const normal = posix.normalize(path);
  if (normal === '/' || normal.endsWith('/'))
    throw new SvcError('bad_request', 'X-File-Path: must name a file, not a directory');
  return normal;
}

/** X-File-Mode / X-File-User / X-File-Group of an upload. */
export function attributesOf(headers: Readonly<Record<string, string>>): FileAttributes {
  const attributes: FileAttributes = {};
  const mode = headers['x-file-mode'];
  if (mode !== undefined && mode !== '') {
    if (!/^[0-9]{1,4}$/.test(mode) || Number(mode) > 0o777)
      throw new SvcError(
        'bad_request',
        'X-File-Mode: a decimal number 0..511 (permission bits, st_mode & 0o777)',
      );
    attributes.mode = Number(mode);
  }
  const user = headers['x-file-user'];
  const group = headers['x-file-group'];
  if ((user ?? '') !== '' || (group ?? '') !== '') {
    if (user === undefined || group === undefined || user === '' || group === '')
      throw new SvcError('bad_request', 'X-File-User and X-File-Group go together');
    if (!OWNER_NAME.test(user)) throw new SvcError('bad_request', 'X-File-User: not a user name or id');
    if (!OWNER_NAME.test(group)) throw new SvcError('bad_request', 'X-File-Group: not a group name or id');
    attributes.owner = { user, group };
  }
  return attributes;
}

export interface TransferPolicy {
  /** Real paths of the daemon's own trees (SVC_HOME/work, the install root). */
  readonly protectedRoots: readonly string[];
  /** `BaseConfig.FileTransferRoots` (real paths); empty = no allow-list. */
  readonly allowedRoots: readonly string[];
}

function inside(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

/** Throws 403 when `realPath` (symbolic links resolved) is out of bounds for this caller. */
export function checkTransferPath(realPath: string, policy: TransferPolicy, administrator: boolean): void {
  if (policy.allowedRoots.length > 0 && !policy.allowedRoots.some((root) => inside(realPath, root)))
    throw new SvcError('forbidden', 'the path is outside the directories file transfers may reach');
  if (!administrator && policy.protectedRoots.some((root) => inside(realPath, root)))
    throw new SvcError(
      'forbidden',
      "the path is inside the daemon's own files; only an administrator may transfer them",
    );
}
