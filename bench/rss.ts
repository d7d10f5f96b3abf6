// Figures 4 and 8: manager RSS with 0, 100 and 200 long-running processes, and KiB per extra process.
import { log, rssKiB, sleep } from './lib/util.ts';
import { startManager, type Benchmark, type Row } from './lib/report.ts';
import type { Manager } from './managers/types.ts';

/** Median of a few VmRSS reads after a short settle (RSS moves with GC). */
async function settledRss(manager: Manager, quick: boolean): Promise<number> {
  await sleep(quick ? 500 : 1500);
  const reads: number[] = [];
  for (let i = 0; i < 5; i++) {
    const kib = rssKiB(manager.pid);
    if (kib === undefined) throw new Error(`${manager.kind}: manager pid ${manager.pid} is gone`);
    // svc: svcd plus svc-spawner (the process that holds the apps is part of the manager).
    const helpers = (manager.helperPids?.() ?? []).map((pid) => rssKiB(pid) ?? 0);
    reads.push(kib + helpers.reduce((a, b) => a + b, 0));
    await sleep(100);
  }
  reads.sort((a, b) => a - b);
  return reads[2]!;
}

export const rssBenchmark: Benchmark = {
  name: 'rss',
  description: 'manager RSS with 0, 100 and 200 processes; KiB per extra process',
  async run(ctx) {
    const at200: Row[] = [];
    const perProcess: Row[] = [];
    const at100: Row[] = [];
    const marginal: Row[] = [];
    for (const kind of ctx.managers) {
      log(`rss: ${kind}`);
      const manager = await startManager(kind, ctx);
      try {
        const rss0 = await settledRss(manager, ctx.quick);
        const specs = Array.from({ length: 200 }, (_, i) => ({
          name: `rss-${i}`,
          argv: ['sleep', '600'],
          restart: false,
        }));
        await manager.prepare(specs);
        for (const spec of specs.slice(0, 100)) await manager.start(spec);
        const rss100 = await settledRss(manager, ctx.quick);
        for (const spec of specs.slice(100)) await manager.start(spec);
        const rss200 = await settledRss(manager, ctx.quick);
        at100.push({ subject: kind, value: rss100 / 1024 });
        at200.push({ subject: kind, value: rss200 / 1024, note: `${(rss0 / 1024).toFixed(1)} MiB at 0` });
        perProcess.push({ subject: kind, value: (rss200 - rss0) / 200 });
        marginal.push({ subject: kind, value: (rss200 - rss100) / 100 });
      } finally {
        await manager.close();
      }
    }
    return [
      {
        id: '4a',
        title: 'Manager RSS with 200 processes',
        unit: 'MiB',
        better: 'lower',
        target: '≤ 70 MiB',
        rows: at200,
      },
      {
        id: '4b',
        title: 'RSS per extra process ((RSS(200) − RSS(0)) / 200)',
        unit: 'KiB',
        better: 'lower',
        target: '≤ 30 KiB',
        rows: perProcess,
      },
      {
        // 4b includes one-off warm-up (code paged in and compiled on the first starts); this is
        // what each further process costs once the manager is warm.
        id: '4c',
        title: 'RSS per extra process once warm ((RSS(200) − RSS(100)) / 100)',
        unit: 'KiB',
        better: 'lower',
        rows: marginal,
      },
      {
        id: '8',
        title: 'Daemon RSS with 100 registered running apps',
        unit: 'MiB',
        better: 'lower',
        rows: at100,
      },
    ];
  },
};
