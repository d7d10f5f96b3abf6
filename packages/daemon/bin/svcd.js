#!/usr/bin/env -S node --max-semi-space-size=1
// svcd launcher, the only way svcd runs (`npm start`, `npx svcd`, the testkit, the bench, CI): it
// runs the esbuild bundle of bin/svcd.ts (packages/platform/dist/svcd.mjs), rebuilding it first when
// any of its sources is newer (@svc/platform/bundle), so the bundle can never be stale. Plain JavaScript:
// running the TypeScript sources directly would load Node's type stripper (~37 MiB resident).
// `process` is the global and builtins come through `require` (platform's build/bundle.js says why).
import { createRequire } from 'node:module';
/* global process -- the global, not an ES import of node:process */
import { ensureBundle } from '@svc/platform/bundle';

/** @type {typeof import('node:url')} */
const { pathToFileURL } = createRequire(import.meta.url)('node:url');

// glibc gives each thread that allocates its own malloc arena (libuv's pool, V8's workers): with
// two arenas svcd holds ~4 MiB less at 200 apps (91.5 -> 87.9 MiB RSS, 38.5 -> 34.9 MiB anonymous;
// every spawn copies the page tables of that anonymous memory). glibc reads the variable once, at
// start-up, so the launcher replaces its own image (same pid, same stdio) once with it set, unless
// the operator chose a value. The marker keeps it from reaching managed processes.
const MARKER = 'SVC_LAUNCHER_MALLOC_ARENA_MAX';
if (process.env[MARKER] === '1') {
  delete process.env[MARKER];
  delete process.env['MALLOC_ARENA_MAX'];
} else if (process.env['MALLOC_ARENA_MAX'] === undefined && typeof process.execve === 'function') {
  try {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
      ...process.env,
      MALLOC_ARENA_MAX: '2',
      [MARKER]: '1',
    });
  } catch {
    // Not replaced (unsupported platform or exec refused): run as is.
  }
}

await import(pathToFileURL(ensureBundle()).href);
