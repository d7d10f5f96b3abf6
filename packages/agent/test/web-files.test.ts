// The web UI hook against a real folder: content types, cache headers, HEAD, and nothing outside
// the root (symbolic links, directories, missing files) — served by a real HTTP server.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { routeOf } from '../src/routes.ts';
import { serveWebFile } from '../src/web-files.ts';

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
