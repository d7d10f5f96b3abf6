// Shared helpers of the benchmarks: timing, statistics, bounded loops, RSS, cleanup on any exit.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export const now = (): number => performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/** Resident set size of a process in KiB (VmRSS), or undefined when it is gone. */
export function rssKiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) a process has used so far, in ms (clock ticks of 10 ms), or 0 when it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** True while a process with this pid exists (and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Polls `predicate` every `intervalMs` until it is truthy or `timeoutMs` passes (then throws). */
export async function waitFor<T>(
  what: string,
  predicate: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  intervalMs = 2,
): Promise<T> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value !== undefined && value !== false) return value;
    if (now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** A loop bound in both count and time: `for (const i of bounded(n, ms))`. */
export function* bounded(count: number, ms: number): Generator<number> {
  const deadline = now() + ms;
  for (let i = 0; i < count; i++) {
    if (now() > deadline) return;
    yield i;
  }
}

// ---- cleanup: everything a benchmark starts registers how to stop it -------------------------------
const cleanups: { what: string; fn: () => Promise<void> | void }[] = [];

/** Registers a cleanup; returns a function that runs it now (and unregisters it). */
export function onCleanup(what: string, fn: () => Promise<void> | void): () => Promise<void> {
  const entry = { what, fn };
  cleanups.push(entry);
  return async () => {
    const i = cleanups.indexOf(entry);
    if (i < 0) return;
    cleanups.splice(i, 1);
    await entry.fn();
  };
}

/** Runs every registered cleanup, last registered first; errors are reported, never thrown. */
export async function runCleanups(): Promise<void> {
  while (cleanups.length > 0) {
    const entry = cleanups.pop()!;
    log(`cleanup: ${entry.what}`);
    try {
      await Promise.race([
        entry.fn(),
        sleep(15_000).then(() => {
          throw new Error('cleanup timed out');
        }),
      ]);
    } catch (error) {
      process.stderr.write(`bench: cleanup of ${entry.what} failed: ${(error as Error).message}\n`);
    }
  }
}

/** Kills a process group (or a single process when it has no group), ignoring ESRCH. */
export function killGroup(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
    } catch {
      // gone already
    }
  }
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

const t0 = now();
export function log(message: string): void {
  process.stderr.write(`[${((now() - t0) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
}

/** After 50 warm-up calls, up to `count` sequential calls within `maxMs`; their latencies in ms. */
export async function sequential(call: () => Promise<void>, count: number, maxMs: number): Promise<number[]> {
  for (let i = 0; i < 50; i++) await call();
  const samples: number[] = [];
  const deadline = now() + maxMs;
  while (samples.length < count && now() < deadline) {
    const t0 = now();
    await call();
    samples.push(now() - t0);
  }
  return samples;
}

/**
 * `inFlight` loops issuing calls back to back for `ms` (after one warm-up call each): completed
 * calls per second and every call's latency (ms).
 */
export async function closedLoop(
  call: () => Promise<void>,
  inFlight: number,
  ms: number,
): Promise<{ rate: number; samples: number[] }> {
  await Promise.all(Array.from({ length: inFlight }, () => call()));
  const samples: number[] = [];
  const t0 = now();
  const deadline = t0 + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (now() < deadline) {
        const start = now();
        await call();
        samples.push(now() - start);
      }
    }),
  );
  return { rate: samples.length / ((now() - t0) / 1000), samples };
}
