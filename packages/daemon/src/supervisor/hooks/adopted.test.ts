// The adopted-process hook with a fake /proc: the poll, and the ownership re-check before a signal.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../log/logger.ts';
import type { ProcessFacts } from '../../privilege/adoption.ts';
import { fakeApp } from '../test-fakes.ts';
import { AdoptedHook, type ProcessProbe } from './adopted.ts';
import { ExecutionUsers } from './identity.ts';

function setup(owner: { uid: number } | undefined) {
  const alive = new Map<number, number>(); // pid → start ticks
  const facts = new Map<number, ProcessFacts>();
  const signals: string[] = [];
  const probe: ProcessProbe = {
    isSameProcess: (pid, ticks) => alive.get(pid) === ticks,
    readFacts: (pid) => facts.get(pid),
    signal: (pid, signal) => void signals.push(`${pid} ${signal}`),
  };
  const users = new ExecutionUsers(
    () => (owner === undefined ? 'gone' : 'owner'),
    (name) =>
      name === 'owner' && owner !== undefined
        ? { user: name, uid: owner.uid, gid: 1, groups: [1], home: '/' }
        : undefined,
  );
  const hook = new AdoptedHook({
    pollMs: 60_000,
    users,
    rulesFor: (callerUid) => ({ callerUid, protectedPids: new Set([99]), protectedGroups: new Set() }),
    logger: silentLogger,
    probe,
  });
  const f = fakeApp(
    { pid: 4242, behavior: { exit: 'standby' } },
    { signalExternal: (app, p, s) => hook.signal(app, p, s) },
  );
  alive.set(4242, 777);
  facts.set(4242, { uids: [1001, 1001, 1001, 1001], pgid: 4242, kernelThread: false });
  f.app.adoptExternal(4242, 777);
  hook.watch(f.app);
  return { ...f, hook, alive, facts, signals };
}

describe('AdoptedHook', () => {
  it('the poll reports the exit once the process is gone (or its pid reused), and then stops', () => {
    const { app, hook, alive, events } = setup({ uid: 1001 });
    hook.poll();
    expect(app.state).toBe('running');
    alive.set(4242, 778); // another process now has that pid
    hook.poll();
    expect(events.filter((e) => e.type === 'EXIT')).toMatchObject([{ pid: 4242, exitCode: undefined }]);
    expect(app.state).toBe('stopped'); // standby after an exit of unknown code
    expect(hook.watched).toBe(0);
    hook.detach();
  });

  it("a stop signals the pid alone while it is still the owner's process", () => {
    const { app, signals, hook } = setup({ uid: 1001 });
    void app.stop('disable');
    expect(signals).toEqual(['4242 SIGTERM']);
    hook.detach();
  });

  it('one that may no longer be signalled (setuid exec, owner gone) is let go as exited, unsignalled', async () => {
    for (const owner of [{ uid: 1001 }, undefined]) {
      const { app, signals, facts, hook, events } = setup(owner);
      facts.set(4242, { uids: [1001, 0, 0, 0], pgid: 4242, kernelThread: false }); // exec'd a setuid program
      const stopped = app.stop('disable');
      expect(signals).toEqual([]);
      await stopped;
      expect(events.at(-1)).toMatchObject({ type: 'EXIT', pid: 4242, exitCode: undefined });
      expect(hook.watched).toBe(0);
      hook.detach();
    }
  });

  it('a process already gone is not signalled (the poll reports it)', () => {
    const { app, signals, alive, hook } = setup({ uid: 1001 });
    alive.delete(4242);
    void app.stop('disable');
    expect(signals).toEqual([]);
    expect(app.state).toBe('stopping');
    hook.detach();
  });
});
