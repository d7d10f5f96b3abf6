#!/usr/bin/env -S node --max-semi-space-size=1
// svc-auth-admin launcher (apps/authadmin.yaml, script/svc-auth.sh admin-ui): runs the esbuild
// bundle of bin/svc-auth-admin.ts (packages/platform/dist/svc-auth-admin.mjs, built together with
// svcd's), rebuilding it first when any of its sources is newer. Plain JavaScript: running the
// TypeScript sources directly would load Node's type stripper (~37 MiB resident).
// Builtins through `require`, never an ES import (platform's build/bundle.js says why).
import { createRequire } from 'node:module';
import { BUNDLES, ensureBundle } from '@svc/platform/bundle';

/** @type {typeof import('node:url')} */
const { pathToFileURL } = createRequire(import.meta.url)('node:url');

ensureBundle();
await import(pathToFileURL(BUNDLES['svc-auth-admin'].file).href);
