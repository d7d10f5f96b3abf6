#!/usr/bin/env -S node --max-semi-space-size=1
// svc-identity launcher (apps/identity.yaml; the npm bin): runs the esbuild bundle of
// bin/svc-identity.ts (packages/platform/dist/svc-identity.mjs, built together with svcd's), rebuilding
// it first when any of its sources is newer. Plain JavaScript, like svcd's launcher: running the
// TypeScript sources directly would load Node's type stripper (~37 MiB resident) into a process
// every builtin-mode daemon runs.
// Builtins through `require`, never an ES import (platform's build/bundle.js says why).
import { createRequire } from 'node:module';
import { BUNDLES, ensureBundle } from '@svc/platform/bundle';

/** @type {typeof import('node:url')} */
const { pathToFileURL } = createRequire(import.meta.url)('node:url');

ensureBundle();
await import(pathToFileURL(BUNDLES['svc-identity'].file).href);
