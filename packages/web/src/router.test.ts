import { describe, expect, it } from 'vitest';
import { href, matchRoute, parseHash } from './router.ts';

const PATTERNS = ['/apps', '/app/:name', '/app/:name/edit', '/register'];

describe('hash routes', () => {
  it('matches patterns and decodes parameters', () => {
    expect(matchRoute(PATTERNS, '#/apps')?.pattern).toBe('/apps');
    const detail = matchRoute(PATTERNS, '#/app/web%201/edit?x=1');
    expect(detail?.pattern).toBe('/app/:name/edit');
    expect(detail?.params).toEqual({ name: 'web 1' });
    expect(detail?.query.get('x')).toBe('1');
    expect(matchRoute(PATTERNS, '#/nothing')).toBeUndefined();
    expect(matchRoute(PATTERNS, '')).toBeUndefined();
  });

  it('builds links that round-trip any name', () => {
    for (const name of ['a', 'with space', 'sl/ash', '%41', '../x', 'é']) {
      const link = href('/app/:name', { name });
      expect(matchRoute(PATTERNS, link)?.params['name']).toBe(name);
    }
    expect(href('/task', {}, { app: 'a b' })).toBe('#/task?app=a+b');
  });

  it('ignores malformed escapes and splits the query', () => {
    expect(matchRoute(PATTERNS, '#/app/%E0%A4%A')).toBeUndefined();
    expect(parseHash('#')).toMatchObject({ path: '/' });
    expect(parseHash('#/a?b=1&c').query.get('b')).toBe('1');
  });
});
