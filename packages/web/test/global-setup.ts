// vitest global setup: the web UI is built (when stale) once, before browser test files start in
// parallel, so no two of them build packages/web/dist at the same time.
import { ensureWebBuild } from './web-build.ts';

export function setup(): void {
  ensureWebBuild();
}
