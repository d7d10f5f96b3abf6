// Loads the language-neutral conformance scenarios (spec/conformance/S<n>.json; format in
// spec/README.md) for the TypeScript client's tests.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const CONFORMANCE_DIR = join(import.meta.dirname, '../../../spec/conformance');

/** Every scenario file, in order S1, S2, … */
export function loadScenarios<T>(): T[] {
  return readdirSync(CONFORMANCE_DIR)
    .filter((f) => /^S\d+\.json$/.test(f))
    .sort((a, b) => Number(a.slice(1, -5)) - Number(b.slice(1, -5)))
    .map((f) => JSON.parse(readFileSync(join(CONFORMANCE_DIR, f), 'utf8')) as T);
}
