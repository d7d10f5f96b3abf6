// The web UI's build as the tests and scripts need it: packages/web/dist, rebuilt (`npm run build` in
// packages/web) when it is missing or older than any of its inputs, so a test works on a fresh clone
// where only `npm ci` ran. The vitest global setup (global-setup.ts) calls it once before test files
// start in parallel; the harness calls it again, which is then only a freshness check.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '../../..');
export const WEB_DIR = join(REPO_ROOT, 'packages/web');
export const WEB_DIST = join(WEB_DIR, 'dist');

/** Folders of packages/web that are not build inputs. */
const NOT_INPUTS = new Set(['dist', 'node_modules', 'test', 'scripts', 'README.md']);
/** Other inputs: the build script, the client library the UI is built on, the contract files it reads. */
const OTHER_INPUTS = [
  'packages/web/scripts/build.ts',
  'packages/client/src',
  'packages/protocol/src',
  'spec/access.json',
  'spec/openapi.json',
];

function newestMtime(path: string, skip: ReadonlySet<string> = new Set()): number {
  let info;
  try {
    info = statSync(path);
  } catch {
    return 0;
  }
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) {
    if (skip.has(entry) || entry.endsWith('.test.ts')) continue;
    newest = Math.max(newest, newestMtime(join(path, entry)));
  }
  return newest;
}

/** Why dist must be (re)built, or undefined when it is current or there is no web package to build. */
export function webBuildStaleReason(): string | undefined {
  if (!existsSync(join(WEB_DIR, 'package.json'))) return undefined;
  let built: number;
  try {
    built = statSync(join(WEB_DIST, 'index.html')).mtimeMs;
  } catch {
    return 'no build yet';
  }
  const inputs = Math.max(
    newestMtime(WEB_DIR, NOT_INPUTS),
    ...OTHER_INPUTS.map((input) => newestMtime(join(REPO_ROOT, input))),
  );
  return inputs > built ? 'a source changed' : undefined;
}

/** Builds packages/web/dist when stale (synchronously, output on stderr); throws when the build fails. */
export function ensureWebBuild(): void {
  const reason = webBuildStaleReason();
  if (reason === undefined) return;
  process.stderr.write(`building packages/web (${reason})\n`);
  const result = spawnSync('npm', ['run', 'build'], { cwd: WEB_DIR, stdio: ['ignore', 2, 2] });
  if (result.status !== 0)
    throw new Error(`building packages/web failed (${reason}): exit ${result.status ?? result.signal}`);
}
