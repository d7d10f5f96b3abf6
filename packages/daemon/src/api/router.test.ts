// The router over the real operation table: the match of every operation's own path, the errors
// of paths that match none, and hostile segments (bad percent-encoding, encoded slashes, control
// characters, oversized values) answered with a 4xx SvcError, never another exception.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { hostileValue } from '@svc/testkit';
import { operations } from './operations/index.ts';
import { Router } from './router.ts';

const router = new Router(operations);

function codeOf(method: string, path: string): string {
  try {
    router.match(method, path);
    return 'ok';
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    expect(error.status).toBeGreaterThanOrEqual(400);
    expect(error.status).toBeLessThan(500);
    return error.code;
  }
}

describe('Router', () => {
  it('matches every operation at its own path, parameters filled in', () => {
    for (const operation of operations) {
      const path = operation.path.replace(/\{[^}]+\}/g, 'x1');
      const match = router.match(operation.method, path);
      // The first operation of the table at that method and path (aliases share none).
      expect(match.operation.method).toBe(operation.method);
      expect(match.operation.path.split('/').length).toBe(operation.path.split('/').length);
      for (const name of operation.path.match(/\{([^}]+)\}/g) ?? [])
        expect(match.params[name.slice(1, -1)]).toBe('x1');
    }
  });

  it('prefers literal segments in table order and decodes parameters segment by segment', () => {
    expect(router.match('GET', '/svc/principal/self').operation.id).toBe('getSelf');
    expect(router.match('GET', '/svc/self').operation.id).toBe('getSelfAlias');
    const task = router.match('POST', '/svc/app/w%2Dx/task');
    expect(task.operation.id).toBe('runTask');
    expect(task.params).toEqual({ name: 'w-x' });
  });

  it('answers 405 for a known path with another method, 404 for an unknown path', () => {
    expect(codeOf('PATCH', '/svc/app/a/task')).toBe('method_not_allowed');
    expect(codeOf('GET', '/svc/nothing/here')).toBe('route_not_found');
    expect(codeOf('GET', '/svc/app/a/task/extra/segments')).toBe('route_not_found');
    expect(codeOf('GET', '/')).toBe('route_not_found');
  });

  it('refuses bad encodings and names with 400, never a crash', () => {
    expect(codeOf('POST', '/svc/app/%ZZ/task')).toBe('bad_request');
    expect(codeOf('POST', '/svc/app/a%2Fb/task')).toBe('invalid_name');
    expect(codeOf('POST', '/svc/app/..%2Fetc/task')).toBe('invalid_name');
    expect(codeOf('POST', '/svc/app/../task')).toBe('invalid_name');
    expect(codeOf('POST', `/svc/app/${'n'.repeat(129)}/task`)).toBe('invalid_name');
    expect(codeOf('POST', '/svc/app//task')).toBe('route_not_found');
    expect(codeOf('GET', 'svc/self')).toBe('bad_request');
    expect(codeOf('GET', `/${'a'.repeat(5000)}`)).toBe('bad_request');
  });

  it('answers hostile paths with a 4xx SvcError', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'X'),
        fc.array(
          fc.oneof(
            fc.string(),
            hostileValue.map((value) => {
              try {
                return String(value);
              } catch {
                return '';
              }
            }),
            fc.constantFrom('svc', 'app', 'task'),
          ),
          {
            maxLength: 6,
          },
        ),
        (method, segments) => {
          codeOf(method, `/${segments.join('/')}`);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
