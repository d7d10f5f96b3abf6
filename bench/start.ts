// Figures 1 and 2: API call → new long-running process running (p50/p99) with 1 app and with 200
// apps registered, and 200 starts in sequence (total).
import { bounded, log, now, summarize, alive } from './lib/util.ts';
import { latencyRow, startManager, type Benchmark, type Figure, type Row } from './lib/report.ts';
import type { AppSpec, Manager } from './managers/types.ts';

const LONG_RUNNING = ['sleep', '600'];

async function timedStart(manager: Manager, spec: AppSpec): Promise<number> {
  await manager.prepare([spec]);
  const t0 = now();
  const timed = await manager.start(spec);
  const ms = timed.innerMs ?? now() - t0;
  const pid = await manager.pidOf(spec.name);
  if (pid <= 0 || !alive(pid)) throw new Error(`${manager.kind}: ${spec.name} reported started but pid ${pid} is not running`);
  return ms;
}

/** Start and remove `count` apps one after the other; returns the start latencies. */
async function startRemoveLoop(manager: Manager, prefix: string, count: number, warmup: number): Promise<number[]> {
  const samples: number[] = [];
  for (const i of bounded(count + warmup, 60_000)) {
    const spec = { name: `${prefix}-${i}`, argv: LONG_RUNNING, restart: false };
    const ms = await timedStart(manager, spec);
    if (i >= warmup) samples.push(ms);
    await manager.remove(spec.name);
  }
  return samples;
}

export const startBenchmark: Benchmark = {
  name: 'start',
  description: 'API call → long-running process running, at 1 and at 200 apps; 200 starts in sequence',
  async run(ctx) {
    const n = ctx.quick ? 15 : 60;
    const many = 200;
    const at1: Row[] = [];
    const at200: Row[] = [];
    const sequence: Row[] = [];
    for (const kind of ctx.managers) {
      log(`start: ${kind}`);
      const manager = await startManager(kind, ctx);
      try {
        at1.push(latencyRow(kind, summarize(await startRemoveLoop(manager, 'one', n, 5))));
        const specs = Array.from({ length: many }, (_, i) => ({ name: `seq-${i}`, argv: LONG_RUNNING, restart: false }));
        await manager.prepare(specs);
        let total = 0;
        const t0 = now();
        for (const spec of specs) {
          const t = now();
          const timed = await manager.start(spec);
          total += timed.innerMs ?? now() - t;
        }
        const wall = now() - t0;
        // The floor times each spawn inside its own process: its total is the sum of those.
        sequence.push({ subject: kind, value: (kind === 'floor' ? total : wall) / 1000, n: many });
        for (const spec of specs.slice(0, 5)) {
          const pid = await manager.pidOf(spec.name);
          if (!alive(pid)) throw new Error(`${kind}: ${spec.name} is not running`);
        }
        at200.push(latencyRow(kind, summarize(await startRemoveLoop(manager, 'more', n, 2))));
      } finally {
        await manager.close();
      }
    }
    const figures: Figure[] = [
      {
        id: '1a',
        title: 'API call → new long-running process running, 1 app',
        unit: 'ms',
        better: 'lower',
        target: '≤ 2.5 ms',
        rows: at1,
      },
      {
        id: '1b',
        title: 'API call → new long-running process running, 200 apps registered',
        unit: 'ms',
        better: 'lower',
        target: 'no slower than at 1 app',
        rows: at200,
      },
      { id: '2', title: '200 starts in sequence (total)', unit: 's', better: 'lower', target: '≤ 0.6 s', rows: sequence },
    ];
    return figures;
  },
};
