import { describe, expect, it } from 'vitest';
import { parseGoTestJson, parseJunit, parseLibtestOutput } from './foreign-suite.ts';

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
