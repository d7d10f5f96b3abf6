// The web UI hook against a real folder: content types, cache headers, HEAD, and nothing outside
// the root (symbolic links, directories, missing files) — served by a real HTTP server.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, get, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { routeOf } from '../src/routes.ts';
import { acceptedCodings, serveWebFile } from '../src/web-files.ts';

let dir: string;
let server: Server;
let base: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-web-'));
  const root = join(dir, 'dist');
  await mkdir(join(root, 'assets'), { recursive: true });
  await writeFile(join(root, 'index.html'), '<!doctype html><title>svc</title>');
  await writeFile(join(root, 'assets', 'app-3f2a.js'), 'console.log(1)');
  await writeFile(join(root, 'logo.svg'), '<svg/>');
  await writeFile(join(root, 'assets', 'app-3f2a.js.br'), 'BROTLI');
  await writeFile(join(root, 'assets', 'app-3f2a.js.gz'), 'GZIP!!');
  await writeFile(join(root, 'assets', 'gz-only-77aa.js'), 'console.log(2)');
  await writeFile(join(root, 'assets', 'gz-only-77aa.js.gz'), 'GZIP');
  await writeFile(join(dir, 'secret.txt'), 'outside the root');
  await symlink(join(dir, 'secret.txt'), join(root, 'leak.txt'));
  server = createServer((req, res) => {
    const route = routeOf(req.method ?? 'GET', req.url ?? '/');
    const fail = (error: SvcError): void => {
      res.writeHead(error.status, { 'content-type': 'application/json' }).end(JSON.stringify(error.toBody()));
    };
    if (route.to !== 'web') {
      fail(new SvcError('not_found', 'not a web path'));
      return;
    }
    serveWebFile(root, route.file, req, res).catch(fail);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

describe('web UI files', () => {
  it('serves index.html at / (revalidated) and hashed assets for a year, with their types', async () => {
    const index = await fetch(`${base}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('last-modified')).toBeTruthy();
    expect(await index.text()).toContain('<title>svc</title>');
    const asset = await fetch(`${base}/assets/app-3f2a.js`);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(`${base}/logo.svg`)).headers.get('content-type')).toBe('image/svg+xml');
    const head = await fetch(`${base}/index.html`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('33');
    expect(await head.text()).toBe('');
  });

  it('sends a strict Content-Security-Policy (self only, no inline, never framed) on every file', async () => {
    for (const path of ['/', '/assets/app-3f2a.js']) {
      const res = await fetch(`${base}${path}`);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it('answers a revalidation of an unchanged file with 304 and no body, a stale one with 200', async () => {
    const first = await fetch(`${base}/`);
    const modified = first.headers.get('last-modified')!;
    const again = await fetch(`${base}/`, { headers: { 'if-modified-since': modified } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const stale = await fetch(`${base}/`, { headers: { 'if-modified-since': new Date(0).toUTCString() } });
    expect(stale.status).toBe(200);
    const garbage = await fetch(`${base}/`, { headers: { 'if-modified-since': 'not a date' } });
    expect(garbage.status).toBe(200);
  });

  it('serves nothing outside the root: symbolic links, directories, missing files, traversal', async () => {
    for (const path of ['/leak.txt', '/assets', '/nosuch.js', '/../secret.txt', '/%2e%2e/secret.txt']) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(404);
      const body = (await r.json()) as { error: string; message: string };
      expect(body.error, path).toBe('not_found');
      expect(body.message, path).not.toContain('outside the root');
    }
  });
});

/** One GET without fetch's automatic decompression: the status, headers and raw body bytes. */
function rawGet(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    get(`${base}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    }).on('error', reject);
  });
}

describe('no web UI installed', () => {
  it('answers every web path with a clear 404 when the build folder does not exist', async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const missing = createServer((req, response) => {
        serveWebFile(join(dir, 'no-such-dist'), 'index.html', req, response).catch((error: SvcError) =>
          response.writeHead(error.status).end(JSON.stringify(error.toBody())),
        );
      });
      missing.listen(0, '127.0.0.1', () => {
        get(`http://127.0.0.1:${(missing.address() as AddressInfo).port}/`, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (chunk: Buffer) => chunks.push(chunk));
          r.on('end', () => {
            missing.close();
            resolve({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
          });
        }).on('error', reject);
      });
    });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toEqual({
      error: 'not_found',
      message: 'the web UI is not installed (packages/web/dist does not exist)',
    });
  });
});

describe('precompressed web UI files', () => {
  it('sends the brotli copy to a browser that accepts br, gzip to one that accepts only gzip, identity otherwise', async () => {
    const br = await rawGet('/assets/app-3f2a.js', { 'accept-encoding': 'gzip, deflate, br, zstd' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['content-length']).toBe('6');
    expect(br.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(br.headers.vary).toBe('accept-encoding');
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(br.body).toBe('BROTLI');
    const gz = await rawGet('/assets/app-3f2a.js', { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.body).toBe('GZIP!!');
    const plain = await rawGet('/assets/app-3f2a.js', {});
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('accept-encoding');
    expect(plain.body).toBe('console.log(1)');
    const refused = await rawGet('/assets/app-3f2a.js', { 'accept-encoding': 'br;q=0, gzip;q=0' });
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(refused.body).toBe('console.log(1)');
  });

  it('falls back to the next coding when a copy is missing, and leaves files without copies alone', async () => {
    const gz = await rawGet('/assets/gz-only-77aa.js', { 'accept-encoding': 'br, gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.body).toBe('GZIP');
    const html = await rawGet('/', { 'accept-encoding': 'br, gzip' });
    expect(html.headers['content-encoding']).toBeUndefined();
    expect(html.body).toContain('<title>svc</title>');
    const head = await fetch(`${base}/assets/app-3f2a.js`, {
      method: 'HEAD',
      headers: { 'accept-encoding': 'br' },
    });
    expect(head.headers.get('content-encoding')).toBe('br');
    expect(head.headers.get('content-length')).toBe('6');
  });

  it('reads Accept-Encoding as RFC 9110 says: q=0 refuses, * covers the rest, malformed and oversized parts are ignored', () => {
    expect([...acceptedCodings(undefined)]).toEqual([]);
    expect([...acceptedCodings('gzip, br')].sort()).toEqual(['br', 'gzip']);
    expect([...acceptedCodings('*')].sort()).toEqual(['br', 'gzip']);
    expect([...acceptedCodings('*, br;q=0')]).toEqual(['gzip']);
    expect([...acceptedCodings('*;q=0')]).toEqual([]);
    expect([...acceptedCodings('gzip;q=nonsense, ;;;, br;q=0.5')]).toEqual(['br']);
    expect([...acceptedCodings(`${'x,'.repeat(100_000)}br`)]).not.toContain('br');
  });
});
