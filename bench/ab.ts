// Paired A/B of two svcd builds on a shared, noisy machine: A is a checkout of another revision
// (its testkit starts its own bundle), B this checkout; every operation alternates A, B, A, B… so
// both see the same load, and the figure is B/A. Same operations as figures 1a, 3 and 5.
//   git archive <rev> | tar -x -C /tmp/ab-base && ln -s "$PWD/node_modules" /tmp/ab-base/node_modules
//   (cd /tmp/ab-base && node packages/platform/build/build.js)
//   AB_BASE=/tmp/ab-base N=40 ONLY=start,stop,crash npx node bench/ab.ts
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { startTestDaemon } from '@svc/testkit';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keepAliveRest, ok, type KeepAliveRest } from './lib/rest.ts';
import { alive, now, summarize, waitFor } from './lib/util.ts';

type Start = typeof startTestDaemon;
const base = process.env['AB_BASE'] ?? '/tmp/ab-base';
const startA = ((await import(join(base, 'packages/testkit/src/index.ts'))) as { startTestDaemon: Start })
  .startTestDaemon;
const startB = startTestDaemon;
const n = Number(process.env['N'] ?? 40);
const only = (process.env['ONLY'] ?? 'start,stop,crash').split(',');
const daemons = [await startA({}), await startB({})];
const dir = await mkdtemp(join(tmpdir(), 'svc-ab-'));
try {
  const rests: KeepAliveRest[] = [];
  for (const d of daemons) rests.push(keepAliveRest(d.restUrl, d.ca, await d.token('admin')));
  const put = (r: KeepAliveRest, name: string, command: string, exit = 'standby') =>
    r.call('PUT', `/svc/app/${name}`, { name, command, behavior: { exit } });
  const samples: Record<string, [number[], number[]]> = {};
  const add = (k: string, i: number, v: number) => (samples[k] ??= [[], []])[i]!.push(v);
  for (let i = 0; i < 10; i++)
    for (const r of rests) {
      ok(await put(r, `w${i}`, 'sleep 600'), 'put');
      ok(await r.call('DELETE', `/svc/app/w${i}`), 'del');
    }
  for (let k = 0; k < n; k++) {
    for (const [i, r] of rests.entries()) {
      if (only.includes('start')) {
        const t0 = now();
        const v = ok(await put(r, `s${k}`, 'sleep 600'), 'put').json<{ pid: number }>();
        add('start (PUT, 1 app + k running)', i, now() - t0);
        if (!alive(v.pid)) throw new Error('not running');
      }
      if (only.includes('stop')) {
        const pid = ok(await put(r, `t${k}`, 'sleep 600'), 'put').json<{ pid: number }>().pid;
        const t0 = now();
        ok(await r.call('POST', `/svc/app/t${k}/disable`), 'disable');
        add('stop (POST disable)', i, now() - t0);
        if (alive(pid)) await waitFor('exit', () => !alive(pid), 5000, 1);
        ok(await r.call('DELETE', `/svc/app/t${k}`), 'del');
      }
      if (only.includes('crash')) {
        const file = join(dir, `${i}-${k}.t`);
        ok(
          await put(r, `c${k}`, `bash -c 'echo crash; echo $EPOCHREALTIME >> ${file}; exit 1'`, 'restart'),
          'put',
        );
        const stamps = await waitFor(
          'restart',
          async () => {
            const lines = (await readFile(file, 'utf8').catch(() => '')).trim().split('\n');
            return lines.length >= 2 ? lines.slice(0, 2).map(Number) : undefined;
          },
          5000,
          1,
        );
        ok(await r.call('DELETE', `/svc/app/c${k}`), 'del');
        add('crash → restarted', i, ((stamps[1] as number) - (stamps[0] as number)) * 1000);
      }
    }
  }
  console.log(`load ${(await readFile('/proc/loadavg', 'utf8')).split(' ')[0]}, n=${n} pairs`);
  for (const [k, [a, b]] of Object.entries(samples)) {
    const sa = summarize(a),
      sb = summarize(b);
    const ratios = a.map((x, j) => (b[j] as number) / x).sort((p, q) => p - q);
    console.log(
      `${k.padEnd(32)} A p50 ${sa.p50.toFixed(2)} ms  B p50 ${sb.p50.toFixed(2)} ms  B/A of p50 ${(sb.p50 / sa.p50).toFixed(2)}  median paired ratio ${ratios[ratios.length >> 1]!.toFixed(2)}  (A min ${sa.min.toFixed(2)}, B min ${sb.min.toFixed(2)})`,
    );
  }
  for (const r of rests) r.close();
} finally {
  for (const d of daemons) await d.close();
  await rm(dir, { recursive: true, force: true });
}
