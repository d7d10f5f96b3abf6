#!/usr/bin/env -S node --max-semi-space-size=1
// svcd launcher, the only way svcd runs (`npm start`, `npx svcd`, the testkit, the bench, CI): it
// runs the esbuild bundle of bin/svcd.ts (packages/daemon/dist/svcd.mjs), rebuilding it first when
// any of its sources is newer (build/bundle.js), so the bundle can never be stale. Plain JavaScript:
// running the TypeScript sources directly would load Node's type stripper (~37 MiB resident).
import { pathToFileURL } from 'node:url';
import { ensureBundle } from '../build/bundle.js';

await import(pathToFileURL(ensureBundle()).href);
