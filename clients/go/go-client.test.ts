// The Go client library's suite (clients/go, its own Go module), run once by Go's own tools and
// surfaced case by case: `gofmt`, `go vet` and staticcheck (each one case), then `go test -race -json`,
// every test and subtest one case. The suite starts its own test daemons with the command in
// SVC_TESTKIT_COMMAND (spec/testkit.md), run by this Node (24).
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describeForeignSuite, parseGoTestJson, type SuiteResults } from '@svc/testkit/foreign-suite';

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../..');
const MODULE = resolve(import.meta.dirname);
const TESTKIT = resolve(REPO, 'packages/testkit/bin/svc-testkit.js');
/** staticcheck, fetched through the Go module proxy at this pinned version (cached by Go). */
const STATICCHECK = 'honnef.co/go/tools/cmd/staticcheck@v0.8.2';
const MAX_BUFFER = 64 * 1024 * 1024;

const goEnv: NodeJS.ProcessEnv = {
  ...process.env,
  GOFLAGS: '-mod=readonly',
  SVC_TESTKIT_COMMAND: JSON.stringify([process.execPath, TESTKIT, 'serve', '--json']),
};

interface Outcome {
  ok: boolean;
  output: string;
}

async function tool(args: string[], timeout: number): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run('go', args, { cwd: MODULE, env: goEnv, timeout, maxBuffer: MAX_BUFFER });
    return { ok: true, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: string | number; stdout?: string; stderr?: string; message: string };
    if (failed.code === 'ENOENT') throw new Error('go is not installed: run script/test-deps.sh', { cause: error });
    return { ok: false, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}\n${failed.message}` };
  }
}

await describeForeignSuite('Go client library (clients/go) against a real svcd', {
  minimumCases: 120,
  run: async () => {
    const results: SuiteResults = new Map();
    // The static checks and the tests are independent: run them side by side (the tests mostly
    // wait on daemons while the checks compile).
    const checks = (async () => {
      const format = await run('gofmt', ['-l', '.'], { cwd: MODULE }).then(
        ({ stdout }) => ({ ok: stdout.trim() === '', output: `files not gofmt-formatted:\n${stdout}` }),
        (error: Error) => ({ ok: false, output: error.message }),
      );
      const vet = await tool(['vet', './...'], 300_000);
      const check = await tool(['run', STATICCHECK, './...'], 420_000);
      return { format, vet, check };
    })();
    checks.catch(() => undefined); // a failure surfaces where it is awaited below
    const test = await tool(['test', '-race', '-json', '-count=1', '-timeout=540s', './...'], 600_000);
    const { format, vet, check } = await checks;
    results.set('gofmt -l .', { outcome: format.ok ? 'passed' : 'failed', message: format.output });
    results.set('go vet ./...', { outcome: vet.ok ? 'passed' : 'failed', message: vet.output.slice(-6000) });
    results.set('staticcheck ./...', { outcome: check.ok ? 'passed' : 'failed', message: check.output.slice(-6000) });
    for (const [id, result] of parseGoTestJson(test.output)) results.set(id, result);
    return { results, output: test.output };
  },
});
