// Test doubles for the unit tests of the lifecycle and its hooks (imported by *.test.ts only):
// a manual clock, an in-memory process runner, and a lifecycle host that records events.
import { parseAppDefinition } from '../model/app-definition.ts';
import { AppLifecycle } from './lifecycle.ts';
import type { Clock, LifecycleHost } from './lifecycle.ts';
import type { ExitInfo, ProcessRunner, SpawnRequest } from './process-runner.ts';
import type { SupervisorEvent } from './types.ts';

export class ManualClock implements Clock {
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

export class FakeRunner implements ProcessRunner {
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

export interface Fake {
  clock: ManualClock;
  runner: FakeRunner;
  events: SupervisorEvent[];
  removals: string[];
  host: LifecycleHost;
  app: AppLifecycle;
}

/** An app `app` (command `x` unless given) on a host with no concern wired: `host` overrides parts. */
export function fakeApp(input: Record<string, unknown> = {}, host: Partial<LifecycleHost> = {}): Fake {
  const clock = new ManualClock();
  const runner = new FakeRunner();
  const events: SupervisorEvent[] = [];
  const removals: string[] = [];
  const full: LifecycleHost = {
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
    ...host,
  };
  const def = parseAppDefinition({ name: 'app', command: 'x', ...input }, { now: clock.time });
  return { clock, runner, events, removals, host: full, app: new AppLifecycle(def, full) };
}
