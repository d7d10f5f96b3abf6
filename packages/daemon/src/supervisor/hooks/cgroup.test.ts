// The cgroup hook with a fake limiter: where a spawn is placed, when limits are applied and released.
import { describe, expect, it } from 'vitest';
import type { ResourceLimiter } from '../resource-limit.ts';
import { fakeApp } from '../test-fakes.ts';
import { CgroupHook } from './cgroup.ts';
import type { SpawnPreparation } from './hook.ts';

function fakeLimiter(supported = true) {
  const version = supported ? 'cgroup v1' : undefined;
  const calls: string[] = [];
  const limiter: ResourceLimiter = {
    status: version === undefined ? 'unsupported: none' : 'supported',
    version,
    apply: (app, pid) => (calls.push(`apply ${app} ${pid}`), 'applied'),
    prepare: (app) => (
      calls.push(`prepare ${app}`),
      { status: 'applied', procs: [`/cg/${app}/cgroup.procs`] }
    ),
    exitReason: (app) => (calls.push(`exitReason ${app}`), 'killed by the kernel: out of memory'),
    release: (app) => void calls.push(`release ${app}`),
    cgroupDirs: () => [],
    close: () => void calls.push('close'),
  };
  return { calls, limiter };
}
const spawnOf = (): SpawnPreparation => ({ processUuid: 'u', env: {}, outputFd: -1 });
const running = { pid: 77, processUuid: 'u', startedAt: 0, startTicks: 0, adopted: false };
const limited = { resource_limit: { memory_mb: 64 } };

/** A limited app started with a runner that places its child in its cgroups, or not. */
function started(placesInCgroups: boolean) {
  const { calls, limiter } = fakeLimiter();
  const hook = new CgroupHook(limiter, { placesInCgroups });
  const { app } = fakeApp(limited);
  const spawn = spawnOf();
  hook.prestart(app, spawn);
  hook.poststart(app, running);
  return { calls, hook, app, spawn };
}

describe('CgroupHook', () => {
  it('a runner that places the child: cgroups made before the spawn, nothing moved after', () => {
    const { calls, hook, spawn } = started(true);
    expect(spawn.cgroupProcs).toEqual(['/cg/app/cgroup.procs']);
    expect(calls).toEqual(['prepare app']);
    expect(hook.status.get('app')).toBe('applied');
  });

  it('in-process: the pid is moved in after the spawn; the exit releases, with the OOM reason first', () => {
    const { calls, hook, app, spawn } = started(false);
    expect(spawn.cgroupProcs).toBeUndefined();
    expect(hook.exitError(app)).toBe('killed by the kernel: out of memory');
    hook.exited(app);
    expect(calls).toEqual(['apply app 77', 'exitReason app', 'release app']);
  });

  it('no resource_limit: no cgroup, no reason; replaced and removed forget the status', () => {
    const { calls, limiter } = fakeLimiter();
    const hook = new CgroupHook(limiter, { placesInCgroups: true });
    const plain = fakeApp().app;
    hook.prestart(plain, spawnOf());
    hook.poststart(plain, running);
    expect(hook.exitError(plain)).toBeUndefined();
    hook.exited(plain);
    expect(calls).toEqual([]);
    const { app } = fakeApp(limited);
    hook.prestart(app, spawnOf());
    hook.replaced(app);
    expect(hook.status.has('app')).toBe(false);
    hook.prestart(app, spawnOf());
    hook.removed(app);
    expect(hook.status.has('app')).toBe(false);
    expect(calls.at(-1)).toBe('release app');
  });

  it('without cgroup support the limit is neither prepared nor released at exit', () => {
    const { calls, limiter } = fakeLimiter(false);
    const hook = new CgroupHook(limiter, { placesInCgroups: true });
    const { app } = fakeApp(limited);
    hook.prestart(app, spawnOf());
    hook.exited(app);
    expect(calls).toEqual([]);
  });
});
