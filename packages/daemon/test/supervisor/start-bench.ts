// Start-path benchmark (not a test; no timed assertions anywhere):
//   npx node packages/daemon/test/supervisor/start-bench.ts [starts=200] [--prof]
// Measures, in one process and one run, so the figures are comparable on a busy machine:
// - floor:    raw child_process.spawn('sleep', ['600']) until 'spawn' fired (detached, unref'd)
// - register: supervisor.register() of a new long-running app until it returns (process running,
//             definition fsynced), p50/p90 and the total of N registrations in sequence
// - stop:     supervisor.disable() of a running app until it returns (process exited on SIGTERM)
// Every process started is killed before exit. Rounds are interleaved (floor, register, floor...)
// so that load changes during the run affect both alike.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/log/logger.ts';
import { createSecretCrypter } from '../../src/model/secret-crypter.ts';
import { createSupervisor } from '../../src/supervisor/supervisor.ts';

const count = Number(process.argv[2] ?? 200);
// The supervisor unrefs its children and timers; keep the loop alive while the bench runs.
const keepAlive = setInterval(() => undefined, 1000);
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
const sup = await createSupervisor({
  workDir: join(dir, 'work'),
  crypter: createSecretCrypter(Buffer.alloc(32, 7)),
  daemonUrl: 'https://127.0.0.1:16058',
  logger: silentLogger,
  processKeySecret: Buffer.alloc(32, 9),
  stopGraceMs: 2000,
});

const floorPids: number[] = [];
const spawnFloor = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
    child.once('spawn', () => {
      const ms = performance.now() - t0;
      floorPids.push(child.pid ?? 0);
      child.unref();
      resolve(ms);
    });
    child.once('error', reject);
  });

const pct = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
};
const fmt = (values: number[]): string =>
  `p50 ${pct(values, 50).toFixed(2)} ms  p90 ${pct(values, 90).toFixed(2)} ms  (n=${values.length})`;

// Warm-up (JIT, first directory creations).
for (let i = 0; i < 10; i++) {
  await spawnFloor();
  await sup.register({ name: `warm${i}`, command: 'sleep 600' }, 'bench');
}

const floor: number[] = [];
const register: number[] = [];
let registerTotal = 0;
for (let i = 0; i < count; i++) {
  floor.push(await spawnFloor());
  const t0 = performance.now();
  await sup.register({ name: `app${i}`, command: 'sleep 600' }, 'bench');
  const ms = performance.now() - t0;
  register.push(ms);
  registerTotal += ms;
}

const stop: number[] = [];
for (let i = 0; i < Math.min(count, 50); i++) {
  const t0 = performance.now();
  await sup.disable(`app${i}`);
  stop.push(performance.now() - t0);
}

// Sequence of N starts without interleaved floor spawns (the "200 starts in sequence" figure).
const seq0 = performance.now();
for (let i = 0; i < count; i++) await sup.register({ name: `seq${i}`, command: 'sleep 600' }, 'bench');
const sequence = performance.now() - seq0;

console.log(`starts: ${count}, ${new Date().toISOString()}`);
console.log(`floor spawn('sleep 600')   ${fmt(floor)}`);
console.log(
  `register() -> running      ${fmt(register)}  ratio p50 ${(pct(register, 50) / pct(floor, 50)).toFixed(2)}`,
);
console.log(
  `${count} register() in sequence  ${(sequence / 1000).toFixed(3)} s (interleaved total ${(registerTotal / 1000).toFixed(3)} s)`,
);
console.log(`disable() -> exited        ${fmt(stop)}`);

await sup.detach();
for (const app of sup.list()) {
  const pid = app['pid'];
  if (typeof pid === 'number') {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
for (const pid of floorPids) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}
rmSync(dir, { recursive: true, force: true });
clearInterval(keepAlive);
