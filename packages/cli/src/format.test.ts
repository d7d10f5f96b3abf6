import { describe, expect, it } from 'vitest';
import { exitStatus } from './commands.ts';
import { completion } from './completion.ts';
import { EXIT } from './errors.ts';
import { outputFormat, relative, shellQuote, table } from './format.ts';
import { COMMANDS } from './main.ts';
import { jwtExpiry } from './session.ts';

describe('svc formatting helpers', () => {
  it('exitStatus maps negative (signal) codes to 128 + N like a shell', () => {
    expect(exitStatus(0)).toBe(0);
    expect(exitStatus(3)).toBe(3);
    expect(exitStatus(-2)).toBe(130);
    expect(exitStatus(-9)).toBe(137);
    expect(exitStatus(-15)).toBe(143);
    expect(exitStatus(256 + 4)).toBe(4);
  });

  it('shellQuote keeps plain words and single-quotes the rest', () => {
    expect(shellQuote(['echo', 'a b', "it's", '$HOME'])).toBe(`echo 'a b' 'it'\\''s' '$HOME'`);
    expect(shellQuote(['sh', '-c', 'echo hi; exit 3'])).toBe(`sh -c 'echo hi; exit 3'`);
  });

  it('table pads columns; outputFormat refuses unknown formats with a usage error', () => {
    expect(
      table(
        ['NAME', 'STATE'],
        [
          ['web', 'running'],
          ['a-long-name', 'stopped'],
        ],
      ),
    ).toBe('NAME          STATE\nweb           running\na-long-name   stopped\n');
    expect(outputFormat('json')).toBe('json');
    expect(() => outputFormat('xml')).toThrow(expect.objectContaining({ code: EXIT.usage }));
  });

  it('relative and jwtExpiry', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(relative(now / 1000 + 900, now)).toBe('in 15m');
    expect(relative(now / 1000 - 30, now)).toBe('30s ago');
    const token = `e30.${Buffer.from(JSON.stringify({ exp: 1234 })).toString('base64url')}.sig`;
    expect(jwtExpiry(token)).toBe(1234);
    expect(jwtExpiry('opaque')).toBeUndefined();
  });

  it('completion scripts list every command', () => {
    const bash = completion('bash', COMMANDS);
    for (const name of Object.keys(COMMANDS)) expect(bash).toContain(`${name})`);
    expect(completion('zsh', COMMANDS)).toContain('bashcompinit');
    expect(() => completion('fish', COMMANDS)).toThrow(expect.objectContaining({ code: EXIT.usage }));
  });
});
