import { defineConfig } from 'vitest/config';

// Two projects: `unit` tests sit beside the code they test and touch no process or socket;
// `integration` tests under packages/*/test start real daemons on ephemeral ports.
export default defineConfig({
  test: {
    // CI also writes a JSON report from which .ci/run prints its "N passed, N failed" line.
    reporters: process.env['CI'] ? ['default', ['json', { outputFile: '.ci-out/vitest.json' }]] : ['default'],
    // Builds svcd's bundle once, before the integration tests start their daemons in parallel
    // (each launcher would otherwise find it stale and rebuild it on its own).
    // The web UI (packages/web/dist, served by the agent) likewise, for the browser tests.
    globalSetup: ['packages/daemon/build/vitest-setup.js', 'packages/web/test/global-setup.ts'],
    projects: [
      { test: { name: 'unit', include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'] } },
      {
        test: {
          name: 'integration',
          include: ['packages/*/test/**/*.test.ts', 'clients/*/*.test.ts', 'packaging/test/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
