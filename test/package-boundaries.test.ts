// Package boundaries (issue 26): the lint rule of eslint.config.js fails on a deep import, and the
// workspace's package graph, built from every package.json and every import of every package file
// (dynamic imports and .js launchers included, which the lint rule does not see), has no cycle and
// crosses packages only through a declared dependency's `exports`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const CODE = /\.(ts|tsx|js|mjs|cjs|mts|cts)$/;
/** Folders never scanned: installed, built or generated files. */
const SKIPPED = new Set(['node_modules', 'dist', 'out', '.tmp', 'coverage']);

interface Manifest {
  name: string;
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

interface Package {
  readonly name: string;
  readonly dir: string;
  readonly exports: ReadonlySet<string>;
  readonly dependencies: ReadonlySet<string>;
  readonly devDependencies: ReadonlySet<string>;
}

function workspacePackages(): Package[] {
  const dirs = [
    ...readdirSync(join(ROOT, 'packages')).map((name) => join(ROOT, 'packages', name)),
    join(ROOT, 'bench'),
  ];
  return dirs
    .filter((dir) => statSync(join(dir, 'package.json'), { throwIfNoEntry: false }) !== undefined)
    .map((dir) => {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
      return {
        name: manifest.name,
        dir,
        exports: new Set(Object.keys(manifest.exports ?? {})),
        dependencies: new Set(Object.keys(manifest.dependencies ?? {})),
        devDependencies: new Set(Object.keys(manifest.devDependencies ?? {})),
      };
    });
}

function codeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return codeFiles(path);
    return CODE.test(entry.name) ? [path] : [];
  });
}

/** Every module specifier of a file: static, re-export, dynamic, require (comments are not code). */
function specifiers(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map((imported) => imported.fileName);
}

function inside(dir: string, path: string): boolean {
  return path === dir || path.startsWith(dir + sep);
}

/** Tests, test helpers and build tooling may use devDependencies; everything else runs. */
function isDevFile(pkg: Package, file: string): boolean {
  const parts = relative(pkg.dir, file).split(sep);
  return ['test', 'build', 'scripts'].includes(parts[0]!) || /\.test\.[a-z]+$/.test(file);
}

interface Scan {
  /** Runtime edges: package name → the workspace packages its running code imports. */
  readonly edges: Map<string, Set<string>>;
  readonly problems: string[];
}

function scan(packages: readonly Package[]): Scan {
  const byName = new Map(packages.map((pkg) => [pkg.name, pkg]));
  const edges = new Map<string, Set<string>>(packages.map((pkg) => [pkg.name, new Set<string>()]));
  const problems: string[] = [];
  const owners = [
    ...packages.map((pkg): { pkg: Package | undefined; dir: string } => ({ pkg, dir: pkg.dir })),
    // Outside every package (the root's tests, packaging): other packages through exports only.
    { pkg: undefined, dir: join(ROOT, 'test') },
    { pkg: undefined, dir: join(ROOT, 'packaging') },
  ];
  for (const { pkg, dir } of owners) {
    for (const file of codeFiles(dir)) {
      const where = relative(ROOT, file);
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.')) {
          const target = resolve(dirname(file), spec);
          const ownDir = pkg?.dir;
          const allowed =
            ownDir === undefined ? !packages.some((p) => inside(p.dir, target)) : inside(ownDir, target);
          if (!allowed && !inside(join(ROOT, 'spec'), target))
            problems.push(`${where}: '${spec}' reaches into ${relative(ROOT, target)} by a relative path`);
          continue;
        }
        const match = /^(@svc\/[^/]+)(\/.*)?$/.exec(spec);
        if (match === null) continue;
        const [, name, sub] = match as unknown as [string, string, string | undefined];
        const target = byName.get(name);
        if (target === undefined) {
          problems.push(`${where}: '${spec}' names no workspace package`);
          continue;
        }
        if (!target.exports.has(sub === undefined ? '.' : `.${sub}`))
          problems.push(`${where}: '${spec}' is not in ${name}'s exports`);
        if (pkg === undefined || target === pkg) continue;
        const dev = isDevFile(pkg, file);
        const declared = pkg.dependencies.has(name) || (dev && pkg.devDependencies.has(name));
        if (!declared)
          problems.push(
            `${where}: imports ${name}, which ${pkg.name} does not list in its ${dev ? 'dependencies or devDependencies' : 'dependencies'}`,
          );
        if (!dev) edges.get(pkg.name)!.add(name);
      }
    }
  }
  // A declared runtime dependency is an edge as well, imported or not.
  for (const pkg of packages)
    for (const name of pkg.dependencies) if (byName.has(name)) edges.get(pkg.name)!.add(name);
  return { edges, problems };
}

/** The first cycle found, as a path of package names, or undefined. */
function findCycle(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === 'done') return undefined;
    if (state.get(name) === 'open') return [...path.slice(path.indexOf(name)), name];
    state.set(name, 'open');
    path.push(name);
    for (const next of edges.get(name) ?? []) {
      const cycle = visit(next);
      if (cycle !== undefined) return cycle;
    }
    path.pop();
    state.set(name, 'done');
    return undefined;
  };
  for (const name of edges.keys()) {
    const cycle = visit(name);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

describe('the lint rule against deep imports (eslint.config.js)', () => {
  // Type information is not needed for this rule: the fixtures are linted without a TypeScript project.
  const eslint = new ESLint({ cwd: ROOT, overrideConfig: [tseslint.configs.disableTypeChecked] });
  const boundaryMessages = async (file: string, code: string): Promise<string[]> => {
    const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
    return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it.each([
    ['packages/agent/src/fixture.ts', "import { loadConfig } from '../../daemon/src/config/config.ts';"],
    [
      'packages/agent/bin/fixture.ts',
      "import { readRelayKey } from '../../identity/src/credentials/relay-key.ts';",
    ],
    ['packages/identity/src/admin/fixture.ts', "import { loadX509 } from '../../../daemon/src/tls/x509.ts';"],
    [
      'packages/agent/src/fixture.ts',
      "export { AGENT_KEY_HEADER } from '../../daemon/src/transports/agent-relay.ts';",
    ],
    ['packages/agent/src/fixture.ts', "import type { Limits } from '@svc/daemon/src/config/config.ts';"],
    [
      'packages/cli/test/fixture.ts',
      "import { startAuthStack } from '../../identity/test/full-stack/stack.ts';",
    ],
    ['bench/fixture.ts', "import { AppStore } from '../packages/daemon/src/supervisor/app-store.ts';"],
    ['test/fuzz/fixture.ts', "import { Router } from '../../packages/daemon/src/api/router.ts';"],
  ])('reports the deep import in %s: %s', async (file, code) => {
    expect(await boundaryMessages(file, code)).toHaveLength(1);
  });

  it('accepts imports through exports, inside the package, and of spec/', async () => {
    const code = [
      "import { loadConfig } from '@svc/platform/config';",
      "import { PROCESS_KEY_HEADER } from '@svc/protocol';",
      "import { routeOf } from './routes.ts';",
      "import { x } from '../bin/x.ts';",
      "import access from '../../../spec/access.json' with { type: 'json' };",
      'export { loadConfig, PROCESS_KEY_HEADER, routeOf, x, access };',
    ].join('\n');
    expect(await boundaryMessages('packages/agent/src/fixture.ts', code)).toEqual([]);
  });
});

describe('the package graph', () => {
  const packages = workspacePackages();
  const { edges, problems } = scan(packages);

  it('finds the workspace packages and their imports', () => {
    expect(packages.map((pkg) => pkg.name)).toEqual(
      expect.arrayContaining([
        '@svc/protocol',
        '@svc/platform',
        '@svc/daemon',
        '@svc/identity',
        '@svc/agent',
      ]),
    );
    expect([...edges.get('@svc/agent')!]).toEqual(expect.arrayContaining(['@svc/platform', '@svc/protocol']));
  });

  it('crosses packages only through a declared dependency and its exports', () => {
    expect(problems).toEqual([]);
  });

  it('has no cycle, and the protocol and platform depend on no package above them', () => {
    expect(findCycle(edges)).toBeUndefined();
    expect([...edges.get('@svc/protocol')!]).toEqual([]);
    expect([...edges.get('@svc/platform')!].filter((name) => name !== '@svc/protocol')).toEqual([]);
  });

  it('would report a cycle (the check itself)', () => {
    const cyclic = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
    ]);
    expect(findCycle(cyclic)).toEqual(['a', 'b', 'c', 'a']);
  });
});
