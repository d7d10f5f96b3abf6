// CI's list of flaky cases (docs/decisions.md, "Tests and CI"): one line per case
// that failed and then passed on its retry, appended to SVC_FLAKY_LOG (set by vitest.config.ts in
// CI) by test/flaky-reporter.ts for vitest's own cases and by rerunFailedOnce for foreign suites'.
import { appendFileSync } from 'node:fs';

/** Prints a case that failed and then passed on its retry, and adds it to CI's flaky list. */
export function recordFlaky(id: string, firstFailure: string): void {
  const line = `${id} — first failure: ${firstFailure.replace(/\s+/g, ' ').slice(0, 400)}`;
  console.warn(`[flaky] ${line}`);
  const log = process.env['SVC_FLAKY_LOG'];
  if (log !== undefined && log !== '') appendFileSync(log, `${line}\n`);
}
