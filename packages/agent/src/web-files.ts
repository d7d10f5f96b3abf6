// The web UI: static files of packages/web/dist at `/` (built by packages/web at install time).
// Only plain relative names reach this file (routes.ts); the resolved real path must still lie inside the root, so a
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
 * Security headers of every web UI file: scripts and styles only from the agent's origin (the build
 * writes no inline script or style), connections only back to it (REST, WSS), never framed.
 */
export const WEB_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
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
  const headers = {
    ...WEB_SECURITY_HEADERS,
    'content-type': CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream',
    'last-modified': modified.toUTCString(),
    'cache-control': file.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
  };
  // Revalidation (index.html is `no-cache`): unchanged since the browser's copy → 304, no body.
  const since = Date.parse(req.headers['if-modified-since'] ?? '');
  if (!Number.isNaN(since) && Math.floor(modified.getTime() / 1000) * 1000 <= since) {
    res.writeHead(304, headers).end();
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': size });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(path);
  stream.once('error', () => res.destroy());
  stream.pipe(res);
}
