#!/usr/bin/env -S node --max-semi-space-size=1
// svc-identity launcher (apps/identity.yaml; the npm bin): runs the esbuild bundle of
// bin/svc-identity.ts (packages/daemon/dist/svc-identity.mjs, built together with svcd's), rebuilding
// it first when any of its sources is newer. Plain JavaScript, like svcd's launcher: running the
// TypeScript sources directly would load Node's type stripper (~37 MiB resident) into a process
// every builtin-mode daemon runs.
import { pathToFileURL } from 'node:url';
import { BUNDLES, ensureBundle } from '../../daemon/build/bundle.js';

ensureBundle();
await import(pathToFileURL(BUNDLES['svc-identity'].file).href);
