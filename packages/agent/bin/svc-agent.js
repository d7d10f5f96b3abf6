#!/usr/bin/env -S node --max-semi-space-size=1
// svc-agent launcher (apps/agent.yaml; `npx svc-agent`): runs the esbuild bundle of bin/svc-agent.ts
// (packages/platform/dist/svc-agent.mjs, built together with svcd's), rebuilding it first when any of
// its sources is newer. Plain JavaScript, like svcd's launcher: running the TypeScript sources
// directly would load Node's type stripper (~37 MiB resident) into a process every daemon runs.
// Builtins through `require`, never an ES import (platform's build/bundle.js says why).
import { createRequire } from 'node:module';
import { AGENT_BUNDLE, ensureBundle } from '@svc/platform/bundle';

/** @type {typeof import('node:url')} */
const { pathToFileURL } = createRequire(import.meta.url)('node:url');

ensureBundle();
await import(pathToFileURL(AGENT_BUNDLE).href);
