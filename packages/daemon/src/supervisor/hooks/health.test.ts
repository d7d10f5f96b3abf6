// The health hook with fake checks and a fake user database.
import { describe, expect, it } from 'vitest';
import type { HealthTarget } from '../health.ts';
import { fakeApp } from '../test-fakes.ts';
import { AppEnvironment } from './environment.ts';
import { HealthHook, type HealthChecks } from './health.ts';
import { ExecutionUsers } from './identity.ts';

const alice = { user: 'alice', uid: 1001, gid: 1001, groups: [1001], home: '/home/alice' };

function setup(userName: string | undefined) {
  const tracked: HealthTarget[] = [];
  const calls: string[] = [];
  const checks: HealthChecks = {
    track: (target) => void tracked.push(target),
    untrack: (name) => void calls.push(`untrack ${name}`),
    close: () => void calls.push('close'),
  };
  const users = new ExecutionUsers(
    () => userName,
    (name) => (name === 'alice' ? alice : undefined),
  );
  const environment = new AppEnvironment({ daemonEnv: { PATH: '/bin' } });
  return { tracked, calls, hook: new HealthHook(checks, users, environment) };
}

describe('HealthHook', () => {
  it("checks as the app's execution user, with the app's environment; results reach the app", () => {
    const { tracked, hook } = setup('alice');
    const f = fakeApp({ health_check_cmd: 'test -f /ok', env: { A: '1' }, working_dir: '/srv' });
    f.app.decide();
    hook.poststart(f.app);
    expect(tracked).toHaveLength(1);
    const target = tracked[0]!;
    expect(target).toMatchObject({ name: 'app', command: 'test -f /ok', cwd: '/srv', user: alice });
    expect(target.env).toEqual({
      PATH: '/bin',
      A: '1',
      HOME: '/home/alice',
      USER: 'alice',
      LOGNAME: 'alice',
    });
    target.report(1);
    expect(f.app.computeHealth()).toBe(1);
    expect(f.events.at(-1)).toEqual({ type: 'HEALTH', app: 'app', health: 1, previousHealth: 0 });
  });

  it('a user vanished since the spawn: unhealthy, and no check runs (never as the daemon user)', () => {
    const { tracked, hook } = setup('ghost');
    const f = fakeApp({ health_check_cmd: 'true' });
    f.app.decide();
    hook.poststart(f.app);
    expect(tracked).toEqual([]);
    expect(f.app.computeHealth()).toBe(1);
  });

  it('no command: nothing checked; exit and removal stop the checks, detach closes them', () => {
    const { tracked, calls, hook } = setup(undefined);
    const f = fakeApp();
    hook.poststart(f.app);
    hook.exited(f.app);
    hook.removed(f.app);
    hook.detach();
    expect(tracked).toEqual([]);
    expect(calls).toEqual(['untrack app', 'untrack app', 'close']);
  });
});
