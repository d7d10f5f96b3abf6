// Builds the web UI into dist/: index.html plus content-hashed files under assets/ (the agent caches
// those for a year and revalidates index.html). esbuild bundles src/main.tsx with code splitting, so
// views imported with `import()` (views.ts) load only when first shown. Prints each file's gzip size.
// Run by `npm run build -w @svc/web`, and at install time by the root package's `prepare` script.
import { build, type Metafile, type Plugin } from 'esbuild';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

export interface WebBuild {
  /** `assets/<name>-<hash>.js` of the entry, relative to dist/. */
  entry: string;
  css: string | undefined;
  /** Every written file (relative to dist/) with its raw and gzip sizes in bytes. */
  files: { file: string; bytes: number; gzip: number }[];
}

export async function buildWeb(options: { minify?: boolean } = {}): Promise<WebBuild> {
  await rm(dist, { recursive: true, force: true });
  await mkdir(dist, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['src/main.tsx'],
    outdir: dist,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox113', 'safari16.4'],
    minify: options.minify ?? true,
    sourcemap: false,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: 'assets/[name]-[hash]',
    chunkNames: 'assets/[name]-[hash]',
    assetNames: 'assets/[name]-[hash]',
    conditions: ['browser'],
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [compactAccessTable],
  });
  const { entry, css } = entryOf(result.metafile);
  const template = await readFile(join(root, 'src', 'index.html'), 'utf8');
  const head = [
    css === undefined ? '' : `<link rel="stylesheet" href="/${css}">`,
    `<script type="module" src="/${entry}"></script>`,
  ].join('\n    ');
  await writeFile(join(dist, 'index.html'), template.replace('<!-- assets -->', head));
  const files = await Promise.all(
    [...Object.keys(result.metafile.outputs).map((out) => relative(dist, join(root, out))), 'index.html'].map(
      async (file) => {
        const data = await readFile(join(dist, file));
        return { file, bytes: (await stat(join(dist, file))).size, gzip: gzipSync(data, { level: 9 }).length };
      },
    ),
  );
  return { entry, css, files };
}

/** spec/access.json as the page needs it: each operation's rule, not the prose of `kinds`. */
const compactAccessTable: Plugin = {
  name: 'compact-access-table',
  setup(on) {
    on.onLoad({ filter: /[\\/]spec[\\/]access\.json$/ }, async (args) => {
      const table = JSON.parse(await readFile(args.path, 'utf8')) as { operations: Record<string, { rule: unknown }> };
      const operations = Object.fromEntries(Object.entries(table.operations).map(([id, op]) => [id, { rule: op.rule }]));
      return { contents: JSON.stringify({ operations }), loader: 'json' };
    });
  },
};

function entryOf(metafile: Metafile): { entry: string; css: string | undefined } {
  for (const [out, info] of Object.entries(metafile.outputs)) {
    if (info.entryPoint === 'src/main.tsx' && out.endsWith('.js'))
      return { entry: relative('dist', out), css: info.cssBundle === undefined ? undefined : relative('dist', info.cssBundle) };
  }
  throw new Error('esbuild wrote no entry for src/main.tsx');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = performance.now();
  const { files } = await buildWeb();
  for (const { file, bytes, gzip } of files.sort((a, b) => a.file.localeCompare(b.file)))
    console.log(`${file.padEnd(40)} ${String(bytes).padStart(8)} B  ${String(gzip).padStart(7)} B gzip`);
  console.log(`@svc/web built into dist/ in ${Math.round(performance.now() - started)} ms`);
}
