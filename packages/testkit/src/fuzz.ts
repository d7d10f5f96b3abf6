// Shared knobs of the reliability suite (docs/reliability.md): the soak flag, seeds that can be
// replayed, and the "throws only its documented error type" property of the fuzz tests.
import type fc from 'fast-check';

/** `SVC_SOAK=1` (npm run test:soak) turns every reliability test into its longer variant. */
export const SOAK = process.env['SVC_SOAK'] === '1';

/**
 * Timeout of a fuzz test: its runs are bounded, but a loaded CI machine (2 cores, the whole suite in
 * parallel) can make a second's worth of runs take several; vitest's 5 s unit default is too tight.
 */
export const FUZZ_TIMEOUT_MS = 60_000;

/** `base` normally, `base * factor` under SVC_SOAK=1. */
export function soakScaled(base: number, factor = 20): number {
  return SOAK ? base * factor : base;
}

/**
 * A seed for a randomised test: `SVC_SEED` (or the test-specific variable) when set, else a fresh
 * one. Printed so that a failing run can be replayed with `SVC_SEED=<seed>`.
 */
export function testSeed(what: string, variable = 'SVC_SEED'): number {
  const given = process.env[variable] ?? process.env['SVC_SEED'];
  const seed = given !== undefined && given !== '' ? Number(given) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isSafeInteger(seed)) throw new Error(`${variable} must be an integer, got ${given}`);
  console.log(`[reliability] ${what}: seed ${seed} (replay with ${variable}=${seed})`);
  return seed;
}

/** A small deterministic PRNG (mulberry32) for seeded test schedules; returns [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * fast-check parameters: `numRuns` scaled by the soak flag, the seed from `SVC_FUZZ_SEED` when set
 * (fast-check prints the seed and path of every failure, so a counterexample replays exactly).
 */
export function fuzzParameters<T>(numRuns: number): fc.Parameters<T> {
  const seed = process.env['SVC_FUZZ_SEED'];
  return {
    numRuns: soakScaled(numRuns),
    ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}),
  };
}

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Runs `action`; returns its value, or undefined when it threw an instance of one of `allowed`
 * with a clear message. Anything else (TypeError, RangeError, a stack overflow, an empty message)
 * is rethrown, failing the property.
 */
export function throwsOnly<T>(allowed: ErrorClass | readonly ErrorClass[], action: () => T): T | undefined {
  try {
    return action();
  } catch (error) {
    expectDocumentedError(allowed, error);
    return undefined;
  }
}

/** Fails unless `error` is an instance of one of `allowed` with a clear (non-empty, bounded) message. */
export function expectDocumentedError(allowed: ErrorClass | readonly ErrorClass[], error: unknown): void {
  const classes = Array.isArray(allowed) ? allowed : [allowed as ErrorClass];
  if (!classes.some((c) => error instanceof c)) {
    throw new Error(`undocumented error type: ${String(error)}`, { cause: error });
  }
  const message = (error as Error).message;
  if (message.trim() === '' || message.length > 4096) {
    throw new Error(`error without a clear message (${message.length} characters)`, { cause: error });
  }
}
