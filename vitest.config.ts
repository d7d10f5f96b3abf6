import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// In CI a failed integration case runs once more; one that then passes is listed as flaky by
// test/flaky-reporter.ts (and foreign suites' reruns, testkit's rerunFailedOnce) in this file,
// which .ci/run prints under its summary.
const CI = process.env['CI'] === 'true';
if (CI) process.env['SVC_FLAKY_LOG'] ??= resolve('.ci-out/flaky.txt');

// Two projects: `unit` tests sit beside the code they test and touch no process or socket;
// `integration` tests under packages/*/test start real daemons on ephemeral ports.
export default defineConfig({
  test: {
    // CI also writes a JSON report from which .ci/run prints its "N passed, N failed" line.
    reporters: CI
      ? ['default', ['json', { outputFile: '.ci-out/vitest.json' }], './test/flaky-reporter.ts']
      : ['default'],
    // Builds svcd's bundle once, before the integration tests start their daemons in parallel
    // (each launcher would otherwise find it stale and rebuild it on its own).
    // The web UI (packages/web/dist, served by the agent) likewise, for the browser tests.
    globalSetup: ['packages/platform/build/vitest-setup.js', 'packages/web/test/global-setup.ts'],
    projects: [
      { test: { name: 'unit', include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'] } },
      {
        test: {
          name: 'integration',
          include: ['packages/*/test/**/*.test.ts', 'clients/*/*.test.ts', 'packaging/test/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Real processes on a shared 2-core machine: in CI a failed case gets one more run, and
          // one that passes then is reported as flaky (above), never silently.
          retry: CI ? 1 : 0,
        },
      },
    ],
  },
});
