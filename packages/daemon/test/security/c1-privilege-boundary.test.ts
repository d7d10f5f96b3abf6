// Issue 25 C1: nothing a caller sends takes effect before the switch to its execution user. The
// attack: a principal with only app-run-sync and an unprivileged execution_user runs
// {"command": "sleep …", "env": {"LD_PRELOAD": "<its .so>"}, "health_check_cmd": "true"}; the
// health check used to be started through setpriv as root WITH the app's environment, so the
// library's constructor ran as uid 0. Here the library records the uid and euid of every process
// it is loaded into; every record must be the user's, and the health check's own process must be
// among them (so the probe really ran). The same for a registered app (PUT), session_login, and a
// working_dir only root may enter (entered as the user, so refused), on both spawn paths.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

const PROBE_SOURCE = `
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void probe(void) {
  const char *out = getenv("SVC_PROBE_OUT");
  if (out == NULL) return;
  FILE *f = fopen(out, "a");
  if (f == NULL) return;
  fprintf(f, "%d %d %s\\n", (int)getuid(), (int)geteuid(), program_invocation_short_name);
  fclose(f);
}
`;

let user: TestOsUser;
let dir: string;
let probe: string;
let rootOnly: string;

beforeAll(async () => {
  if (!IS_ROOT) return;
  user = createOsUser();
  dir = await mkdtemp(join(tmpdir(), 'svc-c1-'));
  await chmod(dir, 0o755);
  probe = join(dir, 'probe.so');
  await writeFile(join(dir, 'probe.c'), PROBE_SOURCE);
  execFileSync('cc', ['-shared', '-fPIC', '-o', probe, join(dir, 'probe.c')]);
  // An open directory inside one only root may enter: the user cannot reach it by any path, but a
  // process whose working directory it already is may list and read it.
  rootOnly = join(dir, 'root-only', 'open');
  await mkdir(rootOnly, { recursive: true, mode: 0o755 });
  await chmod(join(dir, 'root-only'), 0o700);
  await writeFile(join(rootOnly, 'secret-name-c1'), 'secret-content-c1', { mode: 0o644 });
});
afterAll(async () => {
  user?.remove();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** A file every process may append to: one line per process the probe was loaded into. */
async function probeLog(name: string): Promise<string> {
  const path = join(dir, `${name}.log`);
  await writeFile(path, '');
  await chmod(path, 0o666);
  return path;
}

async function records(path: string): Promise<{ uid: number; euid: number; program: string }[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [uid, euid, program] = line.split(' ');
      return { uid: Number(uid), euid: Number(euid), program: program ?? '' };
    });
}

describe.skipIf(!IS_ROOT).each([
  { spawner: 'native' as const },
  { spawner: 'inprocess' as const },
])('the privilege boundary, SVC_SPAWNER=$spawner', ({ spawner }) => {
  let daemon: TestDaemon;
  let rest: ApiClient;
  let runner: string;
  let builder: string;
  let fetcher: string;
  let runnerAsBuilder: string;

  beforeAll(async () => {
    daemon = await startTestDaemon({ env: { SVC_SPAWNER: spawner } });
    rest = daemon.rest();
    const admin = await daemon.token('admin');
    const set = async (path: string, body: unknown): Promise<void> => {
      const r = await rest.call('POST', path, { token: admin, body });
      expect(r.status, `${path}: ${r.text()}`).toBe(200);
    };
    await set('/svc/role/runner', { permissions: ['app-run-sync'] });
    await set('/svc/role/builder', { permissions: ['app-reg', 'app-view', 'app-control'] });
    await set('/svc/principal/c1-runner', { roles: ['runner'], execution_user: user.name });
    await set('/svc/principal/c1-builder', { roles: ['builder'], execution_user: user.name });
    await set('/svc/role/fetcher', { permissions: ['file-download'] });
    await set('/svc/principal/c1-builder-2', { roles: ['builder'], execution_user: user.name });
    await set('/svc/principal/c1-fetcher', { roles: ['fetcher'], execution_user: user.name });
    runner = await daemon.issuer.mint({ sub: 'c1-runner' });
    builder = await daemon.issuer.mint({ sub: 'c1-builder' });
    fetcher = await daemon.issuer.mint({ sub: 'c1-fetcher' });
    runnerAsBuilder = await daemon.issuer.mint({ sub: 'c1-builder-2' });
  });
  afterAll(async () => {
    await daemon?.close();
  });

  it('a run with LD_PRELOAD and a health check loads the library only as the user', async () => {
    const log = await probeLog(`run-${spawner}`);
    const run = rest.call('POST', '/svc/app/syncrun?timeout=30', {
      token: runner,
      body: {
        command: 'sleep 30',
        env: { LD_PRELOAD: probe, SVC_PROBE_OUT: log },
        health_check_cmd: 'true',
      },
    });
    // The health check's `sh` (first check at the start) and the main `sleep` both load it.
    const seen = await waitFor(
      async () => {
        const all = await records(log);
        return all.some((r) => r.program === 'sh') && all.some((r) => r.program === 'sleep') && all;
      },
      { what: 'the probe in the health check and the main process', timeoutMs: 20_000 },
    );
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const record of seen) expect(record, JSON.stringify(seen)).toMatchObject({ uid: user.uid, euid: user.uid });
    // End the run: its app is named run-<id>; the runner may not stop it, the admin may.
    const admin = await daemon.token('admin');
    const apps = (await rest.call('GET', '/svc/applications', { token: admin })).json<{ name: string }[]>();
    for (const app of apps.filter((a) => a.name.startsWith('run')))
      await rest.call('DELETE', `/svc/app/${app.name}`, { token: admin });
    await run;
  });

  it('a registered app, its health check and session_login load it only as the user', async () => {
    const log = await probeLog(`app-${spawner}`);
    const put = await rest.call('PUT', `/svc/app/c1-app-${spawner}`, {
      token: builder,
      body: {
        command: 'sleep 60',
        session_login: true,
        env: { LD_PRELOAD: probe, SVC_PROBE_OUT: log },
        health_check_cmd: 'true',
      },
    });
    expect(put.status, put.text()).toBe(200);
    const seen = await waitFor(
      async () => {
        const all = await records(log);
        // session_login runs the command through `sh -l -c`; the health check is another `sh`.
        return all.filter((r) => r.program === 'sh').length >= 2 && all;
      },
      { what: 'the probe in the login shell and the health check', timeoutMs: 20_000 },
    );
    for (const record of seen) expect(record, JSON.stringify(seen)).toMatchObject({ uid: user.uid, euid: user.uid });
    expect((await rest.call('DELETE', `/svc/app/c1-app-${spawner}`, { token: builder })).status).toBe(200);
  });

  it('a working_dir only root may enter is entered as the user: refused, nothing runs there', async () => {
    const r = await rest.call('POST', '/svc/app/syncrun?timeout=20', {
      token: runner,
      body: { command: 'ls -a; cat secret-name-c1', shell: true, working_dir: rootOnly },
    });
    expect(r.status, r.text()).toBe(200);
    expect(r.text()).not.toContain('secret-name-c1');
    expect(r.text()).not.toContain('secret-content-c1');
    expect(r.headers['x-exit-code']).not.toBe('0');
  });

  it('resolves a file path as the user: what lies behind a root-only directory is not even found', async () => {
    const download = (path: string) =>
      rest.call('GET', '/svc/file/download', {
        token: fetcher,
        headers: { 'x-file-path': encodeURIComponent(path) },
      });
    const present = await download(join(rootOnly, 'secret-name-c1'));
    const absent = await download(join(rootOnly, 'no-such-file'));
    expect(present.text()).not.toContain('secret-content-c1');
    // The same answer whether the file exists or not: root's view of the path is never consulted.
    expect([present.status, present.json()]).toEqual([absent.status, absent.json()]);
    expect(present.status).toBe(403);
  });

  it("refuses a replacement that would run the caller's definition as another principal's user", async () => {
    const admin = await daemon.token('admin');
    // The administrator (running as root) shares its app for writing (`permission` 33: others write).
    const shared = `c1-shared-${spawner}`;
    const created = await rest.call('PUT', `/svc/app/${shared}`, {
      token: admin,
      body: { command: 'sleep 60', permission: 33 },
    });
    expect(created.status, created.text()).toBe(200);
    const replaced = await rest.call('PUT', `/svc/app/${shared}`, {
      token: builder,
      body: { command: 'id -u', permission: 33 },
    });
    expect([replaced.status, replaced.json<{ error: string }>().error]).toEqual([403, 'forbidden']);
    const after = (await rest.call('GET', `/svc/app/${shared}`, { token: admin })).json<{ command: string }>();
    expect(after.command).toBe('sleep 60');
    // The same principal may replace an app shared by a principal that runs as its own user.
    const peer = `c1-peer-${spawner}`;
    const peerApp = await rest.call('PUT', `/svc/app/${peer}`, {
      token: runnerAsBuilder,
      body: { command: 'sleep 60', permission: 33 },
    });
    expect(peerApp.status, peerApp.text()).toBe(200);
    const ok = await rest.call('PUT', `/svc/app/${peer}`, { token: builder, body: { command: 'sleep 61', permission: 33 } });
    expect(ok.status, ok.text()).toBe(200);
    for (const name of [shared, peer]) await rest.call('DELETE', `/svc/app/${name}`, { token: admin });
  });

  it('hands the environment over a pipe: no process shows a secret in its command line', async () => {
    const secret = `c1-secret-${spawner}-${Date.now()}`;
    const put = await rest.call('PUT', `/svc/app/c1-secret-${spawner}`, {
      token: builder,
      body: { command: 'sleep 60', env: { C1_SECRET: secret }, health_check_cmd: 'sleep 1' },
    });
    expect(put.status, put.text()).toBe(200);
    const pid = await waitFor(
      async () => {
        const r = await rest.call('GET', `/svc/app/c1-secret-${spawner}`, { token: builder });
        return r.json<{ pid?: number }>().pid;
      },
      { what: 'the app running' },
    );
    // The environment did arrive (as the user: in-process, the pid is the helper's until it has
    // exec'd the command), and no command line anywhere carries it.
    await waitFor(async () => (await readFile(`/proc/${pid}/environ`, 'utf8')).includes(`C1_SECRET=${secret}`), {
      what: 'the environment in the running process',
    });
    const cmdlines = execFileSync('ps', ['-e', '-o', 'args='], { encoding: 'utf8' });
    expect(cmdlines).not.toContain(secret);
    expect((await rest.call('DELETE', `/svc/app/c1-secret-${spawner}`, { token: builder })).status).toBe(200);
  });
});
