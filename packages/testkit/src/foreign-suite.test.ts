import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  parseGoTestJson,
  parseJunit,
  parseLibtestOutput,
  rerunFailedOnce,
  type SuiteResults,
} from './foreign-suite.ts';

describe('foreign suite reports', () => {
  it('parses JUnit XML cases with failures, errors and skips', () => {
    const xml = `<testsuite><testcase classname="a.B" name="ok1"/>
      <testcase classname="a.B" name="bad &amp; worse"><failure message="x &lt; y">trace</failure></testcase>
      <testcase classname="" name="err"><error message="boom"/></testcase>
      <testcase classname="c" name="skip"><skipped message="why"/></testcase></testsuite>`;
    const results = parseJunit(xml);
    expect([...results.keys()]).toEqual(['a.B::ok1', 'a.B::bad & worse', 'err', 'c::skip']);
    expect(results.get('a.B::ok1')!.outcome).toBe('passed');
    expect(results.get('a.B::bad & worse')).toEqual({
      outcome: 'failed',
      message: ' message="x < y"\ntrace',
    });
    expect(results.get('err')!.outcome).toBe('failed');
    expect(results.get('c::skip')!.outcome).toBe('skipped');
  });

  it('parses go test -json events with the failing output', () => {
    const stream = [
      '{"Action":"run","Package":"p","Test":"TestA"}',
      '{"Action":"output","Package":"p","Test":"TestA","Output":"boom\\n"}',
      '{"Action":"fail","Package":"p","Test":"TestA"}',
      '{"Action":"pass","Package":"p","Test":"TestB/sub"}',
      'not json',
      '{"Action":"pass","Package":"p"}',
    ].join('\n');
    const results = parseGoTestJson(stream);
    expect(results.get('p/TestA')).toEqual({ outcome: 'failed', message: 'boom\n' });
    expect(results.get('p/TestB/sub')!.outcome).toBe('passed');
    expect(results.size).toBe(2);
  });

  it('parses cargo test output per binary with failure output', () => {
    const stdout = [
      '     Running tests/s1.rs (target/debug/deps/s1-0123456789abcdef)',
      '',
      'running 2 tests',
      'test s1_runs ... ok',
      'test s2_fails ... FAILED',
      '',
      'failures:',
      '',
      '---- s2_fails stdout ----',
      'assertion failed',
      '',
      'failures:',
      '    s2_fails',
      '',
      'test result: FAILED. 1 passed; 1 failed',
    ].join('\n');
    const results = parseLibtestOutput(stdout);
    expect(results.get('s1::s1_runs')!.outcome).toBe('passed');
    expect(results.get('s1::s2_fails')!.outcome).toBe('failed');
    expect(results.get('s1::s2_fails')!.message).toContain('assertion failed');
  });
});

describe('rerunFailedOnce', () => {
  // Its console lines would read like real flaky cases in CI's output.
  beforeEach(() => void vi.spyOn(console, 'warn').mockImplementation(() => undefined));
  afterEach(() => vi.restoreAllMocks());

  const first = (): SuiteResults =>
    new Map([
      ['ok', { outcome: 'passed', message: '' }],
      ['flaky', { outcome: 'failed', message: 'timed out\nwaiting' }],
      ['broken', { outcome: 'failed', message: 'assertion' }],
      ['skip', { outcome: 'skipped', message: 'why' }],
    ]);

  it('runs only the failed cases again, keeps each second outcome and lists the ones that passed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-flaky-'));
    const saved = process.env['SVC_FLAKY_LOG'];
    process.env['SVC_FLAKY_LOG'] = join(dir, 'flaky.txt');
    try {
      let asked: string[] = [];
      const merged = await rerunFailedOnce(
        first(),
        async (ids) => {
          asked = ids;
          return new Map([
            ['flaky', { outcome: 'passed', message: '' }],
            ['broken', { outcome: 'failed', message: 'assertion again' }],
          ]);
        },
        true,
      );
      expect(asked).toEqual(['flaky', 'broken']);
      expect(merged.get('flaky')!.outcome).toBe('passed');
      expect(merged.get('broken')).toEqual({ outcome: 'failed', message: 'assertion again' });
      expect(merged.get('skip')!.outcome).toBe('skipped');
      expect(readFileSync(join(dir, 'flaky.txt'), 'utf8')).toBe('flaky — first failure: timed out waiting\n');
    } finally {
      if (saved === undefined) delete process.env['SVC_FLAKY_LOG'];
      else process.env['SVC_FLAKY_LOG'] = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('retries nothing outside CI, and keeps the first outcomes when the rerun cannot run', async () => {
    let calls = 0;
    const off = await rerunFailedOnce(first(), async () => (calls++, new Map()), false);
    expect(calls).toBe(0);
    expect(off.get('flaky')!.outcome).toBe('failed');
    const thrown = await rerunFailedOnce(first(), () => Promise.reject(new Error('no python')), true);
    expect(thrown.get('flaky')!.outcome).toBe('failed');
    expect(thrown.get('broken')!.message).toBe('assertion');
  });
});
