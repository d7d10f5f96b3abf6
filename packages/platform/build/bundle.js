// Where svcd's bundle lives and whether it is current. Plain JavaScript with no dependency, so that
// the launcher (bin/svcd.js) can check freshness without loading a compiler or the type stripper.
//
// dist/svcd.meta.json lists the bundle's own inputs (every source file under packages/*, the build
// script, the lockfiles) and the time its build started. The bundle is stale when that file is
// missing or any listed input is missing or was modified after that time; then `ensureBundle()`
// rebuilds it in a child process (build.js, esbuild) before returning.
//
// Node's builtins through `require` and `process` as the global, never an ES import: the launchers
// run in svcd's own process, and an ES import of a builtin builds its namespace, which runs every
// lazy getter (`import process from 'node:process'` alone creates stdin and loads readline: ~4 MiB
// resident in a bare Node).
import { createRequire } from 'node:module';
/* global process -- the global, not an ES import of node:process */

const require = createRequire(import.meta.url);
/** @type {typeof import('node:child_process')} */
const { spawnSync } = require('node:child_process');
/** @type {typeof import('node:fs')} */
const { readFileSync, statSync } = require('node:fs');
/** @type {typeof import('node:path')} */
const { join, resolve } = require('node:path');

/** The repository root (packages/platform/build → three levels up). */
export const REPO_ROOT = resolve(import.meta.dirname, '../../..');
export const DIST_DIR = resolve(import.meta.dirname, '../dist');
export const META = join(DIST_DIR, 'svcd.meta.json');
/** Every bundle, built in one run (build.js) and covered by the same metadata: name → entry, file. */
export const BUNDLES = {
  svcd: { entry: 'packages/daemon/bin/svcd.ts', file: join(DIST_DIR, 'svcd.mjs') },
  'svc-agent': { entry: 'packages/agent/bin/svc-agent.ts', file: join(DIST_DIR, 'svc-agent.mjs') },
  // The agent's /mcp (the MCP SDK), imported by svc-agent.mjs on the first request to /mcp.
  'svc-agent-mcp': { entry: 'packages/mcp/src/index.ts', file: join(DIST_DIR, 'svc-agent-mcp.mjs') },
  'svc-identity': {
    entry: 'packages/identity/bin/svc-identity.ts',
    file: join(DIST_DIR, 'svc-identity.mjs'),
  },
  'svc-auth-admin': {
    entry: 'packages/identity/bin/svc-auth-admin.ts',
    file: join(DIST_DIR, 'svc-auth-admin.mjs'),
  },
};
export const BUNDLE = BUNDLES.svcd.file;
/** svc-agent's bundle (bin/svc-agent.js). */
export const AGENT_BUNDLE = BUNDLES['svc-agent'].file;

/** Why the bundle must be rebuilt, or undefined when it is current. */
export function staleReason() {
  let meta;
  try {
    meta = JSON.parse(readFileSync(META, 'utf8'));
    for (const { file } of Object.values(BUNDLES)) statSync(file);
  } catch {
    return 'no bundle yet';
  }
  for (const input of meta.inputs) {
    let mtime;
    try {
      mtime = statSync(join(REPO_ROOT, input)).mtimeMs;
    } catch {
      return `${input} is gone`;
    }
    if (mtime > meta.startedAt) return `${input} changed`;
  }
  return undefined;
}

/** The bundle's path, rebuilt first (synchronously, in a child process) when stale. */
export function ensureBundle() {
  const reason = staleReason();
  if (reason === undefined) return BUNDLE;
  const result = spawnSync(process.execPath, [join(import.meta.dirname, 'build.js')], {
    stdio: ['ignore', 2, 2],
    env: { ...process.env, SVC_BUILD_REASON: reason },
  });
  if (result.status !== 0) {
    throw new Error(`building ${BUNDLE} failed (${reason}): exit ${result.status ?? result.signal}`);
  }
  return BUNDLE;
}
