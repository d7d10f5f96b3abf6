// Figure 3: stop one app whose process exits on SIGTERM (svc: POST /svc/app/<name>/disable).
import { alive, bounded, log, now, summarize, waitFor } from './lib/util.ts';
import { latencyRow, startManager, type Benchmark, type Row } from './lib/report.ts';

export const stopBenchmark: Benchmark = {
  name: 'stop',
  description: 'stop one app (SIGTERM, process exits at once)',
  async run(ctx) {
    const n = ctx.quick ? 15 : 60;
    const rows: Row[] = [];
    for (const kind of ctx.managers) {
      log(`stop: ${kind}`);
      const manager = await startManager(kind, ctx);
      try {
        const specs = Array.from({ length: n + 3 }, (_, i) => ({ name: `stop-${i}`, argv: ['sleep', '600'], restart: false }));
        await manager.prepare(specs);
        for (const spec of specs) await manager.start(spec);
        const samples: number[] = [];
        let returnedEarly = 0;
        for (const i of bounded(specs.length, 60_000)) {
          const spec = specs[i]!;
          const pid = await manager.pidOf(spec.name);
          if (!alive(pid)) throw new Error(`${kind}: ${spec.name} not running before stop`);
          const t0 = now();
          const timed = await manager.stop(spec.name);
          const ms = timed.innerMs ?? now() - t0;
          if (alive(pid)) {
            returnedEarly++;
            await waitFor(`${spec.name} to exit`, () => !alive(pid), 5000, 1);
          }
          if (i >= 3) samples.push(ms);
        }
        rows.push(latencyRow(kind, summarize(samples), returnedEarly > 0 ? { note: `${returnedEarly} answered before exit` } : {}));
      } finally {
        await manager.close();
      }
    }
    return [{ id: '3', title: 'Stop one app (exits on SIGTERM)', unit: 'ms', better: 'lower', target: '≤ 2 ms', rows }];
  },
};
