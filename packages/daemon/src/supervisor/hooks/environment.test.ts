// The environment contract of a managed process (README), with a fake daemon environment.
import { describe, expect, it } from 'vitest';
import { fakeApp } from '../test-fakes.ts';
import { AppEnvironment, EnvironmentHook } from './environment.ts';
import type { SpawnPreparation } from './hook.ts';

const alice = { user: 'alice', uid: 1001, gid: 1001, groups: [1001], home: '/home/alice' };

function prepare(
  hook: EnvironmentHook,
  input: Record<string, unknown>,
  user = alice,
): Record<string, string> {
  const spawn: SpawnPreparation = { processUuid: 'uuid-1', env: {}, outputFd: -1, user };
  hook.prestart(fakeApp(input).app, spawn);
  return spawn.env;
}

describe('EnvironmentHook', () => {
  const daemonEnv: NodeJS.ProcessEnv = {
    PATH: '/bin',
    HOME: '/root',
    SVC_SECRET_SETTING: 's3cret',
    TZ: 'UTC',
  };
  const environment = new AppEnvironment({ daemonEnv, systemEnv: { SVC_HOME: '/svc', EXTRA: 'system' } });
  const hook = new EnvironmentHook({
    environment,
    keyOf: (uuid) => `key-of-${uuid}`,
    daemonUrl: 'https://127.0.0.1:1',
    now: () => Date.UTC(2030, 0, 1),
    peerEnvironment: () => ({ SVC_SERVICE_DB_ADDR: '10.0.0.1:5432' }),
  });

  it("daemon env minus its SVC_*, then env, secret_env, the user's, then the injected variables", () => {
    const env = prepare(hook, {
      env: { A: 'env', HOME: '/tmp/h', SVC_PROCESS_KEY: 'forged', SVC_APPLICATION_NAME: 'other' },
      secret_env: { A: 'secret', B: 'secret' },
    });
    expect(env).toEqual({
      PATH: '/bin',
      TZ: 'UTC',
      A: 'secret',
      B: 'secret',
      HOME: '/home/alice', // the user's wins over the definition's
      USER: 'alice',
      LOGNAME: 'alice',
      SVC_PROCESS_KEY: 'key-of-uuid-1', // injected: wins over the definition's
      SVC_PROCESS_UUID: 'uuid-1',
      SVC_APPLICATION_NAME: 'app',
      SVC_LAUNCH_TIME: '2030-01-01T00:00:00.000Z',
      SVC_DAEMON_URL: 'https://127.0.0.1:1',
      SVC_SERVICE_DB_ADDR: '10.0.0.1:5432',
    });
    expect(JSON.stringify(env)).not.toContain('s3cret');
  });

  it('TZ is read at every start; the system env and no peers for a system app', () => {
    daemonEnv['TZ'] = 'Europe/Paris';
    expect(prepare(hook, {})['TZ']).toBe('Europe/Paris');
    delete daemonEnv['TZ'];
    expect(prepare(hook, {})).not.toHaveProperty('TZ');
    daemonEnv['TZ'] = 'UTC';
    const system = fakeApp().app;
    const spawn: SpawnPreparation = { processUuid: 'u', env: {}, outputFd: -1 };
    const systemDef = { ...system.def, system: true };
    system.replace(systemDef);
    hook.prestart(system, spawn);
    expect(spawn.env).toMatchObject({ SVC_HOME: '/svc', EXTRA: 'system' });
    expect(spawn.env).not.toHaveProperty('SVC_SERVICE_DB_ADDR');
    expect(prepare(hook, {})).not.toHaveProperty('EXTRA');
  });
});
