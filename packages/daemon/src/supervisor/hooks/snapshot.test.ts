// The snapshot hook's collect, with a fake /proc start time.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../log/logger.ts';
import type { AppLifecycle } from '../lifecycle.ts';
import { fakeApp } from '../test-fakes.ts';
import { SnapshotHook } from './snapshot.ts';

function setup(apps: AppLifecycle[]) {
  const reads: number[] = [];
  const hook = new SnapshotHook({
    file: '/nonexistent/.snapshot', // never written: collect only
    apps: () => apps,
    output: { files: (app) => [{ processUuid: `${app}-out`, exited: false, exitCode: undefined, start: 0 }] },
    now: () => 5,
    logger: silentLogger,
    startTicks: (pid) => (reads.push(pid), pid * 10),
  });
  return { hook, reads };
}

describe('SnapshotHook', () => {
  it('lists a spawned process with its start time, read from /proc once, off the start path', () => {
    const f = fakeApp();
    const { hook, reads } = setup([f.app]);
    f.app.decide();
    expect(reads).toEqual([]); // the start itself read nothing
    const first = hook.collect();
    hook.collect();
    expect(reads).toEqual([1001]);
    expect(first.processes).toEqual([
      {
        app: 'app',
        pid: 1001,
        startTicks: 10010,
        processUuid: f.app.runtime.uuids[0],
        startedAt: f.clock.time,
      },
    ]);
    expect(first.apps['app']).toMatchObject({
      starts: 1,
      wantRun: true,
      crashed: false,
      outputs: [{ processUuid: 'app-out' }],
    });
  });

  it('an adopted process keeps its recorded start time and flags; after detach nothing is read', () => {
    const external = fakeApp({ pid: 4242 });
    external.app.adoptExternal(4242, 777);
    const spawned = fakeApp({ behavior: { exit: 'standby' } });
    spawned.app.markTransient({ lifecycleSeconds: 60, timeoutAt: undefined });
    spawned.app.decide();
    const { hook, reads } = setup([external.app, spawned.app]);
    hook.detach();
    const data = hook.collect();
    expect(reads).toEqual([]);
    expect(data.processes).toEqual([
      expect.objectContaining({ pid: 4242, startTicks: 777, external: true, signalPidOnly: true }),
    ]); // the spawned child's start time was never read: it is left out
    expect(data.apps['app']?.transient).toEqual({ lifecycleSeconds: 60, timeoutAt: undefined });
  });
});
