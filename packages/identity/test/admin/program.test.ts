// The svc-auth-admin program as the daemon runs it (a child process): SVC_AUTH_ADMIN_UI=off idles
// without a listener, on serves the UI against the gRPC API, a non-loopback listener is refused.
import { spawn, type ChildProcess } from 'node:child_process';
import { lstat, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@svc/testkit';
import { parseAdminUiListen } from '../../src/admin/listen.ts';
import { adminUiEnabled } from '../../src/admin/program.ts';
import { startAdminFixture, type AdminFixture } from './fixture.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'svc-auth-admin.js');

let fixture: AdminFixture;
beforeAll(async () => {
  fixture = await startAdminFixture();
});
afterAll(async () => {
  await fixture?.close();
});

interface Running {
  child: ChildProcess;
  /** Resolves with stdout once `pattern` matched it. */
  output(pattern: RegExp): Promise<RegExpExecArray>;
  exited: Promise<{ code: number | null; stderr: string }>;
}

function run(env: Record<string, string>): Running {
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: fixture.home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stderr })),
  );
  const output = (pattern: RegExp): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const match = pattern.exec(stdout);
        if (match !== null) resolve(match);
        else waiters.push(check);
      };
      void exited.then(({ code }) => reject(new Error(`exited with ${code}: ${stderr}`)));
      check();
    });
  return { child, output, exited };
}

async function stop(running: Running): Promise<number | null> {
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGTERM');
  return (await running.exited).code;
}

describe('svc-auth-admin', () => {
  it('reads SVC_AUTH_ADMIN_UI as on (default) or off', () => {
    expect([undefined, '', 'on', 'ON', 'off', ' Off '].map((v) => adminUiEnabled(v))).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(() => adminUiEnabled('no')).toThrow(/SVC_AUTH_ADMIN_UI: expected on or off/);
  });

  it('with SVC_AUTH_ADMIN_UI=off stays up without serving, and stops on SIGTERM', async () => {
    const port = await freePort();
    const running = run({
      SVC_AUTH_ADMIN_UI: 'off',
      SVC_AUTH_ADMIN_LISTEN: `127.0.0.1:${port}`,
      SVC_AUTH_GRPC_LISTEN: fixture.server.target,
    });
    try {
      await running.output(/administration UI is disabled \(SVC_AUTH_ADMIN_UI=off\); idling/);
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
      expect(running.child.exitCode).toBeNull();
      await expect(readFile(join(fixture.workDir, 'ports.authadmin.json'))).rejects.toMatchObject({
        code: 'ENOENT',
      });
    } finally {
      expect(await stop(running)).toBe(0);
    }
  });

  it('with the UI on serves it against the gRPC API and records its port in ports.authadmin.json', async () => {
    const running = run({
      SVC_AUTH_ADMIN_LISTEN: '127.0.0.1:0',
      SVC_AUTH_GRPC_LISTEN: fixture.server.target,
    });
    try {
      const [, url] = await running.output(/administration UI listening on (http:\/\/127\.0\.0\.1:\d+)/);
      const ports = JSON.parse(
        await readFile(join(fixture.workDir, 'ports.authadmin.json'), 'utf8'),
      ) as Record<string, number>;
      expect(`http://127.0.0.1:${ports['admin_ui']}`).toBe(url);
      const response = await fetch(`${url!}/api/users`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { users: { email: string }[] }).users.map((u) => u.email)).toContain(
        'admin@svc.local',
      );
    } finally {
      expect(await stop(running)).toBe(0);
    }
    // Stopped: its record is gone (svcd then drops admin_ui from ports.json).
    await expect(readFile(join(fixture.workDir, 'ports.authadmin.json'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });

  it('on a Unix socket: mode 0600, replaces a stale socket, refuses a live one and hostile paths', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-ui-sock-'));
    const path = join(dir, 'ui.sock');
    try {
      // A stale socket left by a killed run (nothing accepts on it) is replaced.
      const holder = spawn(process.execPath, [
        '-e',
        `require('node:net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`,
      ]);
      await new Promise((resolve) => holder.stdout.once('data', resolve));
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
      expect((await lstat(path)).isSocket()).toBe(true);
      const running = run({
        SVC_AUTH_ADMIN_LISTEN: `unix:${path}`,
        SVC_AUTH_GRPC_LISTEN: fixture.server.target,
      });
      try {
        await running.output(/administration UI listening on unix:/);
        const info = await lstat(path);
        expect(info.isSocket()).toBe(true);
        expect(info.mode & 0o777).toBe(0o600);
        expect(JSON.parse(await readFile(join(fixture.workDir, 'ports.authadmin.json'), 'utf8'))).toEqual({
          admin_ui_socket: path,
        });
        // A second program on the same (live) socket is refused.
        const second = run({
          SVC_AUTH_ADMIN_LISTEN: `unix:${path}`,
          SVC_AUTH_GRPC_LISTEN: fixture.server.target,
        });
        const refused = await second.exited;
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain('is in use by another process');
      } finally {
        expect(await stop(running)).toBe(0);
      }
      await expect(lstat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('parses SVC_AUTH_ADMIN_LISTEN: loopback host:port or unix:<absolute path>, nothing else', () => {
    expect(parseAdminUiListen('unix:/run/svc/admin-ui.sock', 'V')).toEqual({
      kind: 'unix',
      path: '/run/svc/admin-ui.sock',
    });
    expect(parseAdminUiListen('127.0.0.1:6064', 'V')).toEqual({ kind: 'tcp', host: '127.0.0.1', port: 6064 });
    for (const bad of [
      'unix:relative.sock',
      'unix:',
      'unix:/dir/',
      'unix:/a\u0000b',
      `unix:/${'x'.repeat(200)}`,
      'unix:/ok\nX-Injected: 1',
      '0.0.0.0:6064',
      'unix',
    ])
      expect(() => parseAdminUiListen(bad, 'V'), bad).toThrow(/^V: /);
  });

  it('refuses a non-loopback listener', async () => {
    for (const env of [
      { SVC_AUTH_ADMIN_LISTEN: '0.0.0.0:6064' },
      { SVC_AUTH_GRPC_LISTEN: '192.0.2.7:5557' },
    ]) {
      const running = run({ SVC_AUTH_GRPC_LISTEN: fixture.server.target, ...env });
      const { code, stderr } = await running.exited;
      expect(code).toBe(1);
      expect(stderr).toMatch(
        /svc-auth-admin: cannot start: SVC_AUTH_(ADMIN|GRPC)_LISTEN: \S+ is not a loopback address/,
      );
    }
  });
});
