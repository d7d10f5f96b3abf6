// The App Mesh 3.0 SDK compatibility test (test/compat/README.md): App Mesh's own Python SDK, fetched
// from PyPI at test time and renamed to svc, drives one real svcd started by `svc-testkit serve`.
// Each pytest case (one SDK call on one transport) is one case here, so a run lists exactly which
// calls svc answers as the SDK expects.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJunit, rerunFailedOnce, type SuiteResults } from '@svc/testkit/foreign-suite';

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../../..');
const SUITE = join(REPO, 'test/compat');
const TESTKIT = join(REPO, 'packages/testkit/bin/svc-testkit.js');
/** The SDK's dependencies (not the SDK itself), kept between runs; the SDK is fetched anew each run. */
const VENV = join(REPO, 'node_modules/.cache/svc-appmesh-compat/venv');
const PYTHON = join(VENV, 'bin/python');
const REQUIREMENTS = ['requests', 'websocket-client', 'msgpack', 'aniso8601', 'pytest'];

async function ensureVenv(): Promise<void> {
  const marker = join(VENV, '.svc-ready');
  const wanted = REQUIREMENTS.join(' ');
  if (existsSync(marker) && (await readFile(marker, 'utf8')) === wanted) return;
  await rm(VENV, { recursive: true, force: true });
  try {
    await run('python3', ['-m', 'venv', VENV]);
  } catch (error) {
    throw new Error(`python3 with venv is needed: run script/test-deps.sh (${String(error)})`, {
      cause: error,
    });
  }
  await run(PYTHON, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...REQUIREMENTS], {
    timeout: 300_000,
  });
  await writeFile(marker, wanted);
}

const sdkDir = await mkdtemp(join(tmpdir(), 'svc-appmesh-sdk-'));
await ensureVenv();
await run(PYTHON, [join(SUITE, 'fetch_sdk.py'), sdkDir], { timeout: 120_000 });
const pytestEnv: NodeJS.ProcessEnv = {
  PATH: process.env['PATH'],
  HOME: process.env['HOME'],
  PYTHONPATH: `${sdkDir}:${SUITE}`,
  PYTHONDONTWRITEBYTECODE: '1',
  SVC_TESTKIT_COMMAND: JSON.stringify([process.execPath, TESTKIT, 'serve', '--json']),
};
const PYTEST_ARGS = ['-m', 'pytest', '-p', 'no:cacheprovider', '-q'];
const collected = await run(PYTHON, [...PYTEST_ARGS, '--collect-only'], { cwd: SUITE, env: pytestEnv });
const CASES = collected.stdout
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line.startsWith('test_') && line.includes('::'));

/**
 * Cases that fail for a known, not yet closed part of an issue: case id -> the issue part that
 * closes it (e.g. `'test_sdk_calls.py::test_metrics[https]': 'issue 11 §1 /svc/metrics'`). Empty:
 * every case must pass. Never a silent skip: such a case still runs and is reported with its reason.
 */
const KNOWN_GAPS: Readonly<Record<string, string>> = {};

/** pytest's JUnit XML names a case by module classname and test name: `path/module.py::test[param]`. */
const pytestId = (classname: string, name: string): string => `${classname.split('.').join('/')}.py::${name}`;

describe('App Mesh 3.0 Python SDK (renamed to svc) against a real svcd', () => {
  let results: SuiteResults = new Map();
  let pytestOutput = '';

  /** pytest over `ids` (every case when empty), its JUnit report parsed. */
  async function pytest(ids: string[], junit: string): Promise<{ results: SuiteResults; output: string }> {
    const done = await run(PYTHON, [...PYTEST_ARGS, `--junitxml=${junit}`, '-o', 'junit_family=xunit1', ...ids], {
      cwd: SUITE,
      env: pytestEnv,
      timeout: 900_000,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string }) => ({
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }));
    const results = parseJunit(await readFile(junit, 'utf8').catch(() => ''), pytestId);
    return { results, output: `${done.stdout}\n${done.stderr}` };
  }

  beforeAll(async () => {
    const first = await pytest([], join(sdkDir, 'junit.xml'));
    pytestOutput = first.output;
    results = await rerunFailedOnce(first.results, async (ids) => {
      const again = await pytest(ids, join(sdkDir, 'junit-rerun.xml'));
      pytestOutput += `\n--- rerun of the failed cases ---\n${again.output}`;
      return again.results;
    });
  }, 1_800_000);

  afterAll(async () => {
    await rm(sdkDir, { recursive: true, force: true });
  });

  it('collects the suite', () => {
    expect(CASES.length).toBeGreaterThan(40);
  });

  const check = (id: string): void => {
    const result = results.get(id);
    if (result === undefined)
      throw new Error(`pytest reported nothing for ${id}:\n${pytestOutput.slice(-4000)}`);
    if (result.outcome !== 'passed') throw new Error(`${result.outcome}: ${result.message}`);
  };
  for (const id of CASES) {
    const gap = KNOWN_GAPS[id];
    // A known gap is expected to fail, visibly and with its reason; once it passes, this fails.
    if (gap === undefined) it(id, () => check(id));
    else it.fails(`${id} (known gap: ${gap})`, () => check(id));
  }
});
