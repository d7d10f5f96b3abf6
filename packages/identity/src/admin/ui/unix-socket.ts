// Binding the administration UI to a Unix socket that only its owner can connect to (issue 12
// item 5: on TCP any local user reaches the UI, sets an admin's password and runs commands as root).
//   - the socket file is created with umask 0177 (mode 0600 from the first instant, no chmod race);
//   - a stale socket of an earlier run (nothing accepts on it) is replaced; a live one, or any other
//     kind of file at the path, is refused;
//   - the parent directory is created 0700 when missing.
import { lstat, mkdir, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import type { Server } from 'node:http';
import { dirname } from 'node:path';

/** Whether something accepts connections on the socket at `path`. */
function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect({ path });
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

async function clearStale(path: string): Promise<void> {
  const info = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (info === undefined) return;
  if (!info.isSocket())
    throw new Error(`SVC_AUTH_ADMIN_LISTEN: ${path} exists and is not a socket; not replaced`);
  if (await socketIsLive(path))
    throw new Error(`SVC_AUTH_ADMIN_LISTEN: ${path} is in use by another process`);
  await unlink(path);
}

export async function listenUnixSocket(server: Server, path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await clearStale(path);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The bind happens inside listen(): the umask applies to the socket file it creates.
    const previous = process.umask(0o177);
    try {
      server.listen({ path, readableAll: false, writableAll: false }, () => {
        server.off('error', reject);
        resolve();
      });
    } finally {
      process.umask(previous);
    }
  });
  const info = await lstat(path);
  if ((info.mode & 0o077) !== 0) {
    server.close();
    throw new Error(
      `SVC_AUTH_ADMIN_LISTEN: ${path} was created with mode ${(info.mode & 0o777).toString(8)}`,
    );
  }
}
