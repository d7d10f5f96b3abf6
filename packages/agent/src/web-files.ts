// The web UI hook: static files of packages/web/dist at `/` (the web UI package does not exist yet;
// once its build writes that folder the agent serves it without a change here). Only plain relative
// names reach this file (routes.ts); the resolved real path must still lie inside the root, so a
// symbolic link cannot lead out of it either.
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, sep } from 'node:path';
import { SvcError } from '@svc/protocol';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * Serves `file` (a plain relative name) from `root`, or throws SvcError('not_found'). Files under
 * `assets/` carry content hashes in their names (the usual bundler layout) and may be cached for a
 * year; everything else, index.html above all, is revalidated on each use.
 */
export async function serveWebFile(
  root: string,
  file: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (cause) {
    throw new SvcError('not_found', 'the web UI is not installed (packages/web/dist does not exist)', {
      cause,
    });
  }
  let path: string;
  let size: number;
  let modified: Date;
  try {
    path = await realpath(join(realRoot, file));
    if (!path.startsWith(realRoot + sep)) throw new Error('outside the web root');
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a file');
    size = info.size;
    modified = info.mtime;
  } catch (cause) {
    throw new SvcError('not_found', `no web UI file ${JSON.stringify(file.slice(0, 200))}`, { cause });
  }
  res.writeHead(200, {
    'content-type': CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream',
    'content-length': size,
    'last-modified': modified.toUTCString(),
    'cache-control': file.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(path);
  stream.once('error', () => res.destroy());
  stream.pipe(res);
}
