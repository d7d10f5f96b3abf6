// The bundles svcd and its system applications run (packages/platform/build/build.js): once built they
// are fresh (a launcher does not rebuild them at every start), and they import nothing statically,
// so that a stand-alone svcd does not load cluster mode's etcd3/gRPC (docs/decisions.md "svcd runs
// as one bundle").
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const BUILD_DIR = resolve(import.meta.dirname, '../build');
const DIST_DIR = resolve(import.meta.dirname, '../dist');
const BUNDLES = ['svcd', 'svc-agent', 'svc-agent-mcp', 'svc-identity', 'svc-auth-admin'];

/** bundle.js's verdict, in a plain Node (it is the launchers' code, not TypeScript). */
function staleReason(): string {
  const script = `import(${JSON.stringify(join(BUILD_DIR, 'bundle.js'))}).then((m) => { m.ensureBundle(); process.stdout.write(m.staleReason() ?? 'fresh'); })`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

describe('bundles', () => {
  it('are fresh once built: no input of the build is missing (e.g. a plugin virtual module)', () => {
    expect(staleReason()).toBe('fresh');
  });

  it.each(BUNDLES)('%s statically imports only node:module (its banner)', (name) => {
    const text = readFileSync(join(DIST_DIR, `${name}.mjs`), 'utf8');
    const imports = [
      ...text.matchAll(/(?:^|[;\n])\s*import\s*(?:[\w*{}\s,$]+from\s*)?["']([^"']+)["']/g),
    ].map((m) => m[1]);
    expect(imports).toEqual(['node:module']);
  });
});
