// Every operation's declared query and body schemas against malformed, oversized and hostile
// values: the answer is the value or a 400 SvcError naming the problem, never another exception.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { hostileValue } from '@svc/testkit';
import { operations } from './operations/index.ts';
import { validateBody, validateQuery } from './validate-input.ts';

function outcome(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    expect(error.status).toBe(400);
    expect(error.message.length).toBeLessThan(2000); // never echoes a huge input
    return error.code;
  }
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '-1',
    '1e9',
    'NaN',
    'P',
    'PT',
    'P1M',
    'P99999999D',
    '99999999999',
    '%00',
    '\u0000',
    'x'.repeat(100_000),
  ),
);

describe('declared query schemas', () => {
  const withQuery = operations.filter((op) => op.query !== undefined);
  it.each(withQuery.map((op) => [op.id, op] as const))(
    '%s: any query is parsed or invalid_query',
    (_, op) => {
      const shape = Object.keys((op.query as unknown as { shape: Record<string, unknown> }).shape);
      const key = fc.oneof(fc.constantFrom(...shape), fc.string({ maxLength: 10 }));
      fc.assert(
        fc.property(fc.dictionary(key, hostileString, { maxKeys: 6 }), (query) => {
          expect(['ok', 'invalid_query']).toContain(outcome(() => validateQuery(op.query, query)));
        }),
        { numRuns: 300 },
      );
    },
  );
});

describe('declared JSON body schemas', () => {
  const withBody = operations.filter((op) => op.body?.kind === 'json');
  it.each(withBody.map((op) => [op.id, op] as const))(
    '%s: any JSON value is accepted or refused with 400',
    (_, op) => {
      const spec = op.body as Extract<typeof op.body, { kind: 'json' }>;
      fc.assert(
        fc.property(hostileValue, (value) => {
          expect(['ok', spec.errorCode ?? 'bad_request']).toContain(outcome(() => validateBody(spec, value)));
        }),
        { numRuns: 300 },
      );
    },
  );

  it('role permissions: unknown names, too many entries and wrong shapes are refused', () => {
    const setRole = operations.find((op) => op.id === 'setRole')!.body as Extract<
      (typeof operations)[number]['body'],
      { kind: 'json' }
    >;
    expect(outcome(() => validateBody(setRole, ['app-view']))).toBe('ok');
    expect(outcome(() => validateBody(setRole, { permissions: ['app-view'] }))).toBe('ok');
    expect(outcome(() => validateBody(setRole, ['no-such-permission']))).toBe('bad_request');
    expect(outcome(() => validateBody(setRole, Array(1000).fill('app-view')))).toBe('bad_request');
    expect(outcome(() => validateBody(setRole, 'app-view'))).toBe('bad_request');
  });
});
