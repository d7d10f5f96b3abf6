// Builds svcd into one ES module, packages/platform/dist/svcd.mjs, and the system applications svcd
// starts — svc-agent, svc-identity, svc-auth-admin — into packages/platform/dist/<name>.mjs, with
// esbuild: the TypeScript sources stay the source of truth, nothing generated is committed. One
// build and one metadata file for all, so that the launcher's freshness check covers the programs
// svcd is about to start; it lives in @svc/platform because the launchers of three packages (daemon,
// agent, identity) share it. Run by bundle.js when a bundle is stale
// (`node packages/platform/build/build.js`), and by the tests' global setup.
//
// The bundle is written to a temp file and renamed into place, then its metadata (inputs and the
// build's start time, read by bundle.js) likewise, so concurrent builds and readers never see a
// partial file.
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { BUNDLES, DIST_DIR, META, REPO_ROOT } from './bundle.js';

const requireBuiltin = createRequire(import.meta.url);

/** Inputs outside the module graph that change what the build produces. */
const EXTRA_INPUTS = [
  'packages/platform/build/build.js',
  'packages/platform/package.json',
  'packages/daemon/package.json',
  'packages/agent/package.json',
  'packages/identity/package.json',
  'packages/identity/src/admin/admin.proto',
  'package-lock.json',
  'node_modules/.package-lock.json',
];

/**
 * Node's builtin modules reached through `require` instead of an ES import. An ES import of a
 * builtin builds its module namespace, which reads every export, and that runs the lazy getters:
 * `import … from 'node:http'` alone loads undici (http's WebSocket/MessageEvent getters), http2,
 * zlib and worker_threads — 37 more builtin modules, ~2 MiB of heap and ~9 MiB resident in a bare
 * Node (docs/decisions.md "svcd runs as one bundle"). Each builtin becomes one module of the
 * bundle whose exports are constants read once at start, as pure calls so that esbuild drops the
 * ones nothing imports (an accessor nothing uses is never read). Not esbuild's CommonJS interop:
 * that copies every export as a getter closure, once per importing file (~30 000 closures here).
 */
const builtinsAsRequire = {
  name: 'builtins-as-require',
  setup(build) {
    build.onResolve({ filter: /^[a-z0-9_:/]+$/ }, (args) =>
      (args.kind === 'import-statement' || args.kind === 'dynamic-import') && isBuiltin(args.path)
        ? { path: args.path, namespace: 'node-builtin' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => {
      const lines = [
        `const m = require(${JSON.stringify(args.path)});`,
        'const __svcGet = (key) => m[key];',
        'export default m;',
      ];
      for (const key of Object.keys(Object.getOwnPropertyDescriptors(requireBuiltin(args.path))))
        if (/^[A-Za-z_$][\w$]*$/.test(key) && key !== 'default' && key !== 'm' && key !== '__svcGet')
          lines.push(`export const ${key} = /* @__PURE__ */ __svcGet(${JSON.stringify(key)});`);
      return { contents: lines.join('\n'), loader: 'js' };
    });
  },
};

/**
 * The agent's `import('@svc/mcp')` loads the bundle `svc-agent-mcp.mjs` beside it: the MCP SDK and
 * its dependencies (~0.5 MB of source, which V8 keeps on the heap once loaded) are read on the
 * first request to /mcp, not by every agent. One more bundle rather than esbuild's code splitting:
 * split into ~25 modules, svcd held 2 MiB more heap at start (docs/decisions.md "svcd runs as one
 * bundle").
 */
const agentMcpApart = {
  name: 'agent-mcp-apart',
  setup(build) {
    build.onResolve({ filter: /^@svc\/mcp$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: './svc-agent-mcp.mjs', external: true } : undefined,
    );
  },
};

/**
 * Refuses a bundle that imports anything statically: esbuild hoists a static import of an external
 * module (etcd3) to the bundle's first line, whatever module it came from, so one `import { Etcd3 }`
 * in cluster code loaded etcd3, gRPC and protobufjs into every stand-alone svcd (~14 MiB resident).
 * External modules are reached with `await import()` where they are used.
 */
function checkNoStaticImports(metafile) {
  for (const [output, { imports }] of Object.entries(metafile.outputs)) {
    const hoisted = imports.filter((entry) => entry.external && entry.kind === 'import-statement');
    if (hoisted.length > 0)
      throw new Error(
        `${output} imports ${hoisted.map((entry) => entry.path).join(', ')} statically; ` +
          'import external modules with `await import()` where they are used (build/build.js)',
      );
  }
}

export async function build() {
  // Margin for file systems whose timestamps lag the wall clock (coarse kernel clock): an edit made
  // while this build runs is always seen as newer than the build.
  const startedAt = Date.now() - 1000;
  const esbuild = await import('esbuild');
  mkdirSync(DIST_DIR, { recursive: true });
  const tempDir = join(DIST_DIR, `.tmp-${process.pid}`);
  const options = {
    absWorkingDir: REPO_ROOT,
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
    // at run time: it stays a package resolved from node_modules, not bundled. (svc-identity's
    // admin.proto is read from the installation root, grpc-proto.ts.)
    external: ['etcd3'],
    plugins: [builtinsAsRequire],
    // platform's config/install-root.ts: INSTALL_ROOT is this path from the bundle's directory
    // (packages/platform/dist; every bundle is written there).
    define: { SVC_INSTALL_ROOT_FROM_MODULE: JSON.stringify(relative(DIST_DIR, REPO_ROOT)) },
  };
  const entries = (names) => Object.fromEntries(names.map((name) => [name, BUNDLES[name].entry]));
  const results = await Promise.all([
    esbuild.build({
      ...options,
      entryPoints: entries(['svcd', 'svc-agent', 'svc-agent-mcp']),
      plugins: [...options.plugins, agentMcpApart],
    }),
    // Function and class names as in the sources, whatever esbuild renames to avoid collisions
    // between modules: oidc-provider finds each token's lifetime by its class's name
    // (`ttl[this.name]`), and a renamed AccessToken2 issued tokens without `exp`. (Not for svcd:
    // +5% code, and nothing there depends on a name.)
    esbuild.build({ ...options, entryPoints: entries(['svc-identity', 'svc-auth-admin']), keepNames: true }),
  ]);
  for (const { metafile } of results) checkNoStaticImports(metafile);
  // Files only: not dependencies, not the plugin's virtual modules (`node-builtin:node:fs`).
  const inputs = [...new Set(results.flatMap(({ metafile }) => Object.keys(metafile.inputs)))].filter(
    (input) => !input.includes('node_modules/') && !input.startsWith('node-builtin:'),
  );
  inputs.push(...EXTRA_INPUTS.filter((input) => existsSync(join(REPO_ROOT, input))));
  // svcd's last: a launcher that sees the new svcd bundle also finds the programs it starts.
  for (const name of Object.keys(BUNDLES).reverse())
    renameSync(join(tempDir, `${name}.mjs`), BUNDLES[name].file);
  rmSync(tempDir, { recursive: true, force: true });
  const metaTemp = join(DIST_DIR, `.tmp-${process.pid}-svcd.meta.json`);
  writeFileSync(metaTemp, JSON.stringify({ startedAt, inputs }, null, 1) + '\n');
  renameSync(metaTemp, META);
  return BUNDLES.svcd.file;
}

if (import.meta.filename === process.argv[1]) {
  const reason = process.env['SVC_BUILD_REASON'];
  const began = performance.now();
  await build();
  process.stderr.write(
    `svcd: built ${Object.values(BUNDLES)
      .map(({ file }) => relative(REPO_ROOT, file))
      .join(', ')} in ${Math.round(performance.now() - began)} ms` +
      (reason === undefined ? '' : ` (${reason})`) +
      '\n',
  );
}
