// CI's list of flaky cases: a case that failed and then passed on its retry (vitest.config.ts sets
// `retry` in CI) is written to SVC_FLAKY_LOG, where foreign suites add theirs (testkit's
// rerunFailedOnce); .ci/run prints the list under its summary line. Passing on a retry still
// passes, but never silently.
import { writeFileSync } from 'node:fs';
import type { Reporter, TestCase } from 'vitest/node';
import { recordFlaky } from '@svc/testkit/flaky';

export default class FlakyReporter implements Reporter {
  onInit(): void {
    const log = process.env['SVC_FLAKY_LOG'];
    if (log !== undefined) writeFileSync(log, '');
  }

  onTestCaseResult(testCase: TestCase): void {
    const diagnostic = testCase.diagnostic();
    if (diagnostic?.flaky !== true) return;
    const module = testCase.module.moduleId.replace(`${process.cwd()}/`, '');
    recordFlaky(
      `${module} > ${testCase.fullName} (passed on retry ${diagnostic.retryCount})`,
      testCase.result().errors?.[0]?.message ?? '',
    );
  }
}
