// The hook runner: phases in list order, what prestart hooks fill in, a failing prestart.
import { describe, expect, it } from 'vitest';
import { AppLifecycle } from '../lifecycle.ts';
import { fakeApp, FakeRunner, ManualClock } from '../test-fakes.ts';
import type { LifecycleHook } from './hook.ts';
import { HookRunner } from './runner.ts';

function recording(name: string, calls: string[], extra: Partial<LifecycleHook> = {}): LifecycleHook {
  return {
    prestart: (_app, spawn) => {
      calls.push(`${name}.prestart`);
      spawn.env[name] = '1';
    },
    exited: () => void calls.push(`${name}.exited`),
    removed: () => void calls.push(`${name}.removed`),
    ...extra,
  };
}

function setup(hooks: LifecycleHook[]) {
  const runner = new FakeRunner();
  const host = new HookRunner({
    runner,
    clock: new ManualClock(),
    stopGraceMs: 1000,
    hooks,
    emit: () => undefined,
    startBlocker: () => undefined,
    requestRemoval: () => undefined,
    signalExternal: () => undefined,
  });
  // The lifecycle talks to the runner itself (a spread of it would lose its methods).
  const app = new AppLifecycle(fakeApp({ behavior: { exit: 'standby' } }).app.def, host);
  return { runner, host, app };
}

describe('HookRunner', () => {
  it('runs every phase in the order of the list; prestart hooks build the spawn', () => {
    const calls: string[] = [];
    const { runner, host, app } = setup([
      recording('a', calls),
      { poststart: () => void calls.push('b.poststart') },
      recording('c', calls),
    ]);
    app.decide();
    expect(runner.spawned[0]?.request.env).toEqual({ a: '1', c: '1' });
    runner.exitLast(0);
    host.removed(app);
    expect(calls).toEqual([
      'a.prestart',
      'c.prestart',
      'b.poststart',
      'a.exited',
      'c.exited',
      'a.removed',
      'c.removed',
    ]);
  });

  it('a prestart that throws fails the start before later hooks run; the first exit reason wins', () => {
    const calls: string[] = [];
    const { runner, app } = setup([
      recording('a', calls, { exitError: () => undefined }),
      recording('b', calls, {
        prestart: () => {
          throw new Error('execution user ghost does not exist on this host');
        },
        exitError: () => 'first',
      }),
      recording('c', calls, { exitError: () => 'second' }),
    ]);
    app.decide();
    expect(runner.spawned).toHaveLength(0);
    expect(calls).toEqual(['a.prestart', 'a.exited', 'b.exited', 'c.exited']);
    expect(app.runtime.lastError).toBe('cannot start: execution user ghost does not exist on this host');
    expect(app.runtime.returnCode).toBe(1);
  });
});
