// CI's list of flaky cases: a case that failed and then passed on its retry (vitest.config.ts sets
// `retry` in CI) is written to SVC_FLAKY_LOG, where foreign suites add theirs (testkit's
// rerunFailedOnce); .ci/run prints the list under its summary line. Passing on a retry still
// passes, but never silently.
import { appendFileSync, writeFileSync } from 'node:fs';
import type { Reporter, TestCase } from 'vitest/node';

export default class FlakyReporter implements Reporter {
  readonly #log = process.env['SVC_FLAKY_LOG'];

  onInit(): void {
    if (this.#log !== undefined) writeFileSync(this.#log, '');
  }

  onTestCaseResult(testCase: TestCase): void {
    const diagnostic = testCase.diagnostic();
    if (diagnostic?.flaky !== true || this.#log === undefined) return;
    const first = testCase.result().errors?.[0];
    const why = first === undefined ? '' : ` — first failure: ${first.message.replace(/\s+/g, ' ').slice(0, 400)}`;
    const line = `${testCase.module.moduleId.replace(`${process.cwd()}/`, '')} > ${testCase.fullName} (passed on retry ${diagnostic.retryCount})${why}`;
    console.warn(`[flaky] ${line}`);
    appendFileSync(this.#log, `${line}\n`);
  }
}
