// The Java client's own suite (clients/java, JUnit 5 through Maven Surefire) against real daemons
// started by `svc-testkit serve`: every JUnit case (wire vectors, error codes, S1–S8 per transport,
// operations, worker) is surfaced as one vitest case. Maven's local repository is kept under
// node_modules/.cache/svc-java-client/m2 (created on the first run, which downloads msgpack-core,
// org.json, JUnit and the build plugins); later runs are offline.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describeForeignSuite, parseJunit, type SuiteResults } from '@svc/testkit/foreign-suite';

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../..');
const PROJECT = join(REPO, 'clients/java');
const REPORTS = join(PROJECT, 'target/surefire-reports');
const M2 = join(REPO, 'node_modules/.cache/svc-java-client/m2');
/** Written after a successful online run: from then on Maven runs offline (-o). */
const READY = join(M2, '.svc-ready');
const TESTKIT = join(REPO, 'packages/testkit/bin/svc-testkit.js');

/** Case id: the test class without its package, then the JUnit display name. */
const caseId = (classname: string, name: string): string => `${classname.replace(/^svc\./, '')}::${name}`;

/** One `mvn test`: its output, whether it failed, and the cases of the Surefire reports. */
async function maven(offline: boolean): Promise<{ results: SuiteResults; output: string }> {
  await rm(REPORTS, { recursive: true, force: true });
  const args = [
    '-B',
    '-q',
    ...(offline ? ['-o'] : []),
    `-Dmaven.repo.local=${M2}`,
    '-f',
    join(PROJECT, 'pom.xml'),
    'test',
  ];
  const done = await run('mvn', args, {
    cwd: PROJECT,
    env: {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      // UTF-8 file names (the JVM takes its file-name encoding from the locale)
      LC_ALL: 'C.UTF-8',
      ...(process.env['JAVA_HOME'] === undefined ? {} : { JAVA_HOME: process.env['JAVA_HOME'] }),
      SVC_TESTKIT_COMMAND: JSON.stringify([process.execPath, TESTKIT, 'serve', '--json']),
    },
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { code?: unknown; stdout?: string; stderr?: string; message?: string }) => {
    if (error.code === 'ENOENT')
      throw new Error('Maven (mvn) and a JDK 17+ are needed: run script/test-deps.sh', { cause: error });
    return { stdout: error.stdout ?? '', stderr: `${error.stderr ?? ''}\n${error.message ?? ''}` };
  });
  const results: SuiteResults = new Map();
  const files = existsSync(REPORTS) ? await readdir(REPORTS) : [];
  for (const file of files.filter((f) => /^TEST-.*\.xml$/.test(f)))
    for (const [id, result] of parseJunit(await readFile(join(REPORTS, file), 'utf8'), caseId))
      results.set(id, result);
  return { results, output: `${done.stdout}\n${done.stderr}` };
}

async function runSuite(): Promise<{ results: SuiteResults; output: string }> {
  await mkdir(M2, { recursive: true });
  if (existsSync(READY)) {
    const offline = await maven(true);
    if (offline.results.size > 0) return offline;
    // Nothing ran: the pom may name an artifact not downloaded yet; fetch it online once.
  }
  const online = await maven(false);
  if (online.results.size > 0) await writeFile(READY, 'maven dependencies downloaded\n');
  return online;
}

await describeForeignSuite('Java client (clients/java) against a real svcd', {
  run: runSuite,
  minimumCases: 100,
});
