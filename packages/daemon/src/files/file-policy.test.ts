import { describe, expect, it } from 'vitest';
import { attributesOf, checkTransferPath, filePathOf } from './file-policy.ts';

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('filePathOf', () => {
  it('decodes the percent-encoded absolute path the SDKs send', () => {
    expect(filePathOf({ 'x-file-path': '/tmp/a%20b/%C3%A9.txt' })).toBe('/tmp/a b/é.txt');
    expect(filePathOf({ 'x-file-path': '//tmp//x' })).toBe('/tmp/x');
  });

  it('refuses missing, relative, traversing, control-character, directory and oversized paths', () => {
    for (const value of [
      undefined,
      '',
      'tmp/x',
      '/tmp/../etc/passwd',
      '/tmp/%2E%2E/etc/passwd',
      '/tmp/./x',
      '/tmp/a%00b',
      '/tmp/a%1Bb',
      '/tmp/%E0%A4%A',
      '/',
      '/tmp/dir/',
      `/${'a'.repeat(4096)}`,
      `/${'%C3%A9'.repeat(3000)}`,
    ])
      expect(
        code(() => filePathOf(value === undefined ? {} : { 'x-file-path': value })),
        String(value),
      ).toBe('bad_request');
  });
});

describe('attributesOf', () => {
  it('reads decimal modes and owner pairs', () => {
    expect(attributesOf({ 'x-file-mode': '420' })).toEqual({ mode: 0o644 });
    expect(attributesOf({ 'x-file-user': 'www-data', 'x-file-group': '33' })).toEqual({
      owner: { user: 'www-data', group: '33' },
    });
    expect(attributesOf({})).toEqual({});
  });

  it('refuses modes beyond 0o777, non-decimal modes, half owners and option-like names', () => {
    for (const headers of [
      { 'x-file-mode': '512' },
      { 'x-file-mode': '0x1ff' },
      { 'x-file-mode': '1e3' },
      { 'x-file-mode': '99999' },
      { 'x-file-user': 'root' },
      { 'x-file-group': 'root' },
      { 'x-file-user': '-R', 'x-file-group': 'root' },
      { 'x-file-user': 'root', 'x-file-group': 'a:b' },
      { 'x-file-user': 'a'.repeat(40), 'x-file-group': 'root' },
    ])
      expect(
        code(() => attributesOf(headers)),
        JSON.stringify(headers),
      ).toBe('bad_request');
  });
});

describe('checkTransferPath', () => {
  const policy = { protectedRoots: ['/srv/svc/work', '/opt/svc'], allowedRoots: [] };

  it("keeps non-administrators out of the daemon's own trees, not out of look-alike names", () => {
    expect(code(() => checkTransferPath('/srv/svc/work/auth/policy.yaml', policy, false))).toBe('forbidden');
    expect(code(() => checkTransferPath('/srv/svc/work', policy, false))).toBe('forbidden');
    expect(code(() => checkTransferPath('/opt/svc/config/config.yaml', policy, false))).toBe('forbidden');
    expect(code(() => checkTransferPath('/srv/svc/workbench/x', policy, false))).toBeUndefined();
    expect(code(() => checkTransferPath('/srv/svc/work/server.log', policy, true))).toBeUndefined();
  });

  it('applies the allow-list to everyone', () => {
    const listed = { ...policy, allowedRoots: ['/data'] };
    expect(code(() => checkTransferPath('/data/a/b', listed, false))).toBeUndefined();
    expect(code(() => checkTransferPath('/database', listed, true))).toBe('forbidden');
    expect(code(() => checkTransferPath('/tmp/x', listed, true))).toBe('forbidden');
  });
});
