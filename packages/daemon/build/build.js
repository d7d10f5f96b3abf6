// Builds svcd into one ES module, packages/daemon/dist/svcd.mjs, and svc-agent (a system application
// svcd starts) into packages/daemon/dist/svc-agent.mjs, with esbuild in one run: the TypeScript
// sources stay the source of truth, nothing generated is committed. One build and one metadata file
// for both, so that the launcher's freshness check covers the agent that svcd is about to start. Run by bundle.js when the
// bundle is stale (`node packages/daemon/build/build.js`), and by the tests' global setup.
//
// The bundle is written to a temp file and renamed into place, then its metadata (inputs and the
// build's start time, read by bundle.js) likewise, so concurrent builds and readers never see a
// partial file.
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { AGENT_BUNDLE, BUNDLE, DIST_DIR, META, REPO_ROOT } from './bundle.js';

/** Inputs outside the module graph that change what the build produces. */
const EXTRA_INPUTS = [
  'packages/daemon/build/build.js',
  'packages/daemon/package.json',
  'packages/agent/package.json',
  'package-lock.json',
  'node_modules/.package-lock.json',
];

export async function build() {
  // Margin for file systems whose timestamps lag the wall clock (coarse kernel clock): an edit made
  // while this build runs is always seen as newer than the build.
  const startedAt = Date.now() - 1000;
  const esbuild = await import('esbuild');
  mkdirSync(DIST_DIR, { recursive: true });
  const tempDir = join(DIST_DIR, `.tmp-${process.pid}`);
  const result = await esbuild.build({
    absWorkingDir: REPO_ROOT,
    entryPoints: { svcd: 'packages/daemon/bin/svcd.ts', 'svc-agent': 'packages/agent/bin/svc-agent.ts' },
    outdir: tempDir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
    // Whitespace and comments out, identifiers kept (readable stack traces): V8 keeps the whole
    // source text on the heap, two bytes per character once any comment holds a non-Latin-1 one.
    minifyWhitespace: true,
    minifySyntax: true,
    charset: 'ascii',
    // CommonJS dependencies call require(); an ES module has none of its own.
    banner: {
      js: "import { createRequire as __svcCreateRequire } from 'node:module';\nconst require = __svcCreateRequire(import.meta.url);",
    },
    // etcd3 (cluster mode, imported on demand) loads its gRPC protocol file from its own directory
    // at run time: it stays a package resolved from node_modules, not bundled.
    external: ['etcd3'],
    // config.ts: INSTALL_ROOT is this path from the bundle's directory (packages/daemon/dist; both
    // bundles are written there).
    define: { SVC_INSTALL_ROOT_FROM_MODULE: JSON.stringify(relative(DIST_DIR, REPO_ROOT)) },
  });
  const inputs = Object.keys(result.metafile.inputs).filter((input) => !input.includes('node_modules/'));
  inputs.push(...EXTRA_INPUTS.filter((input) => existsSync(join(REPO_ROOT, input))));
  renameSync(join(tempDir, 'svc-agent.mjs'), AGENT_BUNDLE);
  renameSync(join(tempDir, 'svcd.mjs'), BUNDLE);
  rmSync(tempDir, { recursive: true, force: true });
  const metaTemp = join(DIST_DIR, `.tmp-${process.pid}-svcd.meta.json`);
  writeFileSync(metaTemp, JSON.stringify({ startedAt, inputs }, null, 1) + '\n');
  renameSync(metaTemp, META);
  return BUNDLE;
}

if (import.meta.filename === process.argv[1]) {
  const reason = process.env['SVC_BUILD_REASON'];
  const began = performance.now();
  await build();
  process.stderr.write(
    `svcd: built ${relative(REPO_ROOT, BUNDLE)} in ${Math.round(performance.now() - began)} ms` +
      (reason === undefined ? '' : ` (${reason})`) +
      '\n',
  );
}
