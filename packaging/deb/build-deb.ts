// Builds svc's Debian package from a checkout: `npm run package:deb [-- --out DIR]`.
//
// The package installs a self-contained install root in /opt/svc (the bundles of svcd, the agent,
// svc-identity and svc-auth-admin, the native svc-spawner binary, the CLI as TypeScript sources run
// by the bundled Node.js 24, their production dependencies only, apps/, script/), the systemd units, /etc/default/svc and
// /usr/bin/svc; its maintainer scripts create the system user `svc` and SVC_HOME=/var/lib/svc.
// Nothing is downloaded: the dependency closure is copied from this checkout's node_modules.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import process from 'node:process';

const REPO = resolve(import.meta.dirname, '../..');
const HERE = import.meta.dirname;
/** The install root inside the package. */
export const INSTALL_ROOT = '/opt/svc';
/** The workspace packages a running svc needs (the programs are bundled into platform/dist; their launchers live here). */
const RUNTIME_PACKAGES = ['protocol', 'platform', 'client', 'daemon', 'agent', 'identity', 'cli'] as const;

interface PackageJson {
  name: string;
  version?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

function run(command: string, args: string[], cwd = REPO): void {
  const result = spawnSync(command, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})`);
}

/**
 * The production dependency closure of the runtime packages, as directories of node_modules
 * (hoisted layout: a dependency is looked up from the requiring package's directory upwards).
 */
export function dependencyClosure(repo: string): string[] {
  const found = new Set<string>();
  const visit = (fromDir: string, deps: Record<string, string>): void => {
    for (const name of Object.keys(deps)) {
      if (name.startsWith('@svc/')) continue; // workspace packages are copied as sources
      let dir = fromDir;
      let location: string | undefined;
      for (;;) {
        const candidate = join(dir, 'node_modules', name);
        if (existsSync(join(candidate, 'package.json'))) {
          location = candidate;
          break;
        }
        if (dir === repo || dir === dirname(dir)) break;
        dir = dirname(dir);
      }
      if (location === undefined) {
        if (Object.hasOwn(optionalOf, name)) continue;
        throw new Error(
          `dependency ${name} (from ${relative(repo, fromDir) || '.'}) is not installed: run npm ci`,
        );
      }
      if (found.has(location)) continue;
      found.add(location);
      const manifest = readJson<PackageJson>(join(location, 'package.json'));
      optionalOf = { ...optionalOf, ...manifest.optionalDependencies };
      visit(location, { ...manifest.dependencies, ...manifest.optionalDependencies });
    }
  };
  let optionalOf: Record<string, string> = {};
  for (const pkg of RUNTIME_PACKAGES) {
    const dir = join(repo, 'packages', pkg);
    visit(dir, readJson<PackageJson>(join(dir, 'package.json')).dependencies ?? {});
  }
  return [...found].map((location) => relative(repo, location)).sort();
}

/** Files of a workspace package that run: everything but tests, test folders and build caches. */
function copyPackage(pkg: string, root: string): void {
  const from = join(REPO, 'packages', pkg);
  const to = join(root, 'packages', pkg);
  cpSync(from, to, {
    recursive: true,
    filter: (source) => {
      const rel = relative(from, source);
      if (rel === '') return true;
      const top = rel.split('/')[0]!;
      if (['test', 'node_modules', 'scripts'].includes(top)) return false;
      if (top === 'dist' && rel.includes('.tmp-')) return false;
      return !/\.test\.ts$/.test(rel);
    },
  });
}

/** The node flags of a launcher's `#!/usr/bin/env -S node <flags>` line. */
function launcherFlags(launcher: string): string {
  const words = readFileSync(launcher, 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  return words.slice(words.indexOf('node') + 1).join(' ');
}

function wrapper(target: string, flags: string): string {
  return [
    '#!/bin/sh',
    '# svc command wrapper (Debian package): the bundled Node.js 24 runs the launcher.',
    'root=$(dirname "$(dirname "$(readlink -f "$0")")")',
    `exec "$root/node_modules/.bin/node" ${flags === '' ? '' : `${flags} `}"$root/${target}" "$@"`,
    '',
  ].join('\n');
}

export interface BuildOptions {
  out: string;
  version?: string;
  /** dpkg-deb compression: gzip for a release, none for a quick test build. */
  compression?: 'gzip' | 'xz' | 'none';
}

/** Stages the package tree under `<out>/stage` and builds `<out>/svc_<version>_<arch>.deb`. */
export function buildDeb(options: BuildOptions): { deb: string; stage: string; version: string } {
  const version =
    options.version ?? readJson<PackageJson>(join(REPO, 'packages/daemon/package.json')).version!;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch === 'arm64' ? 'arm64' : process.arch;
  const stage = join(options.out, 'stage');
  rmSync(stage, { recursive: true, force: true });
  const root = join(stage, INSTALL_ROOT.slice(1));
  mkdirSync(root, { recursive: true });

  // svcd's and the agent's bundles, current, and marked as packaged (the launcher's freshness
  // check then has no inputs to compare: a package is never rebuilt in place).
  run(process.execPath, ['packages/platform/build/build.js']);
  for (const pkg of RUNTIME_PACKAGES) copyPackage(pkg, root);
  // svc-spawner (packages/spawner), the native process holder: built here with the system C
  // compiler and shipped as a binary alone (no source beside it, so svcd never rebuilds it in place).
  run(process.execPath, ['packages/spawner/build.js', '--strict']);
  mkdirSync(join(root, 'packages/spawner/build'), { recursive: true });
  copyFileSync(join(REPO, 'packages/spawner/build/svc-spawner'), join(root, 'packages/spawner/build/svc-spawner'));
  chmodSync(join(root, 'packages/spawner/build/svc-spawner'), 0o755);
  copyFileSync(join(REPO, 'packages/spawner/README.md'), join(root, 'packages/spawner/README.md'));
  // The protocol the README links to.
  mkdirSync(join(root, 'spec'), { recursive: true });
  copyFileSync(join(REPO, 'spec/spawner-protocol.md'), join(root, 'spec/spawner-protocol.md'));
  // The web UI: only its built files (the agent serves packages/web/dist at `/`).
  run(process.execPath, ['packages/web/scripts/build.ts']);
  cpSync(join(REPO, 'packages/web/dist'), join(root, 'packages/web/dist'), { recursive: true });
  const meta = join(root, 'packages/platform/dist/svcd.meta.json');
  writeFileSync(meta, JSON.stringify({ ...readJson<object>(meta), inputs: [], packaged: true }));
  for (const dir of ['apps']) cpSync(join(REPO, dir), join(root, dir), { recursive: true });
  mkdirSync(join(root, 'docs'));
  for (const doc of ['operations.md', 'decisions.md', 'architecture.md'])
    copyFileSync(join(REPO, 'docs', doc), join(root, 'docs', doc));
  mkdirSync(join(root, 'script'));
  for (const file of readdirSync(join(REPO, 'script')))
    if (file !== 'test-deps.sh') copyFileSync(join(REPO, 'script', file), join(root, 'script', file));
  writeFileSync(
    join(root, 'package.json'),
    `${JSON.stringify({ name: 'svc', version, private: true, type: 'module' }, null, 2)}\n`,
  );

  // Production dependencies, the workspace links, and the pinned Node.js binary.
  for (const dir of dependencyClosure(REPO))
    cpSync(join(REPO, dir), join(root, dir), { recursive: true, verbatimSymlinks: true });
  mkdirSync(join(root, 'node_modules/@svc'), { recursive: true });
  for (const pkg of RUNTIME_PACKAGES)
    symlinkSync(`../../packages/${pkg}`, join(root, 'node_modules/@svc', pkg));
  mkdirSync(join(root, 'node_modules/.bin'), { recursive: true });
  copyFileSync(process.execPath, join(root, 'node_modules/.bin/node'));
  chmodSync(join(root, 'node_modules/.bin/node'), 0o755);

  mkdirSync(join(root, 'bin'));
  const bins = {
    svcd: wrapper('packages/daemon/bin/svcd.js', launcherFlags(join(REPO, 'packages/daemon/bin/svcd.js'))),
    svc: wrapper('packages/cli/bin/svc.js', ''),
    'svc-auth.sh': `#!/bin/sh\nroot=$(dirname "$(dirname "$(readlink -f "$0")")")\nexec "$root/script/svc-auth.sh" "$@"\n`,
  };
  for (const [name, text] of Object.entries(bins))
    writeFileSync(join(root, 'bin', name), text, { mode: 0o755 });

  // System integration: units, defaults, the metrics stack's files, /usr/bin/svc.
  const systemd = join(stage, 'lib/systemd/system');
  mkdirSync(systemd, { recursive: true });
  for (const unit of readdirSync(join(REPO, 'packaging/systemd')))
    copyFileSync(join(REPO, 'packaging/systemd', unit), join(systemd, unit));
  mkdirSync(join(stage, 'etc/default'), { recursive: true });
  copyFileSync(join(HERE, 'default'), join(stage, 'etc/default/svc'));
  cpSync(join(REPO, 'packaging/metrics'), join(root, 'metrics'), { recursive: true });
  mkdirSync(join(stage, 'usr/bin'), { recursive: true });
  symlinkSync(`${INSTALL_ROOT}/bin/svc`, join(stage, 'usr/bin/svc'));

  const debian = join(stage, 'DEBIAN');
  mkdirSync(debian);
  const control = readFileSync(join(HERE, 'control'), 'utf8')
    .replace('@VERSION@', version)
    .replace('@ARCH@', arch)
    .replace(
      '@SIZE@',
      String(Math.ceil(Number(spawnSync('du', ['-sk', stage]).stdout.toString().split('\t')[0]))),
    );
  writeFileSync(join(debian, 'control'), control);
  writeFileSync(join(debian, 'conffiles'), '/etc/default/svc\n');
  for (const script of ['postinst', 'prerm', 'postrm']) {
    copyFileSync(join(HERE, script), join(debian, script));
    chmodSync(join(debian, script), 0o755);
  }

  const deb = join(options.out, `svc_${version}_${arch}.deb`);
  const compression = options.compression ?? 'gzip';
  run('dpkg-deb', [
    '--root-owner-group',
    `-Z${compression}`,
    ...(compression === 'none' ? [] : ['-z1']),
    '--build',
    stage,
    deb,
  ]);
  return { deb, stage, version };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const out = resolve(outIndex >= 0 ? args[outIndex + 1]! : join(REPO, 'packaging/out'));
  const { deb } = buildDeb({ out });
  process.stdout.write(`${deb}\n`);
}
