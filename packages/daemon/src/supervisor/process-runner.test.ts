import { describe, expect, it } from 'vitest';
import { exitCodeOf, splitCommandLine } from './process-runner.ts';
import { cpuSharesToWeight } from './resource-limit.ts';

describe('splitCommandLine', () => {
  it('honours quotes and escapes', () => {
    expect(splitCommandLine(`a "b c" 'd e' f\\ g "h\\"i" ''`)).toEqual(['a', 'b c', 'd e', 'f g', 'h"i', '']);
    expect(splitCommandLine('  x   y  ')).toEqual(['x', 'y']);
    expect(() => splitCommandLine('a "b')).toThrow(/unterminated/);
  });
});

describe('exitCodeOf', () => {
  it('maps signals to negative numbers', () => {
    expect(exitCodeOf(3, null)).toBe(3);
    expect(exitCodeOf(null, 'SIGKILL')).toBe(-9);
    expect(exitCodeOf(null, 'SIGTERM')).toBe(-15);
  });
});

describe('cpuSharesToWeight', () => {
  it('maps 1024 to 100 and clamps', () => {
    expect(cpuSharesToWeight(1024)).toBe(100);
    expect(cpuSharesToWeight(2)).toBe(1);
    expect(cpuSharesToWeight(262144)).toBe(10000);
  });
});
