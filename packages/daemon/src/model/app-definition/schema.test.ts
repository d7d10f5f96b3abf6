// The wire schema is the one validator: the API body (AppDefinition, RunDefinition) and
// parseAppDefinition refuse the same definitions with the same message, and what the schema accepts
// is what parseAppDefinition reads; the view answers in the shape APP_VIEW_FIELDS documents.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { SvcError } from '@svc/protocol';
import { fuzzParameters, hostileAppBody, validAppBody } from '@svc/testkit';
import { definitionProblems } from './issues.ts';
import { parseAppDefinition } from './parse.ts';
import { AppDefinition, RunDefinition } from './schema.ts';
import { SECRET_MASK } from './types.ts';
import { APP_VIEW_FIELDS, toPublicView } from './view.ts';

const NOW = Date.UTC(2025, 5, 1);

/** Values of each field, good and bad, several problems of one body at a time. */
const VALUES: Record<string, unknown[]> = {
  command: ['ls', '', ' ', 'a\nb', ['ls'], [], 'x'.repeat(70_000), 'a\0b'],
  shell: [true, 'true'],
  working_dir: ['/srv', 'srv', '', '/a\n'],
  env: [{ A: '1' }, { '1A': 'x', B: 2 }, JSON.parse('{"__proto__": "x", "A": 1}'), 'A=1', { A: ['x'] }],
  secret_env: [{ S: 's' }, { T: 1 }],
  sec_env: [{ S: 's' }],
  metadata: ['m', { a: [1] }, Number.NaN, null],
  status: [0, 1, 2],
  stdout_backup_count: [0, 101, '3'],
  start_time: [100, 200, -1, 'tomorrow', '2024-01-01T00:00:00Z'],
  end_time: [150, 'x'],
  interval: [0, 60, 'PT5M', 'P1M', '*/5 * * * *', 2 ** 31],
  cron_schedule: ['@daily', '61 * * * *', 60],
  cron: [true, 'yes'],
  start_interval_seconds: [60, '@daily'],
  daily_limitation: [{ daily_start: '09:00', daily_end: '10:00' }, { daily_start: '9:00' }, 'x'],
  stop_grace_period: [0, 'forever'],
  depends_on: [['db'], ['web'], 'db', ['../x', 5], Array.from({ length: 65 }, (_, i) => `d${i}`)],
  resource_limit: [{ memory_mb: 64, memory_virt_mb: 32 }, { cpu_shares: 0 }, { memory: 1 }],
  behavior: [
    { exit: 'x' },
    { control: { '1': 'restart' } },
    { exit_code_actions: { '1': 'restart', '01': 'bogus', abc: 'x', '-0': 'remove' } },
    { exit_code_actions: JSON.parse('{"__proto__": "restart", "constructor": "remove"}') as unknown },
  ],
  permission: [22, 41, '22', ['bob']],
  pid: [1, 0],
  system: [true, false],
  process_uuid: ['echoed from GET'],
  extra: [1],
};
const KEYS = Object.keys(VALUES);
const mixedBody = fc
  .uniqueArray(fc.constantFrom(...KEYS), { maxLength: 5 })
  .chain((keys) =>
    fc.tuple(...keys.map((key) => fc.constantFrom(...VALUES[key]!).map((v) => [key, v] as const))),
  )
  .map((entries) => {
    const body: Record<string, unknown> = { name: 'web', command: 'ls' };
    for (const [key, value] of entries)
      Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true });
    return body;
  });
const bodies = fc.oneof(mixedBody, hostileAppBody, validAppBody);

/** Without a masked secret (the API body cannot know what it would keep). */
const hasMask = (body: Record<string, unknown>): boolean =>
  [body['secret_env'], body['sec_env']].some(
    (secrets) =>
      typeof secrets === 'object' && secrets !== null && Object.values(secrets).includes(SECRET_MASK),
  );

function outcome(action: () => unknown): { ok: unknown } | { refused: string } {
  try {
    return { ok: action() };
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    return { refused: (error as SvcError).message };
  }
}

describe('the wire schema and parseAppDefinition', () => {
  it('refuse the same definitions with the same message; the schema keeps what parse reads', () => {
    fc.assert(
      fc.property(bodies, (raw) => {
        const body = JSON.parse(JSON.stringify(raw)) as Record<string, unknown>;
        fc.pre(!hasMask(body));
        const parsed = outcome(() => parseAppDefinition(body, { now: NOW }));
        const named = body['name'] !== undefined && body['name'] !== null; // null = not set
        const copy =
          !('command' in body) && Object.keys(body).every((key) => ['name', 'env', 'metadata'].includes(key));
        for (const schema of copy ? [AppDefinition] : [AppDefinition, RunDefinition]) {
          const edge = schema.safeParse(body);
          if (!edge.success) {
            // Without a name in the body the edge cannot judge what names the application.
            if (!named) continue;
            expect({ refused: definitionProblems(edge.error.issues) }).toEqual(parsed);
          } else if (named) {
            // The accepted body, as the operation hands it on, is read as the original is.
            expect(outcome(() => parseAppDefinition(edge.data, { now: NOW }))).toEqual(parsed);
          }
        }
      }),
      fuzzParameters(3000),
    );
  });

  it('judges a run of a copy as one: its env and metadata, never its missing command', () => {
    const refused = (body: unknown): string => {
      const result = RunDefinition.safeParse(body);
      return result.success ? 'accepted' : definitionProblems(result.error.issues);
    };
    expect(refused({ name: 'web' })).toBe('accepted');
    expect(refused({ name: 'web', env: { A: '1' }, metadata: null })).toBe('accepted');
    expect(refused({ name: 'web', env: { '1A': 'x' } })).toBe(
      'env["1A"]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$',
    );
    expect(refused({ name: 'web', metadata: Number.NaN })).toBe(
      'metadata: must be a JSON value (numbers must be finite)',
    );
    expect(refused({ name: 'web', shell: true })).toBe('command: is required');
    expect(refused({ command: 'ls', env: { A: 1 } })).toBe('env["A"]: value must be a string, got a number');
  });
});

describe('toPublicView', () => {
  it('answers in the shape APP_VIEW_FIELDS documents', () => {
    const view = z.strictObject(APP_VIEW_FIELDS);
    fc.assert(
      fc.property(bodies, (raw) => {
        const parsed = outcome(() => parseAppDefinition(JSON.parse(JSON.stringify(raw)), { now: NOW }));
        if (!('ok' in parsed)) return;
        const answer = JSON.parse(JSON.stringify(toPublicView(parsed.ok as never))) as unknown;
        const checked = view.safeParse(answer);
        expect(checked.success, JSON.stringify(checked.error?.issues)).toBe(true);
      }),
      fuzzParameters(1000),
    );
  });
});
