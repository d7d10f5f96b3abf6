import { describe, expect, it } from 'vitest';
import type { AppBehavior } from '../model/app-definition.ts';
import type { CrashState } from './restart-policy.ts';
import { INITIAL_CRASH_STATE, decideExitAction, nextBackoff } from './restart-policy.ts';

const behavior = (exit: AppBehavior['exit'], actions: AppBehavior['exit_code_actions'] = {}) => ({
  behavior: { exit, exit_code_actions: actions },
});

describe('decideExitAction', () => {
  it.each([
    ['standby', 0, 'standby'],
    ['standby', 1, 'standby'],
    ['restart', 0, 'standby'],
    ['restart', 1, 'restart'],
    ['restart', -9, 'restart'],
    ['keepalive', 0, 'restart'],
    ['keepalive', 2, 'restart'],
    ['keepalive', -15, 'restart'],
    ['remove', 0, 'remove'],
    ['remove', 3, 'remove'],
  ] as const)('exit %s with code %d -> %s', (exit, code, expected) => {
    expect(decideExitAction(behavior(exit), code)).toBe(expected);
  });

  it('lets a per-code control win, literally', () => {
    const def = behavior('restart', { '0': 'restart', '3': 'standby', '-9': 'remove', '4': 'keepalive' });
    expect(decideExitAction(def, 0)).toBe('restart');
    expect(decideExitAction(def, 3)).toBe('standby');
    expect(decideExitAction(def, -9)).toBe('remove');
    expect(decideExitAction(def, 4)).toBe('restart');
    expect(decideExitAction(def, 5)).toBe('restart');
    expect(decideExitAction(def, -0)).toBe('restart');
  });

  it('ignores inherited properties of control', () => {
    expect(decideExitAction(behavior('standby', {}), Number.NaN)).toBe('standby');
    const def = behavior('standby', {});
    expect(decideExitAction(def, 1)).toBe('standby');
    expect(Object.hasOwn(def.behavior.exit_code_actions, 'toString')).toBe(false);
  });
});

describe('nextBackoff', () => {
  const T0 = 1_000_000;

  function sequence(runs: number[]): number[] {
    let state: CrashState = INITIAL_CRASH_STATE;
    let now = T0;
    return runs.map((ranMs) => {
      now += ranMs;
      const result = nextBackoff(state, ranMs, now);
      state = result.state;
      now += result.delayMs;
      return result.delayMs;
    });
  }

  it('restarts immediately first, then 1 s doubling to a 300 s cap', () => {
    expect(sequence(Array.from({ length: 13 }, () => 100))).toEqual([
      0, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000, 300000, 300000,
    ]);
  });

  it('resets after a run of 60 s or more', () => {
    expect(sequence([10, 10, 10, 60_000, 10, 10, 59_999, 10])).toEqual([
      0, 1000, 2000, 0, 1000, 2000, 4000, 8000,
    ]);
  });

  it('records when the restart may happen', () => {
    const first = nextBackoff(INITIAL_CRASH_STATE, 5, T0);
    expect(first).toEqual({ delayMs: 0, state: { quickExits: 1, lastExitAt: T0, restartAt: T0 } });
    const second = nextBackoff(first.state, 5, T0 + 10);
    expect(second).toEqual({
      delayMs: 1000,
      state: { quickExits: 2, lastExitAt: T0 + 10, restartAt: T0 + 1010 },
    });
  });

  it('stays capped after very many crashes', () => {
    let state: CrashState = { quickExits: 10_000, lastExitAt: T0, restartAt: T0 };
    const result = nextBackoff(state, 1, T0);
    state = result.state;
    expect(result.delayMs).toBe(300_000);
    expect(state.quickExits).toBe(10_001);
  });
});
