// The Debian package, built from this checkout and unpacked into a fresh directory tree (as dpkg
// would into /, but under a temp root and without running maintainer scripts): svcd starts from the
// tree on its embedded defaults (builtin mode, self-generated TLS) with only the tree's own Node.js,
// the tree's svc-auth.sh mints a token, the tree's `svc` registers and lists an app and stops
// everything; the systemd units verify clean against the tree.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EPHEMERAL_PORTS_ENV, waitFor } from '@svc/testkit';
import { buildDeb } from '../deb/build-deb.ts';

const run = promisify(execFile);
/** No Node.js 24 on this PATH: everything must run on the package's own runtime. */
const SYSTEM_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

let out: string;
let tree: string;
let home: string;
let deb: string;
let svcd: ChildProcess | undefined;
let svcdStderr = '';

/** `file` parsed, once `parse` accepts it (bounded); a failure shows svcd's last words. */
function untilFile<T>(file: string, parse: (text: string) => T | undefined, timeoutMs = 60_000): Promise<T> {
  return waitFor(() => readFile(file, 'utf8').then(parse, () => undefined), {
    what: file,
    timeoutMs,
    intervalMs: 50,
  }).catch((error: Error) => {
    throw new Error(`${error.message}:\n${svcdStderr.slice(-3000)}`, { cause: error });
  });
}

function inTree(path: string): string {
  return join(tree, path);
}

async function treeCommand(
  command: string,
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn(inTree(`opt/svc/bin/${command}`), args, {
      env: {
        PATH: SYSTEM_PATH,
        HOME: home,
        SVC_HOME: home,
        SVC_CONFIG_DIR: join(home, 'cli'),
        ...options.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'svc-deb-'));
  ({ deb } = buildDeb({ out, compression: 'none' }));
  tree = join(out, 'root');
  await run('dpkg-deb', ['-x', deb, tree]);
  home = await mkdtemp(join(tmpdir(), 'svc-deb-home-'));
}, 300_000);

afterAll(async () => {
  if (svcd !== undefined && svcd.exitCode === null) svcd.kill('SIGKILL');
  await rm(out, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

describe('the Debian package', () => {
  it('has the control fields, the conffile and maintainer scripts that parse', async () => {
    const fields = (await run('dpkg-deb', ['-f', deb, 'Package', 'Architecture', 'Depends'])).stdout;
    expect(fields).toMatch(/^Package: svc$/m);
    expect(fields).toMatch(/^Depends: .*adduser/m);
    const contents = (await run('dpkg-deb', ['-c', deb], { maxBuffer: 64 * 1024 * 1024 })).stdout;
    for (const path of [
      './opt/svc/bin/svcd',
      './opt/svc/bin/svc',
      './opt/svc/script/svc-auth.sh',
      './opt/svc/apps/identity.yaml',
      './opt/svc/node_modules/.bin/node',
      './opt/svc/docs/operations.md',
      './opt/svc/script/svc-backup.sh',
      './opt/svc/script/svc-auth.ps1',
      './opt/svc/metrics/prometheus.yml',
      './opt/svc/packages/web/dist/index.html',
      './lib/systemd/system/svc.service',
      './lib/systemd/system/svc-metrics-token.timer',
      './etc/default/svc',
      './usr/bin/svc -> /opt/svc/bin/svc',
    ])
      expect(contents).toContain(path);
    // Only what runs: no tests, no dev tools.
    expect(contents).not.toMatch(/^.* \.\/opt\/svc\/packages\/.*\.test\.ts$/m);
    // The web UI ships built (hashed assets), not its sources.
    expect(contents).toMatch(/\.\/opt\/svc\/packages\/web\/dist\/assets\/main-[A-Z0-9]+\.js$/m);
    expect(contents).not.toMatch(/\.\/opt\/svc\/packages\/web\/src\//);
    expect(contents).not.toMatch(/node_modules\/(typescript|vitest|esbuild|playwright-core)\//);
    const control = join(out, 'control');
    await run('dpkg-deb', ['-e', deb, control]);
    expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe('/etc/default/svc\n');
    for (const script of ['postinst', 'prerm', 'postrm']) await run('sh', ['-n', join(control, script)]);
    expect(readFileSync(join(control, 'postinst'), 'utf8')).toMatch(/adduser --system/);
  });

  it('systemd-analyze verify accepts the units (paths pointed at the unpacked tree)', async () => {
    for (const unit of ['svc.service', 'svc-metrics-token.service', 'svc-metrics-token.timer']) {
      const text = readFileSync(inTree(`lib/systemd/system/${unit}`), 'utf8').replaceAll(
        '/opt/svc',
        inTree('opt/svc'),
      );
      const copy = join(out, unit);
      await writeFile(copy, text);
      const verified = await run('systemd-analyze', ['verify', copy]).catch(
        (error: { code: number; stderr: string }) => error,
      );
      expect(verified.stderr, unit).toBe('');
    }
    const unit = readFileSync(inTree('lib/systemd/system/svc.service'), 'utf8');
    // Managed processes survive a restart of svcd; state under SVC_HOME=/var/lib/svc, a system user.
    expect(unit).toMatch(/^KillMode=process$/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^User=svc$/m);
    expect(unit).toMatch(/^Environment=SVC_HOME=\/var\/lib\/svc$/m);
    expect(unit).toMatch(/^Type=exec$/m);
  });

  it('runs from the unpacked tree on its defaults: svcd, svc-auth.sh and svc on the bundled Node.js', async () => {
    svcd = spawn(inTree('opt/svc/bin/svcd'), [], {
      env: {
        PATH: SYSTEM_PATH,
        HOME: home,
        SVC_HOME: home,
        ...EPHEMERAL_PORTS_ENV,
        SVC_AUTH_ADMIN_UI: 'off',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    svcd.stderr!.on('data', (c: Buffer) => (svcdStderr = (svcdStderr + c.toString('utf8')).slice(-20_000)));
    const ports = await untilFile(join(home, 'work/ports.json'), (text) => {
      const parsed = JSON.parse(text) as Record<string, number>;
      return parsed['rest'] !== undefined ? parsed : undefined;
    });
    expect(existsSync(join(home, 'work/ssl/ca.pem'))).toBe(true);
    // The identity provider (a system app run by the tree's node) is up once its port is recorded.
    await untilFile(join(home, 'work/ports.identity.json'), (text) =>
      (JSON.parse(text) as Record<string, number>)['issuer'] ? true : undefined,
    );
    const password = await treeCommand('svc-auth.sh', ['print-initial-password']);
    expect(password.code, password.stderr).toBe(0);
    let token = await treeCommand('svc-auth.sh', ['user-token'], { stdin: password.stdout });
    for (let attempt = 0; token.code !== 0 && attempt < 100; attempt += 1) {
      // The issuer may still be loading its keys right after its port appeared: bounded retry.
      await new Promise((done) => setTimeout(done, 100));
      token = await treeCommand('svc-auth.sh', ['user-token'], { stdin: password.stdout });
    }
    expect(token.code, token.stderr).toBe(0);
    const cli = { env: { SVC_BEARER_TOKEN: token.stdout.trim() } };
    const server = ['-H', `https://127.0.0.1:${ports['rest']}`];
    const added = await treeCommand('svc', [...server, 'add', 'from-package', '--cmd', 'sleep 600'], cli);
    expect(added.code, added.stderr).toBe(0);
    const listed = await treeCommand('svc', [...server, 'ls', '-o', 'json'], cli);
    expect(listed.code, listed.stderr).toBe(0);
    const apps = JSON.parse(listed.stdout) as { name: string; pid?: number }[];
    expect(apps.map((a) => a.name)).toEqual(expect.arrayContaining(['from-package', 'agent', 'identity']));
    const stopped = await treeCommand('svc', ['daemon', 'stop', '--all'], cli);
    expect(stopped.code, stopped.stderr).toBe(0);
    await new Promise((done) => (svcd!.exitCode !== null ? done(undefined) : svcd!.once('exit', done)));
    const pids = apps.flatMap((a) => (a.pid === undefined ? [] : [a.pid]));
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids)
      expect(
        existsSync(`/proc/${pid}/cmdline`)
          ? readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0]
          : 'gone',
      ).toMatch(/gone|Z/);
  }, 180_000);
});
