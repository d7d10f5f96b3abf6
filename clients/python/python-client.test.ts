// The Python client's suite (clients/python/tests, pytest) against real svcd daemons started by
// `svc-testkit serve`, plus mypy --strict and ruff over the package and its tests. Each pytest case
// and each of the two checkers is one vitest case. Self-contained on a fresh clone: the venv with
// the client's dependencies and the tools lives in node_modules/.cache/svc-python-client/ and is
// rebuilt when the requirement list changes.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describeForeignSuite, parseJunit, type SuiteResults } from '@svc/testkit/foreign-suite';

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../..');
const CLIENT = join(REPO, 'clients/python');
const TESTKIT = join(REPO, 'packages/testkit/bin/svc-testkit.js');
const VENV = join(REPO, 'node_modules/.cache/svc-python-client/venv');
const PYTHON = join(VENV, 'bin/python');
/** The client's runtime dependencies (pyproject.toml) and its test tools. */
const REQUIREMENTS = ['requests', 'websocket-client', 'msgpack', 'pytest', 'mypy', 'ruff', 'types-requests'];

type Outcome = { stdout: string; stderr: string; code: number };

async function sh(file: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeout: number }): Promise<Outcome> {
  try {
    const done = await run(file, args, { cwd: CLIENT, maxBuffer: 64 * 1024 * 1024, ...options });
    return { stdout: done.stdout, stderr: done.stderr, code: 0 };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; code?: number | string };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? String(error), code: typeof e.code === 'number' ? e.code : 1 };
  }
}

async function ensureVenv(): Promise<void> {
  const marker = join(VENV, '.svc-ready');
  const wanted = REQUIREMENTS.join(' ');
  if (existsSync(marker) && (await readFile(marker, 'utf8')) === wanted) return;
  await rm(VENV, { recursive: true, force: true });
  const made = await sh('python3', ['-m', 'venv', VENV], { timeout: 120_000 });
  if (made.code !== 0) throw new Error(`python3 with venv is needed: run script/test-deps.sh\n${made.stderr}`);
  const pip = await sh(PYTHON, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...REQUIREMENTS], {
    timeout: 300_000,
  });
  if (pip.code !== 0) throw new Error(`pip install failed:\n${pip.stderr.slice(-4000)}`);
  await writeFile(marker, wanted);
}

const env: NodeJS.ProcessEnv = {
  PATH: process.env['PATH'],
  HOME: process.env['HOME'],
  PYTHONPATH: join(CLIENT, 'src'),
  PYTHONDONTWRITEBYTECODE: '1',
  MYPY_CACHE_DIR: join(VENV, '..', 'mypy-cache'),
  RUFF_CACHE_DIR: join(VENV, '..', 'ruff-cache'),
  SVC_TESTKIT_COMMAND: JSON.stringify([process.execPath, TESTKIT, 'serve', '--json']),
};

/** A checker's run as one case: passed when it exits 0, else its output is the message. */
const checkerCase = (done: Outcome): { outcome: 'passed' | 'failed'; message: string } => ({
  outcome: done.code === 0 ? 'passed' : 'failed',
  message: `${done.stdout}\n${done.stderr}`.slice(-6000),
});

/** pytest's JUnit names a case by module classname and test name: `tests/test_x.py::test[param]`. */
const pytestId = (classname: string, name: string): string => `${classname.split('.').join('/')}.py::${name}`;

await describeForeignSuite('Python client (clients/python) against a real svcd', {
  minimumCases: 150,
  run: async () => {
    await ensureVenv();
    const results: SuiteResults = new Map();
    const mypy = await sh(PYTHON, ['-m', 'mypy'], { env, timeout: 300_000 });
    results.set('mypy --strict (src, tests)', checkerCase(mypy));
    const lint = await sh(PYTHON, ['-m', 'ruff', 'check', 'src', 'tests'], { env, timeout: 60_000 });
    const format = await sh(PYTHON, ['-m', 'ruff', 'format', '--check', 'src', 'tests'], { env, timeout: 60_000 });
    results.set('ruff check and ruff format --check', checkerCase(lint.code !== 0 ? lint : format));
    const pytest = await runPytest([]);
    for (const [id, result] of pytest.results) results.set(id, result);
    return { results, output: pytest.output };
  },
  // Only pytest cases are run again (the checkers are not flaky).
  rerun: async (ids) => (await runPytest(ids.filter((id) => id.includes('::')))).results,
});

/** pytest over `ids` (every case when empty), its JUnit report parsed. */
async function runPytest(ids: string[]): Promise<{ results: SuiteResults; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-python-client-'));
  try {
    const junit = join(dir, 'junit.xml');
    const pytest = await sh(
      PYTHON,
      ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--junitxml=${junit}`, '-o', 'junit_family=xunit1', ...ids],
      { env, timeout: 600_000 },
    );
    const results = parseJunit(await readFile(junit, 'utf8').catch(() => ''), pytestId);
    return { results, output: `${pytest.stdout}\n${pytest.stderr}` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
