// The output hook with a fake output store over /dev/null descriptors.
import { fstatSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fakeApp } from '../test-fakes.ts';
import type { SpawnPreparation } from './hook.ts';
import { OutputHook, type OutputFiles } from './output.ts';

function fakeOutput() {
  const calls: string[] = [];
  const opened: number[] = [];
  const output: OutputFiles = {
    openForProcess: (app, uuid, keep) => {
      calls.push(`open ${app} ${uuid} keep=${keep}`);
      const fd = openSync('/dev/null', 'a');
      opened.push(fd);
      return fd;
    },
    markExited: (app, uuid, code) => void calls.push(`exited ${app} ${uuid} ${String(code)}`),
    remove: (app) => void calls.push(`remove ${app}`),
  };
  return { calls, opened, output };
}

const isOpen = (fd: number): boolean => {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
};

describe('OutputHook', () => {
  it("opens the process's file before the spawn and closes the daemon's copy right after", async () => {
    const { calls, opened, output } = fakeOutput();
    const { app } = fakeApp({ stdout_backup_count: 3 });
    const spawn: SpawnPreparation = { processUuid: 'u1', env: {}, outputFd: -1 };
    new OutputHook(output).prestart(app, spawn);
    expect(calls).toEqual(['open app u1 keep=3']);
    expect(spawn.outputFd).toBe(opened[0]);
    expect(isOpen(spawn.outputFd)).toBe(true); // still open for the spawn in this turn
    await Promise.resolve();
    expect(isOpen(spawn.outputFd)).toBe(false);
  });

  it('an external process gets an empty file of its own; a spawned one nothing more after its start', () => {
    const { calls, opened, output } = fakeOutput();
    const hook = new OutputHook(output);
    const { app } = fakeApp({ pid: 4242 });
    hook.poststart(app, {
      pid: 4242,
      processUuid: 'e1',
      startedAt: 0,
      startTicks: 1,
      adopted: true,
      external: true,
    });
    hook.poststart(app, { pid: 4243, processUuid: 's1', startedAt: 0, startTicks: 0, adopted: false });
    expect(calls).toEqual(['open app e1 keep=3']);
    expect(isOpen(opened[0]!)).toBe(false); // closed at once: nothing writes to it
  });

  it('marks an exit for readers, except the exit of a stop by removal; removal drops the files', async () => {
    const { calls, output } = fakeOutput();
    const hook = new OutputHook(output);
    const { app, runner } = fakeApp();
    app.decide();
    const p = app.process!;
    runner.exitLast(3);
    hook.exited(app, p, 3);
    app.decide();
    const q = app.process!;
    const removal = app.stop('remove');
    runner.exitLast(-15);
    await removal;
    hook.exited(app, q, -15);
    hook.removed(app);
    expect(calls).toEqual([`exited app ${p.processUuid} 3`, 'remove app']);
  });
});
