// vitest global setup: the bundle every test daemon runs is built (when stale) once, up front.
import { ensureBundle } from './bundle.js';

export function setup() {
  ensureBundle();
}
