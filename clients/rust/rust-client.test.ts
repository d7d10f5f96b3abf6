// The Rust client's own suite (clients/rust, `cargo test`) run once against real daemons started
// by `svc-testkit serve` (SVC_TESTKIT_COMMAND), after `cargo clippy --all-targets -- -D warnings`;
// each libtest case, and clippy, is one vitest case. The build directory is clients/rust/target
// (gitignored), so a fresh clone builds from scratch (cold) and later runs reuse it (warm).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { describeForeignSuite, parseLibtestOutput } from '@svc/testkit/foreign-suite';

const REPO = resolve(import.meta.dirname, '../..');
const CRATE = join(REPO, 'clients/rust');
const TESTKIT = join(REPO, 'packages/testkit/bin/svc-testkit.js');
/** Cold build plus the suite on a loaded 2-core machine, with room to spare. */
const TIMEOUT_MS = 900_000;

/** rustup installs into ~/.cargo/bin, which a non-login shell may not have on PATH. */
function cargoPath(): string {
  const extra = join(process.env['CARGO_HOME'] ?? join(homedir(), '.cargo'), 'bin');
  const path = process.env['PATH'] ?? '';
  return existsSync(extra) ? `${path}${delimiter}${extra}` : path;
}

/** Runs a shell line in the crate, stdout and stderr interleaved (cargo's `Running` lines name the binary). */
function run(line: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((done) => {
    execFile(
      'bash',
      ['-c', `exec ${line} 2>&1`],
      {
        cwd: CRATE,
        timeout: TIMEOUT_MS,
        maxBuffer: 256 * 1024 * 1024,
        env: {
          ...process.env,
          PATH: cargoPath(),
          CARGO_TERM_COLOR: 'never',
          SVC_TESTKIT_COMMAND: JSON.stringify([process.execPath, TESTKIT, 'serve', '--json']),
        },
      },
      (error, stdout) => done({ ok: error === null, output: stdout }),
    );
  });
}

await describeForeignSuite('Rust client (clients/rust, cargo test against svc-testkit)', {
  minimumCases: 47,
  run: async () => {
    const clippy = await run('cargo clippy --all-targets --locked -- -D warnings');
    const tests = await run('cargo test --locked --no-fail-fast');
    const results = parseLibtestOutput(tests.output);
    results.set('cargo clippy --all-targets -- -D warnings', {
      outcome: clippy.ok ? 'passed' : 'failed',
      message: clippy.output.slice(-6000),
    });
    if (!tests.ok && ![...results.values()].some((r) => r.outcome === 'failed'))
      // A build failure or a crashed test binary reports no failed case: make it one.
      results.set('cargo test', { outcome: 'failed', message: tests.output.slice(-6000) });
    return { results, output: `${clippy.output}\n${tests.output}` };
  },
});
