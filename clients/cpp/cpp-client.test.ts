// The C++ client's own suite (clients/cpp, GoogleTest under ctest) surfaced as vitest cases: the
// wrapper configures and builds it with CMake in clients/cpp/build (gitignored, incremental), runs
// `ctest --output-junit` once with the test daemon command, and declares one case per ctest case.
// Build type None (no -O2, no -g): the tests build in less than half the compile time.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describeForeignSuite, parseJunit } from '@svc/testkit/foreign-suite';

const run = promisify(execFile);
const CLIENT = import.meta.dirname;
const REPO = resolve(CLIENT, '../..');
const BUILD = join(CLIENT, 'build');
const TESTKIT = join(REPO, 'packages/testkit/bin/svc-testkit.js');
const MINUTE = 60_000;

interface Outcome {
  stdout: string;
  stderr: string;
}

/** Runs a command; a failure still gives its output (the report says what failed). */
async function step(command: string, args: string[], timeout: number, env?: NodeJS.ProcessEnv): Promise<Outcome> {
  return run(command, args, { cwd: CLIENT, timeout, env, maxBuffer: 64 * 1024 * 1024 }).catch(
    (error: { stdout?: string; stderr?: string; message?: string }) => ({
      stdout: error.stdout ?? '',
      stderr: `${error.stderr ?? ''}\n${error.message ?? ''}`,
    }),
  );
}

await describeForeignSuite('C++ client (clients/cpp, ctest)', {
  // unit, wire vectors, S1–S8 on TCP and WSS, every openapi.json operation, typed errors, worker.
  minimumCases: 140,
  run: async () => {
    const configure = await run('cmake', ['-S', CLIENT, '-B', BUILD, '-DCMAKE_BUILD_TYPE=None'], {
      timeout: 5 * MINUTE,
    }).catch((error: unknown) => {
      throw new Error(`cmake configure failed: run script/test-deps.sh (${String(error)})`, { cause: error });
    });
    await run('cmake', ['--build', BUILD, '-j2'], { timeout: 15 * MINUTE, maxBuffer: 64 * 1024 * 1024 }).catch(
      (error: { stdout?: string; stderr?: string }) => {
        throw new Error(`cmake build failed:\n${(error.stdout ?? '').slice(-3000)}\n${(error.stderr ?? '').slice(-3000)}`);
      },
    );
    const out = await mkdtemp(join(tmpdir(), 'svc-cpp-client-'));
    try {
      const junit = join(out, 'ctest.xml');
      const done = await step(
        'ctest',
        ['--test-dir', BUILD, '-j2', '--timeout', '300', '--output-on-failure', '--output-junit', junit],
        15 * MINUTE,
        {
          PATH: process.env['PATH'],
          HOME: process.env['HOME'],
          SVC_TESTKIT_COMMAND: JSON.stringify([process.execPath, TESTKIT, 'serve', '--json']),
        },
      );
      const results = parseJunit(await readFile(junit, 'utf8').catch(() => ''), (_classname, name) => name);
      return { results, output: `${configure.stdout}\n${done.stdout}\n${done.stderr}` };
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  },
});
