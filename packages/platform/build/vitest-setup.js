// vitest global setup: the bundle every test daemon runs is built (when stale) once, up front, and
// so is svc-spawner (packages/spawner), which each test daemon would otherwise build on its own.
import process from 'node:process';
import { buildSpawner } from '@svc/spawner/build';
import { ensureBundle } from './bundle.js';

export function setup() {
  ensureBundle();
  const problem = buildSpawner();
  if (problem !== undefined)
    process.stderr.write(`svc-spawner not built (daemons spawn in-process): ${problem}\n`);
}
