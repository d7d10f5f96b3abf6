// A managed process of the events benchmark, the same for every subject: waits <delayMs>, then
// writes up to <count> lines `L <i> <stamp>\n` with one write(2) each, <intervalMs> apart (a blocking
// Atomics.wait, so pacing does not depend on an event loop), for at most <maxMs>, then `END\n`.
// <stamp> is process.hrtime.bigint() (CLOCK_MONOTONIC, one clock for every process of the machine)
// taken just before the write, so a reader computes printed → received with no clock offset.
// argv: <count> <intervalMs> <delayMs> [maxMs]
import { writeSync } from 'node:fs';

const [count = 2000, intervalMs = 2, delayMs = 500, maxMs = 60_000] = process.argv.slice(2).map(Number);
const pause = new Int32Array(new SharedArrayBuffer(4));
Atomics.wait(pause, 0, 0, delayMs);
const deadline = process.hrtime.bigint() + BigInt(Math.round(maxMs * 1e6));
for (let i = 0; i < count; i++) {
  const stamp = process.hrtime.bigint();
  if (stamp > deadline) break;
  writeSync(1, `L ${i} ${stamp}\n`);
  if (intervalMs > 0) Atomics.wait(pause, 0, 0, intervalMs);
}
writeSync(1, 'END\n');
