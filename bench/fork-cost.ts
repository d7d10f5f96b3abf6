// What a spawn costs the spawning process, and what a spawner helper would save (the measurement
// behind bench/RESULTS.md's "spawner helper" decision). For each size of extra resident anonymous
// memory in the parent, alternately: `child_process.spawn` in the parent (the synchronous call,
// which in libuv returns only after the child has exec'd), and a request → pid round trip to a
// minimal long-lived Node helper that spawns (newline-delimited JSON over pipes), and the same round
// trip to svc-spawner (packages/spawner) the way svcd makes it (a synchronous SPAWN on its socket).
// Usage: npx node bench/fork-cost.ts [--sizes 0,16,32] [--n 60]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { encodeSpawn, SpawnerConnection } from '@svc/daemon';
import { parseArgs } from 'node:util';
import { now, percentile, sleep } from './lib/util.ts';

const { values } = parseArgs({
  options: { sizes: { type: 'string', default: '0,16,32' }, n: { type: 'string', default: '60' } },
});
const n = Number(values.n);

const HELPER = `
const { spawn } = require('node:child_process');
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  for (let i; (i = buf.indexOf('\\n')) >= 0; ) {
    const req = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    const c = spawn(req.file, req.args, { detached: true, stdio: 'ignore', env: req.env });
    c.unref();
    process.stdout.write(JSON.stringify({ id: req.id, pid: c.pid ?? 0 }) + '\\n');
  }
});`;

function anonMiB(pid: number): number {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return Number(/^Anonymous:\s+(\d+)/m.exec(text)?.[1] ?? 0) / 1024;
}

const helper = spawn(process.execPath, ['--max-semi-space-size=1', '-e', HELPER], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const pending = new Map<number, (pid: number) => void>();
let buffered = '';
helper.stdout.setEncoding('utf8').on('data', (data: string) => {
  buffered += data;
  for (let i; (i = buffered.indexOf('\n')) >= 0;) {
    const reply = JSON.parse(buffered.slice(0, i)) as { id: number; pid: number };
    buffered = buffered.slice(i + 1);
    pending.get(reply.id)?.(reply.pid);
    pending.delete(reply.id);
  }
});
let nextId = 0;
const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
const viaHelper = (): Promise<number> =>
  new Promise((resolve) => {
    const id = ++nextId;
    pending.set(id, resolve);
    helper.stdin.write(JSON.stringify({ id, file: 'sleep', args: ['600'], env }) + '\n');
  });

// svc-spawner in a temp run dir, reached as svcd reaches it.
const spawnerDir = mkdtempSync(join(tmpdir(), 'svc-fork-cost-'));
const spawnerBinary = resolve(import.meta.dirname, '../packages/spawner/build/svc-spawner');
if (spawnSync(process.execPath, [resolve(import.meta.dirname, '../packages/spawner/build.js'), '--strict']).status !== 0)
  throw new Error('svc-spawner could not be built');
const native = spawn(spawnerBinary, [spawnerDir], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
await new Promise<void>((ok) => native.stdout.once('data', () => ok()));
const connection = await SpawnerConnection.open(join(spawnerDir, 'spawner.sock'));
const viaNative = (): number => {
  const reply = connection.request((req) =>
    encodeSpawn(req, {
      tag: '',
      file: 'sleep',
      argv: ['sleep', '600'],
      env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      cwd: '/',
      outputPath: '',
      stdin: undefined,
      user: undefined,
      cgroupProcs: [],
    }),
  );
  return reply.type === 'spawned' ? reply.pid : 0;
};

const ballast: Buffer[] = [];
const pids: number[] = [];
try {
  await viaHelper();
  viaNative();
  for (const size of values.sizes.split(',').map(Number)) {
    while (ballast.length < size) ballast.push(Buffer.alloc(1 << 20, 1)); // resident, anonymous
    const direct: number[] = [];
    const helped: number[] = [];
    const natively: number[] = [];
    for (let i = 0; i < n; i++) {
      let t = now();
      const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore', env });
      direct.push(now() - t);
      child.unref();
      pids.push(child.pid ?? 0);
      await sleep(2);
      t = now();
      pids.push(await viaHelper());
      helped.push(now() - t);
      await sleep(2);
      t = now();
      pids.push(viaNative());
      natively.push(now() - t);
      await sleep(2);
    }
    direct.sort((a, b) => a - b);
    helped.sort((a, b) => a - b);
    natively.sort((a, b) => a - b);
    process.stdout.write(
      `parent anonymous ${anonMiB(process.pid).toFixed(1)} MiB: spawn() p50 ${percentile(direct, 50).toFixed(2)} ms (min ${direct[0]!.toFixed(2)}); ` +
        `helper (anonymous ${anonMiB(helper.pid!).toFixed(1)} MiB) request → pid p50 ${percentile(helped, 50).toFixed(2)} ms (min ${helped[0]!.toFixed(2)}); ` +
        `svc-spawner (anonymous ${anonMiB(connection.pid).toFixed(2)} MiB) SPAWN → pid p50 ${percentile(natively, 50).toFixed(2)} ms (min ${natively[0]!.toFixed(2)})\n`,
    );
  }
} finally {
  for (const pid of pids) {
    try {
      if (pid > 0) process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  helper.kill();
  connection.close();
  native.kill('SIGKILL');
  rmSync(spawnerDir, { recursive: true, force: true });
}
