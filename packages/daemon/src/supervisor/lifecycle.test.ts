// The lifecycle machine with an in-memory runner and a manual clock: no process, no real timer.
import { describe, expect, it } from 'vitest';
import { parseAppDefinition } from '../model/app-definition.ts';
import { AppLifecycle } from './lifecycle.ts';
import type { Clock, LifecycleHost } from './lifecycle.ts';
import type { ExitInfo, ProcessRunner, SpawnRequest } from './process-runner.ts';
import type { SupervisorEvent } from './types.ts';

class ManualClock implements Clock {
  time = Date.parse('2030-01-01T00:00:00Z');
  timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  now = (): number => this.time;
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.timers.set(id, { at: this.time + ms, fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  /** Advance, firing due timers in order. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = [...this.timers.entries()]
        .filter(([, t]) => t.at <= end)
        .sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      this.timers.delete(due[0]);
      this.time = Math.max(this.time, due[1].at);
      due[1].fn();
    }
    this.time = end;
  }
}

class FakeRunner implements ProcessRunner {
  readonly kind = 'inprocess';
  readonly placesInCgroups = false;
  spawned: { pid: number; request: SpawnRequest; exit: (info: ExitInfo) => void }[] = [];
  signals: [number, string][] = [];
  #pid = 1000;
  spawn(request: SpawnRequest) {
    const pid = ++this.#pid;
    let listener: ((info: ExitInfo) => void) | undefined;
    this.spawned.push({ pid, request, exit: (info) => listener?.(info) });
    return { pid, onExit: (cb: (info: ExitInfo) => void) => (listener = cb) };
  }
  killGroup(pid: number, signal: NodeJS.Signals): boolean {
    this.signals.push([pid, signal]);
    return true;
  }
  kill(pid: number, signal: NodeJS.Signals): boolean {
    this.signals.push([pid, `pid-only ${signal}`]);
    return true;
  }
  exitLast(exitCode: number): void {
    this.spawned.at(-1)?.exit({ exitCode, spawnError: undefined });
  }
}

function setup(input: Record<string, unknown>) {
  const clock = new ManualClock();
  const runner = new FakeRunner();
  const events: SupervisorEvent[] = [];
  const removals: string[] = [];
  const host: LifecycleHost = {
    runner,
    clock,
    stopGraceMs: 5000,
    emit: (e) => events.push(e),
    prepareSpawn: () => ({ env: {}, outputFd: -1 }),
    started: () => undefined,
    exited: () => undefined,
    changed: () => undefined,
    // The supervisor checks the process's owner first (privilege/adoption.ts); here it may.
    signalExternal: (_app, process, signal) => runner.kill(process.pid, signal),
    startBlocker: () => undefined,
    requestRemoval: (app) => removals.push(app.name),
  };
  const def = parseAppDefinition({ name: 'app', command: 'x', ...input }, { now: clock.time });
  const app = new AppLifecycle(def, host);
  return { clock, runner, events, removals, app };
}

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
