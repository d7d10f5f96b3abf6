// Builds the native spawner, packages/spawner/build/svc-spawner, from src/svc-spawner.c with the
// system C compiler (`cc`, else `gcc`): no network, no dependency beyond libc. Plain JavaScript with
// no import of the workspace, so that npm's `prepare`, the Debian package build, the tests' global
// setup and svcd itself (when the binary is missing or older than its source) can all run it.
//
//   node packages/spawner/build.js            build when stale; without a compiler say so, exit 0
//   node packages/spawner/build.js --strict   the same, but exit 1 when it cannot be built
//   node packages/spawner/build.js --strict <source.c> <binary>
//                                             another program with the same compiler and flags
//                                             (test/frames-test.c, which includes svc-spawner.c)
//
// The binary is written to a temp file and renamed into place, so concurrent builds and a svcd
// starting it never see a partial file.
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';

export const SPAWNER_DIR = import.meta.dirname;
export const SPAWNER_SOURCE = join(SPAWNER_DIR, 'src', 'svc-spawner.c');
export const SPAWNER_BINARY = join(SPAWNER_DIR, 'build', 'svc-spawner');
const FLAGS = ['-std=gnu11', '-O2', '-Wall', '-Wextra', '-Werror', '-D_FORTIFY_SOURCE=2'];

function mtime(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Why the binary must be (re)built; undefined when it is current (or there is no source to build). */
export function spawnerStaleReason(source = SPAWNER_SOURCE, binary = SPAWNER_BINARY) {
  const built = mtime(binary);
  const written = mtime(source);
  if (written === undefined) return undefined; // a package install ships the binary alone
  if (built === undefined) return 'not built yet';
  if (written > built) return 'source changed';
  return undefined;
}

/**
 * Build `binary` from `source` when stale. Returns undefined when the binary is current, else the
 * reason it cannot be built (no compiler, compile error): the caller falls back and says so.
 */
export function buildSpawner(source = SPAWNER_SOURCE, binary = SPAWNER_BINARY) {
  if (spawnerStaleReason(source, binary) === undefined) return undefined;
  mkdirSync(join(binary, '..'), { recursive: true });
  const temp = `${binary}.tmp-${process.pid}`;
  const errors = [];
  for (const compiler of ['cc', 'gcc']) {
    const result = spawnSync(compiler, [...FLAGS, '-o', temp, source], { encoding: 'utf8' });
    if (result.error !== undefined) {
      errors.push(`${compiler}: ${result.error.message}`);
      continue;
    }
    if (result.status === 0) {
      renameSync(temp, binary);
      return undefined;
    }
    rmSync(temp, { force: true });
    return `${compiler} failed: ${(result.stderr || '').trim().slice(0, 2000)}`;
  }
  return `no C compiler: ${errors.join('; ')}`;
}

if (import.meta.filename === process.argv[1]) {
  const paths = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
  const problem = paths.length === 2 ? buildSpawner(paths[0], paths[1]) : buildSpawner();
  if (problem !== undefined) {
    const what =
      paths.length === 2 ? `${paths[1]} not built` : 'svc-spawner not built (svcd will spawn in-process)';
    process.stderr.write(`${what}: ${problem}\n`);
    process.exit(process.argv.includes('--strict') ? 1 : 0);
  }
}
