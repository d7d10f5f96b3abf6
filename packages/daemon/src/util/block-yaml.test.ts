import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { writeBlockYaml } from './block-yaml.ts';

const TRICKY_STRINGS = [
  '',
  ' ',
  'sleep 600',
  'a: b',
  'a:b',
  'trailing:',
  'x #comment',
  '#start',
  '- item',
  '? key',
  '*alias',
  '&anchor',
  '!tag',
  '%directive',
  '@at',
  '`tick',
  '|',
  '>',
  "'single'",
  '"double"',
  '[flow]',
  '{flow}',
  'a, b',
  'true',
  'False',
  'NULL',
  '~',
  'yes',
  'No',
  'on',
  'OFF',
  'y',
  'n',
  '0',
  '0123',
  '-1',
  '1e3',
  '0x1F',
  '0o17',
  '.inf',
  '-.Inf',
  '.nan',
  '12:30',
  '2024-01-01',
  '2024-01-01T00:00:00.000Z',
  'multi\nline',
  'tab\there',
  '\\backslash',
  'enc:v1:AbC+/=',
  '/usr/bin/env node',
  'ünïcødé ✓',
  'a  b',
  'end ',
  ' start',
  '<<',
  '=',
  'key=value',
  'x\r\ny',
  '\u0000nul',
];

describe('writeBlockYaml', () => {
  it('writes strings that parse back to themselves, plain where unambiguous', () => {
    for (const value of TRICKY_STRINGS) {
      const text = writeBlockYaml({ v: value, m: { [value === '' ? 'empty' : value]: value } });
      expect(text, JSON.stringify(value)).toBeDefined();
      const parsed = parseYaml(text as string) as Record<string, unknown>;
      expect(parsed['v'], JSON.stringify(value)).toBe(value);
      expect(parsed['m'], JSON.stringify(value)).toEqual({ [value === '' ? 'empty' : value]: value });
    }
    expect(writeBlockYaml({ command: 'sleep 600', path: '/usr/bin/x' })).toBe(
      'command: sleep 600\npath: /usr/bin/x\n',
    );
    expect(writeBlockYaml({ v: 'true', w: 'a: b' })).toBe('v: "true"\nw: "a: b"\n');
  });

  it('round-trips the shapes of an application definition', () => {
    const doc = {
      name: 'web',
      shell: false,
      status: 1,
      stdout_cache_num: 3,
      ratio: 0.25,
      negative: -7,
      nothing: null,
      env: {},
      sec_env: { TOKEN: 'enc:v1:QUJD' },
      list: [],
      permission: ['bob', 'alice smith', '0'],
      behavior: { exit: 'restart', control: { '-9': 'remove', '0': 'standby' } },
      empty_nested: { control: {} },
      skipped: undefined,
    };
    const text = writeBlockYaml(doc);
    expect(text).toBeDefined();
    const { skipped: _skipped, ...expected } = doc;
    expect(parseYaml(text as string)).toEqual(expected);
  });

  it('declines what it does not write (the caller falls back to the yaml library)', () => {
    expect(writeBlockYaml({ list: [{ a: 1 }] })).toBeUndefined();
    expect(writeBlockYaml({ a: { b: { c: { d: 1 } } } })).toBeUndefined();
    expect(writeBlockYaml({ n: Number.NaN })).toBeUndefined();
    expect(writeBlockYaml({ n: -0 })).toBeUndefined();
    expect(writeBlockYaml({ s: 'del\u007f' })).toBeUndefined();
    expect(writeBlockYaml({ s: 'emoji 😀' })).toBeUndefined();
  });
});
