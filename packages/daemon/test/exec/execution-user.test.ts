// Per-principal execution_user and BaseConfig.DefaultExecUser / DisableExecUser against a real
// daemon and a real unprivileged OS user: applications and runs execute as that user (uid, gid,
// supplementary groups, HOME; `pid_user`), output capture keeps working, and such a principal
// cannot reach the daemon's files (work/, secrets, policy, TLS key, stored apps, log) — issue 12.6:
// a custom role with only app-run-sync used to read the initial admin credentials.
import { chmod, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOsUser,
  IS_ROOT,
  startTestDaemon,
  waitFor,
  type ApiClient,
  type TestDaemon,
  type TestOsUser,
} from '@svc/testkit';

let user: TestOsUser;

beforeAll(() => {
  user = createOsUser();
});
afterAll(() => {
  user?.remove();
});

interface Run {
  exit: string | undefined;
  output: string;
}

async function syncRun(rest: ApiClient, token: string, command: string): Promise<Run> {
  const r = await rest.call('POST', '/svc/app/syncrun', { token, body: { command, shell: true } });
  expect(r.status, r.text()).toBe(200);
  return { exit: r.headers['x-exit-code'], output: r.text() };
}

describe.skipIf(!IS_ROOT)('execution_user of a principal', () => {
  let daemon: TestDaemon;
  let rest: ApiClient;
  let admin: string;
  let runner: string;
  let builder: string;

  beforeAll(async () => {
    daemon = await startTestDaemon();
    // A home anyone may traverse: only the modes inside work/ keep the user out.
    await chmod(daemon.home, 0o755);
    rest = daemon.rest();
    admin = await daemon.token('admin');
    const set = async (path: string, body: unknown): Promise<void> => {
      const r = await rest.call('POST', path, { token: admin, body });
      expect(r.status, `${path}: ${r.text()}`).toBe(200);
    };
    await set('/svc/role/runner', { permissions: ['app-run-sync'] });
    await set('/svc/role/builder', { permissions: ['app-reg', 'app-view', 'app-output-view'] });
    await set('/svc/principal/test-runner', { roles: ['runner'], execution_user: user.name });
    await set('/svc/principal/test-builder', { roles: ['builder'], execution_user: user.name });
    runner = await daemon.issuer.mint({ sub: 'test-runner' });
    builder = await daemon.issuer.mint({ sub: 'test-builder' });
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('stores execution_user in the principal record and refuses unknown or malformed users (400)', async () => {
    const list = (await rest.call('GET', '/svc/principals', { token: admin })).text();
    expect(list).toContain(`"execution_user":"${user.name}"`);
    for (const bad of ['no-such-user-svc', '../etc', 'a b', 'x'.repeat(40), 42, ['root'], { u: 1 }]) {
      const r = await rest.call('POST', '/svc/principal/test-other', {
        token: admin,
        body: { roles: [], execution_user: bad },
      });
      expect(r.status, JSON.stringify(bad)).toBe(400);
    }
    const empty = await rest.call('POST', '/svc/principal/test-other', { token: admin, body: {} });
    expect(empty.status).toBe(400);
  });

  it('runs a syncrun as the user: uid, gid, supplementary groups, HOME and its home as cwd', async () => {
    const run = await syncRun(rest, runner, 'id -u; id -g; id -G; echo "$HOME $USER"; pwd');
    expect(run.exit).toBe('0');
    const [uid, gid, groups, env, cwd] = run.output.trim().split('\n');
    expect(Number(uid)).toBe(user.uid);
    expect(Number(gid)).not.toBe(0);
    expect(groups!.split(' ').map(Number)).toContain(user.groupId);
    expect(groups!.split(' ').map(Number)).not.toContain(0);
    expect(env).toBe(`${user.home} ${user.name}`);
    expect(cwd).toBe(user.home);
  });

  it("keeps a principal holding only app-run-sync out of the daemon's files (issue 12.6)", async () => {
    // Every file there is (builtin mode adds the initial admin credentials to auth/secrets).
    const files = [
      ...(await readdir(join(daemon.workDir, 'auth', 'secrets'))).map((f) => `work/auth/secrets/${f}`),
      'work/auth/policy.yaml',
      'work/auth/process-key.secret',
      'work/server.log',
      ...(await readdir(join(daemon.workDir, 'ssl'))).map((f) => `work/ssl/${f}`),
      // (not the temp files of atomic writes, which come and go)
      ...(await readdir(join(daemon.workDir, 'apps')))
        .filter((f) => !f.startsWith('.'))
        .map((f) => `work/apps/${f}`),
    ];
    expect(files).toContain('work/auth/secrets/secret-master-key');
    // The daemon (root) reads them all: a DENIED below is the user's lack of rights, not a typo.
    const asDaemon = await syncRun(
      rest,
      admin,
      files.map((f) => `cat '${join(daemon.home, f)}' >/dev/null && echo READ`).join('; '),
    );
    expect(asDaemon.output.trim().split('\n')).toEqual(files.map(() => 'READ'));
    for (const file of files) {
      const path = join(daemon.home, file);
      const read = await syncRun(rest, runner, `cat '${path}' >/dev/null 2>&1 && echo READ || echo DENIED`);
      expect(read.output.trim(), file).toBe('DENIED');
    }
    const write = await syncRun(
      rest,
      runner,
      `(echo 'principals: {}' >> '${join(daemon.workDir, 'auth/policy.yaml')}') 2>/dev/null && echo WROTE || echo DENIED; ls '${daemon.workDir}' >/dev/null 2>&1 && echo LISTED || echo DENIED`,
    );
    expect(write.output.trim().split('\n')).toEqual(['DENIED', 'DENIED']);
  });

  it('runs an app registered by the principal as its user, reports pid_user and captures output', async () => {
    const put = await rest.call('PUT', '/svc/app/as-user', {
      token: builder,
      body: { command: 'id -un; sleep 600', shell: true },
    });
    expect(put.status, put.text()).toBe(200);
    const view = await waitFor(
      async () => {
        const app = (await rest.call('GET', '/svc/app/as-user', { token: builder })).json<
          Record<string, unknown>
        >();
        return typeof app['pid'] === 'number' ? app : undefined;
      },
      { what: 'as-user running' },
    );
    expect(view['pid_user']).toBe(user.name);
    const output = await waitFor(
      async () => {
        const text = (await rest.call('GET', '/svc/app/as-user/output', { token: builder })).text();
        return text.includes(user.name) ? text : undefined;
      },
      { what: 'output of as-user' },
    );
    expect(output.trim()).toBe(user.name);
    // An app pretending to pick another user: pid_user is a runtime field, never an input.
    const pick = await rest.call('PUT', '/svc/app/pick-root', {
      token: builder,
      body: { command: 'sleep 600', pid_user: 'root' },
    });
    expect(pick.status, pick.text()).toBe(200);
    {
      const app = await waitFor(
        async () => {
          const a = (await rest.call('GET', '/svc/app/pick-root', { token: builder })).json<
            Record<string, unknown>
          >();
          return typeof a['pid'] === 'number' ? a : undefined;
        },
        { what: 'pick-root running' },
      );
      expect(app['pid_user']).toBe(user.name);
    }
  });

  it("runs an admin's app (no execution user, no default) as the daemon's user", async () => {
    const run = await syncRun(rest, admin, 'id -un');
    expect(run.output.trim()).toBe('root');
  });
});

describe.skipIf(!IS_ROOT)('BaseConfig.DefaultExecUser and DisableExecUser', () => {
  it('DefaultExecUser applies to principals without an execution_user', async () => {
    await using daemon = await startTestDaemon({
      files: { 'config/config.yaml': `BaseConfig:\n  DefaultExecUser: ${user.name}\n` },
    });
    const run = await syncRun(daemon.rest(), await daemon.token('admin'), 'id -un');
    expect(run.output.trim()).toBe(user.name);
  });

  it('DisableExecUser runs everything as the daemon user, execution_user included', async () => {
    await using daemon = await startTestDaemon({
      files: {
        'config/config.yaml': `BaseConfig:\n  DisableExecUser: true\n  DefaultExecUser: ${user.name}\n`,
      },
    });
    const rest = daemon.rest();
    const admin = await daemon.token('admin');
    const set = await rest.call('POST', '/svc/principal/test-admin', {
      token: admin,
      body: { execution_user: user.name },
    });
    expect(set.status, set.text()).toBe(200);
    const run = await syncRun(rest, admin, 'id -un');
    expect(run.output.trim()).toBe('root');
  });
});
