// Property-based fuzzing of what the daemon parses from clients: app definition bodies (and their
// YAML round trip), query values (durations, event lists, output positions) and the router's path
// decoding. Only SvcError escapes, with a message; valid values round-trip. docs/reliability.md.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SvcError } from '@svc/protocol';
import {
  FUZZ_TIMEOUT_MS,
  expectDocumentedError,
  fuzzParameters,
  hostileAppBody,
  hostileYaml,
  validAppBody,
} from '@svc/testkit';
import {
  ALL_EVENTS,
  createSecretCrypter,
  deserializeApp,
  operations,
  optionalInteger,
  parseAppDefinition,
  parseDurationMs,
  parseEventList,
  Router,
  serializeApp,
  toPublicView,
} from '@svc/daemon';

const NOW = Date.UTC(2025, 5, 1);
// The yaml library reports unknown tags (`!!js/function`) as process warnings; they are expected here.
beforeAll(() => void vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined));
afterAll(() => void vi.restoreAllMocks());
const crypter = createSecretCrypter(randomBytes(32));

function expectCode(error: unknown, codes: readonly string[]): void {
  expect(error).toBeInstanceOf(SvcError);
  expect(codes).toContain((error as SvcError).code);
}

/** Runs `action`; a throw must be an SvcError of one of `codes` (undefined is returned then). */
function svcOnly<T>(codes: readonly string[], action: () => T): T | undefined {
  try {
    return action();
  } catch (error) {
    expectDocumentedError(SvcError, error);
    expectCode(error, codes);
    return undefined;
  }
}

describe('fuzz: app definition bodies', { timeout: FUZZ_TIMEOUT_MS }, () => {
  it('any JSON value is either a definition or an invalid_app SvcError', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        svcOnly(['invalid_app'], () => parseAppDefinition(value, { now: NOW }));
      }),
      fuzzParameters(1000),
    );
  });

  it('real keys with wrong, huge or hostile values are refused with invalid_app', () => {
    fc.assert(
      fc.property(hostileAppBody, (body) => {
        svcOnly(['invalid_app'], () => parseAppDefinition(JSON.parse(JSON.stringify(body)), { now: NOW }));
      }),
      fuzzParameters(1000),
    );
  });

  it('a valid definition survives the YAML file (serialize, deserialize) and the API view unchanged', () => {
    fc.assert(
      fc.property(validAppBody, (body) => {
        const def = parseAppDefinition(body, { now: NOW });
        expect(deserializeApp(serializeApp(def, crypter), crypter, { file: 'x.yaml' })).toEqual(def);
        // A client may PUT back what GET returned (masked secrets included) and change nothing.
        const view = JSON.parse(JSON.stringify(toPublicView(def))) as unknown;
        expect(parseAppDefinition(view, { now: NOW, previous: def })).toEqual(def);
      }),
      fuzzParameters(300),
    );
  });

  it('any YAML text is either a definition or an invalid_app SvcError', () => {
    fc.assert(
      fc.property(hostileYaml, (text) => {
        svcOnly(['invalid_app'], () => deserializeApp(text, crypter, { file: 'fuzz.yaml' }));
      }),
      fuzzParameters(400),
    );
  });
});

describe('fuzz: query values', { timeout: FUZZ_TIMEOUT_MS }, () => {
  it('durations: any string is milliseconds >= 0 or invalid_query naming the parameter', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.stringMatching(/^P(\d{0,7}D)?(T(\d{0,7}H)?(\d{0,7}M)?(\d{0,10}(\.\d{0,4})?S)?)?$/),
        ),
        (value) => {
          try {
            const ms = parseDurationMs('timeout', value);
            expect(Number.isSafeInteger(ms) && ms >= 0).toBe(true);
          } catch (error) {
            expectCode(error, ['invalid_query']);
            expect((error as Error).message).toMatch(/^timeout: /);
          }
        },
      ),
      fuzzParameters(1000),
    );
  });

  it('durations: integer seconds and ISO 8601 durations parse to their value', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 999_999_999 }),
        fc.record({ d: fc.nat(999), h: fc.nat(999), m: fc.nat(999), s: fc.nat(999), ms: fc.nat(999) }),
        (seconds, p) => {
          expect(parseDurationMs('t', String(seconds))).toBe(seconds * 1000);
          const iso = `P${p.d}DT${p.h}H${p.m}M${p.s}.${String(p.ms).padStart(3, '0')}S`;
          expect(parseDurationMs('t', iso)).toBe(((p.d * 24 + p.h) * 60 + p.m) * 60_000 + p.s * 1000 + p.ms);
        },
      ),
      fuzzParameters(300),
    );
  });

  it('output positions: any string is an integer within the bounds or invalid_query', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 24 }), fc.bigInt().map(String)), (value) => {
        const n = svcOnly(['invalid_query'], () =>
          optionalInteger({ stdout_position: value }, 'stdout_position', {
            min: 0,
            max: Number.MAX_SAFE_INTEGER,
          }),
        );
        if (n !== undefined) {
          expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
          expect(BigInt(n)).toBe(BigInt(value));
        } else {
          expect(value === '' || !/^\d{1,15}$/.test(value) || BigInt(value) > Number.MAX_SAFE_INTEGER).toBe(
            true,
          );
        }
      }),
      fuzzParameters(1000),
    );
  });

  it('event lists: any string selects known events or is invalid_query; valid lists round-trip', () => {
    const eventName = fc.constantFrom(...ALL_EVENTS, 'ALL', 'all', 'start', ' exit ', '');
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.array(eventName, { maxLength: 10 }), (junk, names) => {
        const selection = svcOnly(['invalid_query'], () => parseEventList(junk));
        if (selection !== undefined) for (const e of selection.events) expect(ALL_EVENTS).toContain(e);
        const parsed = parseEventList(names.join(','));
        const named = names.map((n) => n.trim().toUpperCase()).filter((n) => n !== '');
        if (named.length === 0 || named.includes('ALL')) expect(parsed.all).toBe(true);
        else expect([...parsed.events].sort()).toEqual([...new Set(named)].sort());
      }),
      fuzzParameters(1000),
    );
  });
});

describe('fuzz: router path decoding', { timeout: FUZZ_TIMEOUT_MS }, () => {
  const router = new Router(operations);
  const methods = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'get', '');
  const segment = fc.oneof(
    fc.constantFrom(
      'svc',
      'app',
      'apps',
      'applications',
      'principal',
      'role',
      'output',
      '%',
      '%2F',
      '..',
      '.',
      '%zz',
      '%00',
    ),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: 'binary', maxLength: 12 }),
  );
  const path = fc.array(segment, { maxLength: 6 }).map((parts) => '/' + parts.join('/'));

  it('any method and path resolves to an operation or a routing SvcError', () => {
    fc.assert(
      fc.property(methods, fc.oneof(path, fc.string({ maxLength: 60 })), (method, p) => {
        try {
          router.match(method, p);
        } catch (error) {
          expectCode(error, ['bad_request', 'route_not_found', 'method_not_allowed', 'invalid_name']);
        }
      }),
      fuzzParameters(2000),
    );
  });

  it('an encoded app name or principal id decodes to exactly itself', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,128}$/).filter((n) => n !== '.' && n !== '..'),
        fc
          .string({ minLength: 1, maxLength: 100 })
          .filter((id) => ![...id].some((c) => c < ' ' || c === '\u007f') && !/[\ud800-\udfff]/.test(id)),
        (name, id) => {
          expect(router.match('GET', `/svc/app/${encodeURIComponent(name)}`).params).toEqual({ name });
          const match = router.match('POST', `/svc/principal/${encodeURIComponent(id)}`);
          expect(match.params).toEqual({ id });
        },
      ),
      fuzzParameters(500),
    );
  });
});
