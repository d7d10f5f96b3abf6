// Test suites in other languages (the client libraries under clients/, the App Mesh SDK
// compatibility suite) surfaced as vitest cases: the suite runs once with its own runner, its
// report is parsed here, and every case of the report becomes one vitest case, so `npm test` and
// CI's summary count each of them and a failure names the case and shows its message.
import { describe, it } from 'vitest';
import { recordFlaky } from './flaky.ts';

export interface CaseResult {
  outcome: 'passed' | 'failed' | 'skipped';
  /** Failure text or skip reason (the tail, at most 6,000 characters). */
  message: string;
}

export type SuiteResults = Map<string, CaseResult>;

const unescapeXml = (text: string): string =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#10;/g, '\n')
    .replace(/&#13;/g, '\r')
    .replace(/&amp;/g, '&');

/**
 * JUnit XML (pytest, Maven Surefire, ctest --output-junit, ...): one entry per <testcase>, with a
 * <failure>/<error>/<skipped> child unless it passed. `idOf` names a case from its classname and
 * name attributes (default `classname::name`, or just `name` without a classname).
 */
export function parseJunit(
  xml: string,
  idOf: (classname: string, name: string) => string = (classname, name) =>
    classname === '' ? name : `${classname}::${name}`,
): SuiteResults {
  const results: SuiteResults = new Map();
  for (const match of xml.matchAll(/<testcase\s([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attributes = new Map<string, string>();
    for (const m of match[1]!.matchAll(/([\w-]+)="([^"]*)"/g)) attributes.set(m[1]!, unescapeXml(m[2]!));
    const id = idOf(attributes.get('classname') ?? '', attributes.get('name') ?? '');
    const body = match[2] ?? '';
    const problem =
      /<(failure|error|skipped)([^>]*)>([\s\S]*?)<\/\1>|<(failure|error|skipped)([^>]*)\/>/.exec(body);
    if (problem === null) results.set(id, { outcome: 'passed', message: '' });
    else {
      const kind = problem[1] ?? problem[4];
      const text = unescapeXml(`${problem[2] ?? problem[5] ?? ''}\n${problem[3] ?? ''}`);
      results.set(id, { outcome: kind === 'skipped' ? 'skipped' : 'failed', message: text.slice(-6000) });
    }
  }
  return results;
}

/** `go test -json` output (test2json events): one entry per test, id `package/TestName[/sub]`. */
export function parseGoTestJson(stream: string): SuiteResults {
  const results: SuiteResults = new Map();
  const output = new Map<string, string>();
  for (const line of stream.split('\n')) {
    if (!line.startsWith('{')) continue;
    let event: { Action?: string; Package?: string; Test?: string; Output?: string };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      continue;
    }
    if (event.Test === undefined) continue;
    const id = `${event.Package ?? ''}/${event.Test}`;
    if (event.Action === 'output')
      output.set(id, ((output.get(id) ?? '') + (event.Output ?? '')).slice(-6000));
    else if (event.Action === 'pass') results.set(id, { outcome: 'passed', message: '' });
    else if (event.Action === 'fail') results.set(id, { outcome: 'failed', message: output.get(id) ?? '' });
    else if (event.Action === 'skip') results.set(id, { outcome: 'skipped', message: output.get(id) ?? '' });
  }
  return results;
}

/**
 * Rust's libtest plain output (`cargo test`): `test path::name ... ok|FAILED|ignored` lines, with
 * each failure's captured output from the `---- path::name stdout ----` sections. Ids are
 * `<binary>::path::name` when the output names the binary (`Running ... (target/.../name-hash)`).
 */
export function parseLibtestOutput(stdout: string): SuiteResults {
  const results: SuiteResults = new Map();
  const failures = new Map<string, string>();
  let binary = '';
  for (const section of stdout.split(/^\s*Running /m)) {
    const name = /\(([^)]*)\)\s*$/.exec(section.split('\n', 1)[0] ?? '');
    if (name !== null) binary = (name[1]!.split('/').pop() ?? '').replace(/-[0-9a-f]{16}$/, '');
    for (const m of section.matchAll(
      /^---- (\S+) stdout ----\n([\s\S]*?)(?=^---- |^failures:|^test result:)/gm,
    ))
      failures.set(`${binary}::${m[1]!}`, m[2]!.slice(-6000));
    for (const m of section.matchAll(/^test (\S+) \.\.\. (ok|FAILED|ignored)(?:, .*)?$/gm)) {
      const id = binary === '' ? m[1]! : `${binary}::${m[1]!}`;
      const outcome = m[2] === 'ok' ? 'passed' : m[2] === 'ignored' ? 'skipped' : 'failed';
      results.set(id, { outcome, message: '' });
    }
  }
  for (const [id, result] of results)
    if (result.outcome === 'failed') result.message = failures.get(id) ?? '';
  return results;
}

/**
 * CI retries a failed case once (vitest's `retry` for our own cases, `rerunFailedOnce` for a
 * foreign suite's); a case that passes on the retry still counts as passed but is listed as flaky
 * in CI's summary (`SVC_FLAKY_LOG`, set by vitest.config.ts). Outside CI nothing is retried.
 */
export const RETRY_FAILED_ONCE = process.env['CI'] === 'true';

/**
 * In CI (RETRY_FAILED_ONCE), runs the failed cases of `results` once more with `rerun` and takes
 * the second outcome of each; a case that passed the second time is recorded as flaky. Returns
 * `results` unchanged outside CI or when nothing failed. A rerun that throws leaves the first
 * outcomes.
 */
export async function rerunFailedOnce(
  results: SuiteResults,
  rerun: (ids: string[]) => Promise<SuiteResults>,
  enabled = RETRY_FAILED_ONCE,
): Promise<SuiteResults> {
  const failed = [...results].filter(([, r]) => r.outcome === 'failed').map(([id]) => id);
  if (!enabled || failed.length === 0) return results;
  let again: SuiteResults;
  try {
    again = await rerun(failed);
  } catch (error) {
    console.warn(`[flaky] the rerun of ${failed.length} failed case(s) did not run: ${String(error)}`);
    return results;
  }
  const merged: SuiteResults = new Map(results);
  for (const id of failed) {
    const second = again.get(id);
    if (second === undefined) continue;
    if (second.outcome === 'passed') recordFlaky(id, results.get(id)!.message);
    merged.set(id, second);
  }
  return merged;
}

export interface ForeignSuiteOptions {
  /** Runs the suite and returns its parsed report plus the runner's own output (for diagnostics). */
  run: () => Promise<{ results: SuiteResults; output: string }>;
  /** The suite must report at least this many cases (a runner that ran nothing fails). */
  minimumCases: number;
  /**
   * Cases expected to fail for a named, not yet closed reason: id -> reason. Such a case still
   * runs and is reported with its reason; once it passes, it fails (remove it from the list).
   */
  knownGaps?: Readonly<Record<string, string>>;
  /** Runs only the named cases again (see rerunFailedOnce); without it nothing is retried. */
  rerun?: (ids: string[]) => Promise<SuiteResults>;
}

/**
 * Runs a foreign suite at collection time and declares one vitest case per case in its report.
 * Call at the top level of a test file with `await`. A skipped case fails: a skip needs its reason
 * in the suite's own code and a `knownGaps` entry here, never a silent pass.
 */
export async function describeForeignSuite(title: string, options: ForeignSuiteOptions): Promise<void> {
  let results: SuiteResults = new Map();
  let output = '';
  let runError: unknown;
  try {
    ({ results, output } = await options.run());
    if (options.rerun !== undefined) results = await rerunFailedOnce(results, options.rerun);
  } catch (error) {
    runError = error;
  }
  describe(title, () => {
    it(`runs and reports at least ${options.minimumCases} cases`, () => {
      if (runError !== undefined)
        throw runError instanceof Error ? runError : new Error(JSON.stringify(runError));
      if (results.size < options.minimumCases)
        throw new Error(`the suite reported ${results.size} cases:\n${output.slice(-6000)}`);
    });
    for (const [id, result] of results) {
      const check = (): void => {
        if (result.outcome !== 'passed') throw new Error(`${result.outcome}: ${result.message}`);
      };
      const gap = options.knownGaps?.[id];
      if (gap === undefined) it(id, check);
      else it.fails(`${id} (known gap: ${gap})`, check);
    }
  });
}
