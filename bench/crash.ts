// Figure 5: crash → restarted. The process prints, appends $EPOCHREALTIME (bash, no fork) to a
// file and exits 1; the figure is the gap between the two stamps of the first run and its restart
// (exit + restart + bash start-up, the same command for every manager and for the floor).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bounded, log, summarize, waitFor } from './lib/util.ts';
import { latencyRow, startManager, type Benchmark, type Row } from './lib/report.ts';

export const crashBenchmark: Benchmark = {
  name: 'crash',
  description: 'crash → restarted (first restart), measured by stamps of the crashing process',
  async run(ctx) {
    const n = ctx.quick ? 5 : 20;
    const rows: Row[] = [];
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-crash-'));
    try {
      for (const kind of ctx.managers) {
        log(`crash: ${kind}`);
        const manager = await startManager(kind, ctx);
        try {
          const samples: number[] = [];
          let misses = 0;
          for (const i of bounded(n + 1, 120_000)) {
            const file = join(dir, `${kind}-${i}.t`);
            const spec = {
              name: `crash-${i}`,
              argv: ['bash', '-c', `echo crash; echo $EPOCHREALTIME >> ${file}; exit 1`],
              restart: true,
            };
            await manager.prepare([spec]);
            await manager.start(spec);
            const stamps = await waitFor(
              `${kind} to restart ${spec.name}`,
              async () => {
                const lines = (await readFile(file, 'utf8').catch(() => '')).trim().split('\n');
                return lines.length >= 2 ? lines.slice(0, 2).map(Number) : undefined;
              },
              5_000,
              1,
            ).catch(() => undefined);
            await manager.remove(spec.name);
            if (stamps === undefined) misses++;
            else if (i > 0) samples.push(((stamps[1] as number) - (stamps[0] as number)) * 1000);
          }
          if (misses > n / 2) throw new Error(`${kind}: ${misses} of ${n + 1} crashed processes were not restarted within 5 s`);
          rows.push(latencyRow(kind, summarize(samples), misses > 0 ? { note: `${misses} not restarted within 5 s` } : {}));
        } finally {
          await manager.close();
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return [
      { id: '5', title: 'Crash → restarted (first restart)', unit: 'ms', better: 'lower', target: '≤ 3 ms', rows },
    ];
  },
};
