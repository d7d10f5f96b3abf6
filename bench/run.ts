// Side-by-side benchmarks: svc against pm2, supervisord and the raw-spawn floor, in one run on one
// machine. Usage: npm run bench -- [--quick] [--only start,stop,rss,crash,transport,token,events,tasks,forward,exitcode]
//                                   [--managers floor,svc,pm2,supervisord] [--profile]
// Prints a table (every svc figure with its ratio to each peer) and writes bench/out/results.json.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { crashBenchmark } from './crash.ts';
import { eventsBenchmark } from './events.ts';
import { exitCodeBenchmark } from './exit-code.ts';
import { forwardBenchmark } from './forward.ts';
import { renderTable, type BenchContext, type Benchmark, type Figure } from './lib/report.ts';
import { log, runCleanups } from './lib/util.ts';
import { MANAGER_KINDS, type ManagerKind } from './managers/types.ts';
import { rssBenchmark } from './rss.ts';
import { startBenchmark } from './start.ts';
import { tasksBenchmark } from './tasks.ts';
import { stopBenchmark } from './stop.ts';
import { tokenBenchmark } from './token.ts';
import { transportBenchmark } from './transport.ts';

const BENCHMARKS: readonly Benchmark[] = [
  startBenchmark,
  stopBenchmark,
  rssBenchmark,
  crashBenchmark,
  transportBenchmark,
  tokenBenchmark,
  eventsBenchmark,
  tasksBenchmark,
  forwardBenchmark,
  exitCodeBenchmark,
];
const OUT = join(import.meta.dirname, 'out');

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    managers: { type: 'string' },
    profile: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write(
    [
      'npm run bench -- [--quick] [--only <name>[,<name>…]] [--managers floor,svc,pm2,supervisord] [--profile]',
      '',
      ...BENCHMARKS.map((b) => `  ${b.name.padEnd(10)} ${b.description}`),
      '',
      '--profile starts svcd with --cpu-prof (profiles in bench/out/profiles).',
      '',
    ].join('\n'),
  );
  process.exit(0);
}

const only = values.only?.split(',').map((s) => s.trim()).filter(Boolean);
for (const name of only ?? []) {
  if (!BENCHMARKS.some((b) => b.name === name)) {
    process.stderr.write(`bench: unknown benchmark ${name}; one of ${BENCHMARKS.map((b) => b.name).join(', ')}\n`);
    process.exit(2);
  }
}
const managers = (values.managers?.split(',').map((s) => s.trim()) ?? [...MANAGER_KINDS]) as ManagerKind[];
for (const m of managers) {
  if (!MANAGER_KINDS.includes(m)) {
    process.stderr.write(`bench: unknown manager ${m}; one of ${MANAGER_KINDS.join(', ')}\n`);
    process.exit(2);
  }
}
const profileDir = values.profile ? join(OUT, 'profiles') : undefined;
const ctx: BenchContext = {
  quick: values.quick,
  managers,
  profileDir,
  svcEnv: () => (profileDir === undefined ? undefined : { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` }),
};

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    log(`bench: ${signal}, stopping everything it started…`);
    void runCleanups().finally(() => process.exit(130));
  });
}

await mkdir(OUT, { recursive: true });
if (profileDir !== undefined) await mkdir(profileDir, { recursive: true });
const figures: Figure[] = [];
const errors: { benchmark: string; error: string }[] = [];
const started = new Date();
for (const benchmark of BENCHMARKS) {
  if (only !== undefined && !only.includes(benchmark.name)) continue;
  if (interrupted) break;
  log(`== ${benchmark.name}: ${benchmark.description}`);
  try {
    figures.push(...(await benchmark.run(ctx)));
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(`bench: ${benchmark.name} failed: ${message}`);
    errors.push({ benchmark: benchmark.name, error: message });
  } finally {
    await runCleanups();
  }
}

const table = renderTable(figures);
process.stdout.write(`\n${table}\n`);
const machine = {
  date: started.toISOString(),
  node: process.version,
  cpus: os.cpus().length,
  cpu: os.cpus()[0]?.model ?? '',
  memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  kernel: os.release(),
  quick: ctx.quick,
  managers,
};
await writeFile(join(OUT, 'results.json'), JSON.stringify({ machine, figures, errors }, null, 2) + '\n');
await writeFile(join(OUT, 'results.md'), `Run of ${machine.date} (${machine.cpus} × ${machine.cpu}, Node ${machine.node}${ctx.quick ? ', --quick' : ''})\n\n${table}\n`);
log(`bench: wrote ${join(OUT, 'results.json')}${errors.length > 0 ? `; ${errors.length} benchmark(s) failed` : ''}`);
await runCleanups();
// pm2's client API keeps handles open after disconnect(); everything the bench started is stopped
// by now, so leave explicitly rather than wait for them.
const leftover = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'Timeout');
if (leftover.length > 0) log(`bench: exiting with open handles: ${leftover.join(', ')}`);
process.exit(errors.length > 0 ? 1 : 0);
