// fast-check arbitraries of client input shared by the unit fuzz tests (test/fuzz) and the
// hostile-input tests against a real daemon (packages/daemon/test/reliability).
import fc from 'fast-check';
import { stringify } from 'yaml';

/** Names the daemon accepts for apps, roles and label keys. */
export const validName: fc.Arbitrary<string> = fc
  .stringMatching(/^[A-Za-z0-9_.-]{1,40}$/)
  // '.tmp-' and '.pool-' are reserved for svc's own files (400 invalid_name).
  .filter((n) => n !== '.' && n !== '..' && !n.startsWith('.tmp-') && !n.startsWith('.pool-'));

const envName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/);
const text = fc.string({ maxLength: 60 });
const oneLine = text.map((t) => t.replace(/[\r\n]/g, ' '));

/** Bodies of POST /svc/app that the daemon must accept (JSON-ready). */
export const validAppBody: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      name: validName,
      command: oneLine.filter((c) => c.trim() !== ''),
      description: text,
      env: fc.dictionary(envName, text, { maxKeys: 4 }),
      secret_env: fc.dictionary(
        envName,
        text.filter((v) => v !== '******'),
        { maxKeys: 3 },
      ),
      enabled: fc.boolean(),
      stdout_backup_count: fc.integer({ min: 0, max: 100 }),
      interval: fc.integer({ min: 1, max: 86_400 }),
      stop_grace_period: fc.oneof(fc.integer({ min: 0, max: 600 }), fc.constantFrom('PT10S', 'PT1M')),
      permission: fc.constantFrom(11, 21, 22, 33),
      behavior: fc.record({ exit: fc.constantFrom('standby', 'restart', 'keepalive', 'remove') }),
      metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(text, fc.integer(), fc.boolean()), {
        maxKeys: 4,
      }),
    },
    { requiredKeys: ['name', 'command'] },
  )
  .map((body) => JSON.parse(JSON.stringify(body)) as Record<string, unknown>);

const APP_KEYS = [
  'name',
  'command',
  'shell',
  'description',
  'working_dir',
  'env',
  'session_login',
  'secret_env',
  'metadata',
  'enabled',
  'health_check_cmd',
  'stdout_backup_count',
  'start_time',
  'end_time',
  'interval',
  'cron_schedule',
  'daily_limitation',
  'stop_grace_period',
  'depends_on',
  'resource_limit',
  'behavior',
  'permission',
  'pid',
  'docker_image',
  'owner_principal_id',
  // the names before App Mesh 3.0's, still accepted as aliases
  'sec_env',
  'status',
  'stdout_cache_num',
  'start_interval_seconds',
  'cron',
  'retention',
  'owner',
  'system',
  'register_time',
  '__proto__',
  'constructor',
];

/** A JSON value of any type, sometimes huge, sometimes deeply nested. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    '',
    ' ',
    '\n',
    '******',
    '* * * * *',
    'PT5M',
    '-1',
    '1e400',
    '..',
    '../../etc/passwd',
    '\u0000',
    '\ud800',
    -1,
    0,
    2 ** 53,
    1e308,
    -0,
    true,
  ),
  fc.integer({ min: 1, max: 300_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 1, max: 200 }).map((depth) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
    return v;
  }),
);

/** Objects with the real keys of an app definition holding wrong, huge or hostile values. */
export const hostileAppBody: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  fc.oneof(fc.constantFrom(...APP_KEYS), fc.string({ maxLength: 12 })),
  hostileValue,
  { maxKeys: 8 },
);

/** Text that is YAML-ish: random documents, broken syntax, anchors/aliases, tags, huge scalars. */
export const hostileYaml: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 300 }),
  hostileAppBody.map((body) => stringify(body)),
  validAppBody.map((body) => stringify(body)),
  fc
    .array(
      fc.constantFrom(
        'name: a\n',
        'command: x\n',
        'a: &x [1, 2]\n',
        'b: *x\n',
        'c: *missing\n',
        '!!binary aGk=\n',
        '!!js/function "f"\n',
        '- 1\n',
        '---\n',
        '...\n',
        'key: "unterminated\n',
        '  indented: 1\n',
        'secret_env: {A: enc:v1:bogus}\n',
        'sec_env: {A: enc:v1:bogus}\n',
        'depends_on: [a, a, ../x]\n',
        'env: {A: 1}\n',
        'name: a\nname: b\n',
        '? complex\n: key\n',
        '\t\n',
        '%YAML 1.2\n',
        'x: !!int 99999999999999999999999\n',
      ),
      { maxLength: 12 },
    )
    .map((lines) => lines.join('')),
);
