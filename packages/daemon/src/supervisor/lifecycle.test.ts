// The lifecycle machine with an in-memory runner and a manual clock: no process, no real timer.
import { describe, expect, it } from 'vitest';
import { fakeApp } from './test-fakes.ts';
import type { SupervisorEvent } from './types.ts';

const setup = (input: Record<string, unknown>) => fakeApp(input);

const types = (events: SupervisorEvent[]): string[] => events.map((e) => e.type);

describe('AppLifecycle', () => {
  it('starts on decide, publishes START then EXIT, restarts at once then backs off 1 s, 2 s', () => {
    const { clock, runner, events, app } = setup({ behavior: { exit: 'restart' } });
    app.decide();
    expect(app.state).toBe('running');
    runner.exitLast(1);
    expect(runner.spawned).toHaveLength(2); // first restart immediate
    runner.exitLast(1);
    expect(app.state).toBe('backoff');
    expect(app.nextStartAt).toBe(clock.time + 1000);
    clock.advance(999);
    expect(runner.spawned).toHaveLength(2);
    clock.advance(1);
    expect(runner.spawned).toHaveLength(3);
    runner.exitLast(1);
    expect(app.nextStartAt).toBe(clock.time + 2000);
    expect(types(events).slice(0, 4)).toEqual(['START', 'EXIT', 'START', 'EXIT']);
    expect(events).toContainEqual({ type: 'HEALTH', app: 'app', health: 1, previousHealth: 0 });
  });

  it('adopts an external pid without spawning; it gets pid-only signals (never its group); unknown exit', async () => {
    const { clock, runner, events, app } = setup({ behavior: { exit: 'restart' }, pid: 4242 });
    const adopted = app.adoptExternal(4242, 777);
    expect(runner.spawned).toHaveLength(0);
    expect(app.state).toBe('running');
    expect(adopted).toMatchObject({
      pid: 4242,
      startTicks: 777,
      adopted: true,
      external: true,
      signalPidOnly: true,
    });
    expect(events[0]).toEqual({ type: 'START', app: 'app', pid: 4242, processUuid: adopted.processUuid });
    const stopped = app.stop('replace');
    clock.advance(5000);
    expect(runner.signals).toEqual([
      [4242, 'pid-only SIGTERM'],
      [4242, 'pid-only SIGKILL'],
    ]);
    app.adoptedExited();
    await stopped;
    expect(events.at(-1)).toMatchObject({ type: 'EXIT', pid: 4242, exitCode: undefined });
    expect(app.runtime.returnCode).toBeUndefined();

    // Exit on its own with an unknown code counts as a failure: `restart` spawns the command.
    const b = setup({ behavior: { exit: 'restart' }, pid: 4343 });
    b.app.adoptExternal(4343, 1);
    b.app.adoptedExited();
    expect(b.runner.spawned).toHaveLength(1);
    expect(b.app.state).toBe('running');
    void b.app.stop('disable');
    expect(b.runner.signals).toEqual([[1001, 'SIGTERM']]); // the spawned process leads its group
  });

  it('a run of 60 s or more resets the backoff', () => {
    const { clock, runner, app } = setup({ behavior: { exit: 'restart' } });
    app.decide();
    runner.exitLast(1);
    clock.advance(61_000);
    runner.exitLast(1);
    expect(app.state).toBe('running');
    expect(runner.spawned).toHaveLength(3);
  });

  it('restart with exit 0 is standby; keepalive restarts', () => {
    const a = setup({ behavior: { exit: 'restart' } });
    a.app.decide();
    a.runner.exitLast(0);
    expect(a.app.state).toBe('stopped');
    expect(a.app.computeHealth()).toBe(0);
    const b = setup({ behavior: { exit: 'keepalive' } });
    b.app.decide();
    b.runner.exitLast(0);
    expect(b.app.state).toBe('running');
  });

  it('a deliberate stop never triggers the exit behavior; SIGKILL after the grace', async () => {
    const { clock, runner, app } = setup({ behavior: { exit: 'keepalive' } });
    app.decide();
    const stopped = app.stop('disable');
    expect(app.state).toBe('stopping');
    expect(runner.signals).toEqual([[1001, 'SIGTERM']]);
    clock.advance(5000);
    expect(runner.signals).toEqual([
      [1001, 'SIGTERM'],
      [1001, 'SIGKILL'],
    ]);
    runner.exitLast(-9);
    await stopped;
    expect(app.state).toBe('disabled');
    expect(runner.spawned).toHaveLength(1);
  });

  it('remove action asks for removal', () => {
    const { runner, removals, app } = setup({
      behavior: { exit: 'standby', exit_code_actions: { '9': 'remove' } },
    });
    app.decide();
    runner.exitLast(9);
    expect(removals).toEqual(['app']);
  });
});

describe('AppLifecycle: schedule and start conditions', () => {
  it('periodic apps start on their interval with one timer', () => {
    const { clock, runner, app } = setup({ interval: 10 });
    app.decide();
    expect(runner.spawned).toHaveLength(1);
    clock.advance(1000);
    runner.exitLast(0);
    expect(app.state).toBe('scheduled');
    expect(clock.timers.size).toBe(1);
    clock.advance(8999);
    expect(runner.spawned).toHaveLength(1);
    clock.advance(1);
    expect(runner.spawned).toHaveLength(2);
  });

  it('waits for start_time and stops at end_time (deliberate, no restart)', () => {
    const base = Date.parse('2030-01-01T00:00:00Z');
    const { clock, runner, events, app } = setup({
      start_time: (base + 60_000) / 1000,
      end_time: (base + 120_000) / 1000,
      behavior: { exit: 'keepalive' },
    });
    app.decide();
    expect(app.state).toBe('scheduled');
    clock.advance(60_000);
    expect(app.state).toBe('running');
    clock.advance(60_000);
    expect(app.state).toBe('stopping');
    runner.exitLast(-15);
    expect(app.state).toBe('stopped');
    expect(runner.spawned).toHaveLength(1);
    expect(types(events).filter((t) => t !== 'HEALTH')).toEqual(['START', 'EXIT']);
  });

  it('a disabled app does not start', () => {
    const { runner, app } = setup({ enabled: false });
    app.decide();
    expect(app.state).toBe('disabled');
    expect(runner.spawned).toHaveLength(0);
  });

  it('passes metadata as stdin text', () => {
    const { runner, app } = setup({ metadata: { a: 1 } });
    app.decide();
    expect(runner.spawned[0]?.request.stdin).toBe('{"a":1}');
  });
});

describe('AppLifecycle: what the supervisor changes (replace, setEnabled, markTransient, reportHealth)', () => {
  it('reportHealth: a check result counts while running, HEALTH only on a change; an exit forgets it', () => {
    const { runner, events, app } = setup({ health_check_cmd: 'true', behavior: { exit: 'standby' } });
    app.decide();
    app.reportHealth(1);
    app.reportHealth(1);
    app.reportHealth(0);
    expect(events.filter((e) => e.type === 'HEALTH')).toEqual([
      { type: 'HEALTH', app: 'app', health: 1, previousHealth: 0 },
      { type: 'HEALTH', app: 'app', health: 0, previousHealth: 1 },
    ]);
    app.reportHealth(1);
    runner.exitLast(0); // stopped by standby after exit 0: liveness says healthy
    expect(app.computeHealth()).toBe(0);
  });

  it('markTransient: runs once, then is removed lifecycleSeconds after its exit; replace ends that', () => {
    const { clock, runner, removals, app } = setup({ behavior: { exit: 'restart' } });
    app.markTransient({ lifecycleSeconds: 30, timeoutAt: undefined });
    app.decide();
    runner.exitLast(1);
    expect(runner.spawned).toHaveLength(1); // never restarted
    clock.advance(29_999);
    expect(removals).toEqual([]);
    clock.advance(1);
    expect(removals).toEqual(['app']);

    const b = setup({});
    b.app.markTransient({ lifecycleSeconds: 0, timeoutAt: undefined });
    const def = { ...b.app.def, description: 'new' };
    b.app.replace(def);
    expect(b.app.transient).toBeUndefined();
    expect(b.app.def).toBe(def);
  });

  it('setEnabled changes the definition it returns and leaves the previous object alone', () => {
    const { runner, app } = setup({});
    const before = app.def;
    const after = app.setEnabled(false);
    expect([before.enabled, after.enabled, app.def]).toEqual([true, false, after]);
    app.decide();
    expect(app.state).toBe('disabled');
    expect(runner.spawned).toHaveLength(0);
  });
});
