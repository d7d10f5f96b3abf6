// script/svc-backup.sh against real daemons: a backup taken while svcd runs and registrations
// land, restored into a fresh SVC_HOME (a new host), brings every acknowledged app back, and a
// secret_env value is still readable there (the archive carries secret-master-key). Refusals:
// restore over a running svcd or over existing state, bad usage, a missing archive.
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, startTestIssuer, waitFor, type TestDaemon, type TestIssuer } from '@svc/testkit';

const SCRIPT = resolve(import.meta.dirname, '../../script/svc-backup.sh');
const SECRET = 'restored-secret-value-7f3a';

let issuer: TestIssuer;
let first: TestDaemon;
let second: TestDaemon | undefined;
let dir: string;
let newHome: string;

function backupScript(
  home: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: home },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

function tarList(archive: string): Promise<string[]> {
  return new Promise((done, reject) => {
    const child = spawn('tar', ['--list', '--gzip', '--file', archive]);
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', () => done(stdout.split('\n').filter((l) => l !== '')));
  });
}

beforeAll(async () => {
  issuer = await startTestIssuer();
  first = await startTestDaemon({ issuer });
  dir = await mkdtemp(join(tmpdir(), 'svc-backup-'));
  newHome = await mkdtemp(join(tmpdir(), 'svc-backup-home-'));
});

afterAll(async () => {
  await second?.close();
  await first?.close();
  await issuer?.close();
  await rm(dir, { recursive: true, force: true });
  await rm(newHome, { recursive: true, force: true });
});

describe('backup and restore of work/', () => {
  it('backs up while svcd runs and registrations land; restores onto a new home with every app and secret', async () => {
    const admin = await first.token('admin');
    const rest = first.rest();
    const keeper = {
      command: `sh -c 'echo "token=$TOKEN"; exec sleep 600'`,
      secret_env: { TOKEN: SECRET },
    };
    expect((await rest.call('PUT', '/svc/app/keeper', { token: admin, body: keeper })).status).toBe(200);
    const acknowledged = ['keeper'];
    // Registrations racing the backup: every one acknowledged before the backup starts must come back.
    const racing = Array.from({ length: 12 }, (_, i) => `racer-${i}`);
    const before = racing.slice(0, 6);
    for (const name of before) {
      expect(
        (await rest.call('PUT', `/svc/app/${name}`, { token: admin, body: { command: 'sleep 600' } })).status,
      ).toBe(200);
      acknowledged.push(name);
    }
    const archive = join(dir, 'svc-backup.tar.gz');
    const [made] = await Promise.all([
      backupScript(first.home, ['backup', archive]),
      ...racing
        .slice(6)
        .map((name) =>
          rest.call('PUT', `/svc/app/${name}`, { token: admin, body: { command: 'sleep 600' } }),
        ),
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(statSync(archive).mode & 0o777).toBe(0o600);
    const entries = await tarList(archive);
    expect(entries).toContain('./auth/secrets/secret-master-key');
    expect(entries).toContain('./apps/keeper.yaml');
    expect(entries.some((e) => e.startsWith('./stdout/') && e !== './stdout/')).toBe(false);
    expect(entries).not.toContain('./svcd.pid');
    expect(entries).not.toContain('./.snapshot');
    expect(entries).not.toContain('./apps/.journal');
    expect(entries.some((e) => e === './run/' || e.startsWith('./run/'))).toBe(false);
    // The secret value itself is stored encrypted, never in clear.
    const clear = await new Promise<string>((done) => {
      const child = spawn('sh', ['-c', `tar -xzOf '${archive}' ./apps/keeper.yaml`]);
      let text = '';
      child.stdout.on('data', (c: Buffer) => (text += c.toString('utf8')));
      child.on('close', () => done(text));
    });
    expect(clear).toContain('TOKEN');
    expect(clear).not.toContain(SECRET);

    await first.close(); // the first host is gone (its apps are killed and its home removed)

    const restored = await backupScript(newHome, ['restore', archive]);
    expect(restored.code, restored.stderr).toBe(0);
    second = await startTestDaemon({ issuer, home: newHome });
    const token = await second.token('admin');
    const names = await waitFor(
      async () => {
        const list = await second!.rest().call('GET', '/svc/applications', { token });
        const found = list.json<{ name: string }[]>().map((a) => a.name);
        return acknowledged.every((n) => found.includes(n)) ? found : undefined;
      },
      { what: 'the restored apps', timeoutMs: 30_000, intervalMs: 50 },
    );
    expect(names).toEqual(expect.arrayContaining(acknowledged));
    // secret_env is readable on the new host: the restored process got the decrypted value.
    await waitFor(
      async () => {
        const output = await second!.rest().call('GET', '/svc/app/keeper/output', { token });
        return output.text().includes(`token=${SECRET}`);
      },
      { what: 'the secret in the restored app output', timeoutMs: 30_000, intervalMs: 50 },
    );
  }, 120_000);

  it('refuses to restore over a running svcd or existing state, and explains bad usage', async () => {
    const archive = join(dir, 'svc-backup.tar.gz');
    const running = await backupScript(newHome, ['restore', archive, '--force']);
    expect(running.code).toBe(1);
    expect(running.stderr).toMatch(/svcd of .* is running/);
    await second!.close();
    second = undefined;
    const existing = await backupScript(newHome, ['restore', archive]);
    expect(existing.code).toBe(1);
    expect(existing.stderr).toMatch(/already holds state: restore --force/);
    const forced = await backupScript(newHome, ['restore', archive, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toMatch(/moved the old work directory to/);
    const missing = await backupScript(newHome, ['restore', join(dir, 'nope.tar.gz'), '--force']);
    expect(missing.code).toBe(1);
    for (const args of [[], ['backup'], ['restore'], ['backup', 'x', '--bogus'], ['explode', 'x']]) {
      const bad = await backupScript(newHome, args);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toMatch(/svc-backup\.sh backup/);
    }
  }, 60_000);
});
