// Where svcd's resident memory goes (figures 4a/4b): a real svcd (testkit, as the rss bench runs
// it) with 0 and then N `sleep 600` apps, and at each point
//   - /proc/<pid>/smaps grouped: the node binary's code and data pages (file-backed, shared with
//     every Node process), anonymous mappings (V8's heap and code, thread stacks, malloc arenas of
//     other threads), [heap] (the main malloc arena), shared libraries;
//   - V8's own view (bench/lib/memory-probe.js loaded with NODE_OPTIONS=--import, read on SIGUSR2
//     after a full GC): heap spaces, bytecode and source sizes, builtin modules loaded;
//   - with --snapshot, a heap snapshot summarised by node type and the largest constructors.
// With AB_BASE=<checkout of another revision> (see bench/README.md, ab.ts) both builds run side by
// side and every figure is printed for A (the base) and B (this checkout), ROUNDS times alternated.
//   npx node bench/memory-breakdown.ts [--apps 200] [--snapshot] [--rounds 3] [--v8-flags=--max-opt=2]
//   AB_BASE=/tmp/ab-base npx node bench/memory-breakdown.ts --apps 200
//   npx node bench/memory-breakdown.ts --system agent      # svc-agent's RSS after 20 proxied requests
//   npx node bench/memory-breakdown.ts --system identity   # svc-identity's and svc-auth-admin's RSS
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BUILTIN_MODE_ENV, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { keepAliveRest, ok, type KeepAliveRest } from './lib/rest.ts';
import { rssKiB, sleep } from './lib/util.ts';

const { values: args } = parseArgs({
  options: {
    apps: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '1' },
    snapshot: { type: 'boolean', default: false },
    system: { type: 'string' },
    /** V8 flags for svcd, set by the probe before the bundle loads, e.g. --v8-flags=--max-opt=2 */
    'v8-flags': { type: 'string', default: '' },
    /** More environment for svcd, KEY=VALUE, repeatable (e.g. glibc's MALLOC_* tunables). */
    env: { type: 'string', multiple: true, default: [] },
  },
});
const APPS = Number(args.apps);
const ROUNDS = Number(args.rounds);
const PROBE = join(import.meta.dirname, 'lib/memory-probe.js');
const dir = await mkdtemp(join(tmpdir(), 'svc-mem-'));

type Start = typeof startTestDaemon;
const builds: { label: string; start: Start; root: string }[] = [];
if (process.env['AB_BASE'] !== undefined) {
  const base = process.env['AB_BASE'];
  const mod = (await import(join(base, 'packages/testkit/src/index.ts'))) as { startTestDaemon: Start };
  builds.push({ label: 'A', start: mod.startTestDaemon, root: base });
}
builds.push({
  label: builds.length === 0 ? 'svcd' : 'B',
  start: startTestDaemon,
  root: join(import.meta.dirname, '..'),
});

interface Mapping {
  rss: number;
  anonymous: number;
}

/** KiB per group of /proc/<pid>/smaps mappings. */
function smapsGroups(pid: number): Record<string, Mapping> {
  const groups: Record<string, Mapping> = {};
  let current: Mapping | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      const [, perms, path] = header as unknown as [string, string, string];
      const name =
        path === ''
          ? 'anonymous (V8 heap and code, stacks, thread arenas)'
          : path === '[heap]'
            ? '[heap] (main malloc arena)'
            : path.endsWith('/node')
              ? `node binary ${perms.includes('x') ? 'code' : 'data'}`
              : path.includes('.so')
                ? 'shared libraries'
                : path.startsWith('[')
                  ? path
                  : 'other files';
      current = groups[name] ??= { rss: 0, anonymous: 0 };
      continue;
    }
    const field = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
    if (field !== null && current !== undefined) {
      if (field[1] === 'Rss') current.rss += Number(field[2]);
      else current.anonymous += Number(field[2]);
    }
  }
  return groups;
}

interface ProbeReport {
  memoryUsage: NodeJS.MemoryUsage;
  spaces: { space_name: string; space_size: number; space_used_size: number }[];
  code: {
    bytecode_and_metadata_size: number;
    external_script_source_size: number;
    code_and_metadata_size: number;
  };
  builtinModules: string[];
  handles: string[];
}

/** The probe's report (it writes to the file named by the daemon's MEMORY_PROBE_OUT, `<tag>.json`). */
async function probe(
  pid: number,
  tag: string,
  snapshot: boolean,
): Promise<{ report: ProbeReport; snapshot?: string }> {
  const out = join(dir, `${tag}.json`);
  rmSync(out, { force: true });
  rmSync(`${out}.done`, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 60_000;
  while (!existsSync(`${out}.done`)) {
    if (Date.now() > deadline) throw new Error(`no probe answer from ${pid}`);
    await sleep(50);
  }
  return {
    report: JSON.parse(readFileSync(out, 'utf8')) as ProbeReport,
    ...(snapshot ? { snapshot: `${out}.heapsnapshot` } : {}),
  };
}

/** Median of 5 VmRSS reads after a settle, as bench/rss.ts reads them. */
async function settledRss(pid: number): Promise<number> {
  await sleep(1500);
  const reads: number[] = [];
  for (let i = 0; i < 5; i++) {
    reads.push(rssKiB(pid) ?? Number.NaN);
    await sleep(100);
  }
  return reads.sort((a, b) => a - b)[2]!;
}

const MiB = (bytes: number): string => (bytes / 1048576).toFixed(1);
const KiBtoMiB = (kib: number): string => (kib / 1024).toFixed(1);

/** Heap snapshot: self size by node type, and the largest constructors/names. */
function summariseSnapshot(file: string): string[] {
  const data = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = data.snapshot.meta.node_fields;
  const types = data.snapshot.meta.node_types[0];
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const byType = new Map<string, number>();
  const byName = new Map<string, { size: number; count: number }>();
  const bigStrings: [number, string][] = [];
  for (let i = 0; i < data.nodes.length; i += fields.length) {
    const type = types[data.nodes[i + iType]!]!;
    const size = data.nodes[i + iSize]!;
    byType.set(type, (byType.get(type) ?? 0) + size);
    const raw = data.strings[data.nodes[i + iName]!]!;
    if (type === 'string' && size > 100_000) bigStrings.push([size, raw.slice(0, 70).replace(/\s+/g, ' ')]);
    const name = /string/.test(type)
      ? '(strings)'
      : type === 'closure'
        ? '(closures)'
        : `${type}: ${raw.slice(0, 50)}`;
    const entry = byName.get(name) ?? { size: 0, count: 0 };
    entry.size += size;
    entry.count++;
    byName.set(name, entry);
  }
  const lines = [
    "  heap snapshot, self size by type (MiB; strings include Node builtins' external sources):",
  ];
  lines.push(
    '    ' +
      [...byType]
        .sort((a, b) => b[1] - a[1])
        .filter(([, s]) => s > 50_000)
        .map(([t, s]) => `${t} ${MiB(s)}`)
        .join(', '),
  );
  lines.push('  largest names (KiB, count):');
  for (const [name, { size, count }] of [...byName].sort((a, b) => b[1].size - a[1].size).slice(0, 25))
    lines.push(`    ${String(Math.round(size / 1024)).padStart(6)} ${String(count).padStart(6)}  ${name}`);
  lines.push('  strings over 100 kB:');
  for (const [size, text] of bigStrings.sort((a, b) => b[0] - a[0]).slice(0, 8))
    lines.push(`    ${String(Math.round(size / 1024)).padStart(6)} KiB  ${text}`);
  return lines;
}

function describe(
  label: string,
  rss: number,
  groups: Record<string, Mapping>,
  report: ProbeReport,
): string[] {
  const u = report.memoryUsage;
  const space = (name: string): string => {
    const s = report.spaces.find((x) => x.space_name === name);
    return s === undefined ? '-' : `${MiB(s.space_used_size)}/${MiB(s.space_size)}`;
  };
  const lines = [`${label}: VmRSS ${KiBtoMiB(rss)} MiB`];
  lines.push(
    '  smaps (MiB rss): ' +
      Object.entries(groups)
        .filter(([, m]) => m.rss >= 100)
        .sort((a, b) => b[1].rss - a[1].rss)
        .map(([name, m]) => `${name} ${KiBtoMiB(m.rss)}`)
        .join('; '),
  );
  lines.push(
    `  V8 after GC (MiB): heap used ${MiB(u.heapUsed)} of ${MiB(u.heapTotal)} (old ${space('old_space')}, ` +
      `code ${space('code_space')}, trusted ${space('trusted_space')}, new ${space('new_space')}, ` +
      `large ${space('large_object_space')}); external ${MiB(u.external)} (array buffers ${MiB(u.arrayBuffers)}); ` +
      `bytecode+metadata ${MiB(report.code.bytecode_and_metadata_size)}, machine code ${MiB(report.code.code_and_metadata_size)}, ` +
      `external script source ${MiB(report.code.external_script_source_size)}`,
  );
  const notable = report.builtinModules.filter((m) =>
    /^(http2|zlib|cluster|worker_threads|vm|dns|inspector|internal\/deps\/undici\/undici|internal\/deps\/cjs-module-lexer\/lexer|internal\/modules\/typescript)$/.test(
      m,
    ),
  );
  lines.push(
    `  Node builtin modules loaded: ${report.builtinModules.length} (of note: ${notable.join(', ') || 'none'})`,
  );
  return lines;
}

async function measureDaemon(label: string, start: Start, round: number): Promise<string[]> {
  const tag = `${label}-${round}`;
  const daemon: TestDaemon = await start({
    env: {
      NODE_OPTIONS: `--import=${PROBE} --expose-gc`,
      MEMORY_PROBE_V8_FLAGS: args['v8-flags'],
      ...Object.fromEntries(
        args.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      ),
      MEMORY_PROBE_OUT: join(dir, `${tag}.json`),
    },
  });
  const rest: KeepAliveRest = keepAliveRest(daemon.restUrl, daemon.ca, await daemon.token('admin'));
  const lines: string[] = [];
  try {
    const rss0 = await settledRss(daemon.pid);
    const groups0 = smapsGroups(daemon.pid);
    const at0 = await probe(daemon.pid, tag, false);
    if (args.snapshot) writeFileSync(join(dir, `${tag}.json.snapshot-wanted`), '');
    lines.push(...describe(`${label} with 0 apps`, rss0, groups0, at0.report));
    for (let i = 0; i < APPS; i++) {
      const name = `mem-${i}`;
      const body = { name, command: 'sleep 600', behavior: { exit: 'standby' } };
      ok(await rest.call('PUT', `/svc/app/${name}`, body), `PUT ${name}`);
    }
    const rssN = await settledRss(daemon.pid);
    const groupsN = smapsGroups(daemon.pid);
    const atN = await probe(daemon.pid, tag, args.snapshot);
    lines.push(...describe(`${label} with ${APPS} apps`, rssN, groupsN, atN.report));
    if (APPS > 0) lines.push(`  per app: ${((rssN - rss0) / APPS).toFixed(1)} KiB`);
    if (atN.snapshot !== undefined) lines.push(...summariseSnapshot(atN.snapshot));
  } finally {
    rest.close();
    await daemon.close();
  }
  return lines;
}

function smapsLine(label: string, pid: number, rss: number): string {
  return (
    `${label}: VmRSS ${KiBtoMiB(rss)} MiB; ` +
    Object.entries(smapsGroups(pid))
      .filter(([, m]) => m.rss >= 100)
      .sort((a, b) => b[1].rss - a[1].rss)
      .map(([name, m]) => `${name} ${KiBtoMiB(m.rss)}`)
      .join('; ')
  );
}

/** Pids of processes whose command line contains `needle` and whose environment has SVC_HOME=home. */
function pidsOf(needle: string, home: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmdline.includes(needle)) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`SVC_HOME=${home}`))
        pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/**
 * svc-identity and svc-auth-admin (builtin mode, the system apps of `root`'s apps/ directory): RSS
 * once both have written their ports, plus 10 s.
 */
async function measureIdentity(label: string, start: Start, root: string): Promise<string[]> {
  const daemon = await start({
    env: { ...BUILTIN_MODE_ENV, SVC_AUTH_ADMIN_LISTEN: '127.0.0.1:0' },
    files: {
      'apps/identity.yaml': readFileSync(join(root, 'apps/identity.yaml'), 'utf8'),
      'apps/authadmin.yaml': readFileSync(join(root, 'apps/authadmin.yaml'), 'utf8'),
    },
  });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ports = await daemon.ports();
      if (ports['issuer'] !== undefined && ports['admin_ui'] !== undefined) break;
      if (Date.now() > deadline)
        throw new Error(`${label}: identity ports never appeared: ${JSON.stringify(ports)}`);
      await sleep(200);
    }
    await sleep(10_000);
    const lines: string[] = [];
    for (const [app, needle] of [
      ['identity', 'svc-identity'],
      ['authadmin', 'svc-auth-admin'],
    ] as const)
      for (const pid of pidsOf(needle, daemon.home))
        lines.push(smapsLine(`${label} ${app}`, pid, await settledRss(pid)));
    return lines;
  } finally {
    await daemon.close();
  }
}

/** A system application's RSS (svc-agent) after 20 requests through it. */
async function measureSystemApp(label: string, start: Start, app: string, root: string): Promise<string[]> {
  if (app === 'identity') return measureIdentity(label, start, root);
  if (app !== 'agent') throw new Error('--system: "agent" or "identity" (with svc-auth-admin)');
  const daemon = await start({ agent: true });
  try {
    const { agentUrl } = await daemon.agent();
    const rest = keepAliveRest(agentUrl, daemon.ca, await daemon.token('admin'));
    for (let i = 0; i < 20; i++) ok(await rest.call('GET', '/svc/app/agent'), 'GET through the agent');
    const view = ok(await rest.call('GET', '/svc/app/agent'), 'GET').json<{ pid: number }>();
    rest.close();
    return [smapsLine(`${label} ${app}`, view.pid, await settledRss(view.pid))];
  } finally {
    await daemon.close();
  }
}

try {
  for (let round = 0; round < ROUNDS; round++)
    for (const { label, start, root } of builds) {
      const lines =
        args.system === undefined
          ? await measureDaemon(label, start, round)
          : await measureSystemApp(label, start, args.system, root);
      process.stdout.write(lines.join('\n') + '\n');
    }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
