import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { fuzzParameters } from '@svc/testkit';
import { MAX_DEPTH, writeBlockYaml, writeYaml } from './block-yaml.ts';

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
  // YAML 1.1 (PyYAML) resolves these plain scalars to booleans, null, numbers, dates or tags.
  'Y',
  'YES',
  'Yes',
  'N',
  'NO',
  'On',
  'Off',
  'ON',
  'Null',
  '0755',
  '0b1010',
  '1_000',
  '190:20:30',
  '2001-12-14t21:59:43.10-05:00',
  '2002-12-14',
  '+1',
  '.5',
  '1.',
  'del\u007f',
  'nel\u0085',
  'ls\u2028ps\u2029',
  'bom\ufeff',
  '\ufffe\uffff',
  'emoji 😀',
  'lone \ud800',
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

  it('writes nested lists and mappings, long keys and exponent numbers', () => {
    const doc = {
      list: [{ a: 1, b: [] }, [1, [2, {}]], 'x'],
      deep: { a: { b: { c: { d: 1 } } } },
      ['k'.repeat(2000)]: { ['é'.repeat(300)]: 1 },
      big: 1e21,
      small: 1e-7,
      neg: -2.5e-9,
    };
    const text = writeBlockYaml(doc);
    expect(text).toBeDefined();
    expect(text).toContain('big: 1.0e+21\n');
    expect(parseYaml(text as string)).toEqual(doc);
  });

  it('declines what it does not write; writeYaml then quotes every string', () => {
    let deep: unknown = 'y';
    for (let i = 0; i < MAX_DEPTH + 2; i++) deep = { yes: deep };
    expect(writeBlockYaml({ deep })).toBeUndefined();
    expect(writeBlockYaml({ n: [Number.NaN, Infinity, -Infinity, -0] })).toBe(
      '"n":\n  - .nan\n  - .inf\n  - -.inf\n  - -0.0\n',
    );
    expect(writeBlockYaml({ d: new Date(0) })).toBeUndefined();
    const text = writeYaml({ deep, on: 'off', e: 1e21 });
    expect(text).not.toMatch(/(^|\s)(yes|y|on|off):? /);
    expect(text).toContain('1.0e+21');
    expect(parseYaml(text)).toEqual({ deep, on: 'off', e: 1e21 });
  });
});

/** JSON-like documents with the strings a YAML 1.1 reader would misread, keys included. */
const trickyString = fc.oneof(
  fc.constantFrom(...TRICKY_STRINGS),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.stringMatching(/^[0-9+\-.:_eEoxbTt ]{1,12}$/),
  fc
    .constantFrom('y', 'n', 'yes', 'no', 'on', 'off', 'true', 'null', '~')
    .map((w) => [...w].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c)).join('')),
);
const jsonNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
  fc.constantFrom(1e21, 1e-7, 0.1, 123456789012345680000),
);
const { doc: jsonDoc } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    trickyString,
    jsonNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    tie('doc'),
  ),
  doc: fc.dictionary(trickyString, tie('value'), { maxKeys: 5 }),
}));

/** Every document read by PyYAML's safe_load, as JSON; undefined when python3 + PyYAML are missing. */
function readWithPyYaml(texts: string[]): unknown[] | undefined {
  const script = [
    'import json, sys, yaml',
    'docs = json.load(sys.stdin)',
    'json.dump([yaml.safe_load(d) for d in docs], sys.stdout)',
  ].join('\n');
  const result = spawnSync('python3', ['-c', script], {
    input: JSON.stringify(texts),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 60_000,
  });
  if (result.error !== undefined || /No module named .?yaml/.test(result.stderr)) return undefined;
  if (result.status !== 0) throw new Error(`PyYAML failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as unknown[];
}

const pyYaml = readWithPyYaml(['a: 1']) !== undefined;
// In CI (script/test-deps.sh installs python3-yaml) a missing PyYAML is a failure, not a skip.
const requirePyYaml = process.env['CI'] === 'true';

describe('YAML 1.1 safety (issue 12 item 15)', () => {
  it('any JSON document reads back equal with the yaml library (1.2)', () => {
    fc.assert(
      fc.property(jsonDoc, (doc) => {
        expect(parseYaml(writeYaml(doc), { uniqueKeys: true })).toEqual(doc);
      }),
      fuzzParameters(300),
    );
  });

  it.skipIf(!pyYaml && !requirePyYaml)('any JSON document reads back equal with PyYAML (1.1)', () => {
    expect(pyYaml, 'python3 with PyYAML (Debian python3-yaml) is required in CI').toBe(true);
    const docs = fc.sample(jsonDoc, { numRuns: 400, seed: 12 });
    const fixed = [
      Object.fromEntries(TRICKY_STRINGS.map((s, i) => [s === '' ? `empty${i}` : s, s])),
      { list: TRICKY_STRINGS, nested: [{ y: 'yes', ON: 'off' }], deep: { a: { b: { c: { n: 'N' } } } } },
    ];
    let deep: unknown = 'yes';
    for (let i = 0; i < MAX_DEPTH + 2; i++) deep = { on: [deep] };
    fixed.push({ deep, e: 1e21 } as never);
    const all = [...fixed, ...docs];
    const texts = all.map((doc) => writeYaml(doc));
    const read = readWithPyYaml(texts) as unknown[];
    for (const [i, doc] of all.entries()) expect(read[i], texts[i]).toEqual(doc);
  });
});
