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
  const type = extname(path).toLowerCase();
  const compressible = COMPRESSIBLE.has(type);
  const headers: Record<string, string> = {
    ...WEB_SECURITY_HEADERS,
    'content-type': CONTENT_TYPES[type] ?? 'application/octet-stream',
    'last-modified': modified.toUTCString(),
    'cache-control': file.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    ...(compressible ? { vary: 'accept-encoding' } : {}),
  };
  // Revalidation (index.html is `no-cache`): unchanged since the browser's copy → 304, no body.
  const since = Date.parse(req.headers['if-modified-since'] ?? '');
  if (!Number.isNaN(since) && Math.floor(modified.getTime() / 1000) * 1000 <= since) {
    res.writeHead(304, headers).end();
    return;
  }
  // The build writes <file>.br and <file>.gz beside each text file; send one the browser accepts.
  const encoded = compressible ? await precompressed(path, req.headers['accept-encoding']) : undefined;
  if (encoded !== undefined) {
    headers['content-encoding'] = encoded.encoding;
    path = encoded.path;
    size = encoded.size;
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

/** Types the build writes precompressed copies of (scripts/build.ts). */
const COMPRESSIBLE: ReadonlySet<string> = new Set([
  '.html',
  '.js',
  '.mjs',
  '.css',
  '.json',
  '.svg',
  '.map',
  '.txt',
]);

/** Content codings in the order we prefer them, with the suffix of their precompressed file. */
const CODINGS = [
  { encoding: 'br', suffix: '.br' },
  { encoding: 'gzip', suffix: '.gz' },
] as const;

/**
 * The content codings an Accept-Encoding header allows (RFC 9110 §12.5.3): listed with a q above 0,
 * or covered by `*` with a q above 0 and not listed with q=0. Malformed parts are ignored.
 */
export function acceptedCodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  if (header === undefined) return accepted;
  const refused = new Set<string>();
  let wildcard = false;
  for (const part of header.slice(0, 1024).split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (name === '' || Number.isNaN(weight)) continue;
    if (name === '*') wildcard = weight > 0;
    else if (weight > 0) accepted.add(name);
    else refused.add(name);
  }
  if (wildcard) for (const { encoding } of CODINGS) if (!refused.has(encoding)) accepted.add(encoding);
  return accepted;
}

/** The precompressed copy of `path` to send for this Accept-Encoding, if the build wrote one. */
async function precompressed(
  path: string,
  acceptEncoding: string | undefined,
): Promise<{ encoding: string; path: string; size: number } | undefined> {
  const accepted = acceptedCodings(acceptEncoding);
  for (const { encoding, suffix } of CODINGS) {
    if (!accepted.has(encoding)) continue;
    try {
      const info = await stat(path + suffix);
      if (info.isFile()) return { encoding, path: path + suffix, size: info.size };
    } catch {
      // no copy in this coding: try the next one
    }
  }
  return undefined;
}
