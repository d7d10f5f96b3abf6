// user-token and automation-token of the real script against the real svc-identity, and a pending
// administrator password: the old one works until the provider restarts, the new one after.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { decodeJwt } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapCredentials, loadCredentials } from '../../src/credentials/bootstrap.ts';

const ROOT = resolve(import.meta.dirname, '../../../..');
const SCRIPT = join(ROOT, 'script/svc-auth.sh');
const IDENTITY = join(ROOT, 'packages/identity/bin/svc-identity.js');

let home: string;
let provider: ChildProcess | undefined;

function run(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: home },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  });
}

async function startProvider(): Promise<void> {
  const child = spawn(process.execPath, [IDENTITY], {
    env: {
      PATH: process.env['PATH'],
      SVC_HOME: home,
      SVC_ISSUER_PORT: '0',
      SVC_AUTH_TELEMETRY_PORT: '0',
      SVC_AUTH_GRPC_LISTEN: '127.0.0.1:0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  provider = child;
  let output = '';
  await new Promise<void>((done, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
      if (output.includes('"svc-identity listening"')) done();
    });
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => reject(new Error(`svc-identity exited with ${code}: ${output}`)));
  });
}

async function stopProvider(): Promise<void> {
  const child = provider;
  provider = undefined;
  if (child === undefined || child.exitCode !== null) return;
  await new Promise<void>((done) => {
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-auth-tokens-'));
  await bootstrapCredentials(join(home, 'work'), { mode: 'builtin' });
  await startProvider();
});
afterEach(async () => {
  await stopProvider();
  await rm(home, { recursive: true, force: true });
});

describe('svc-auth.sh token actions against svc-identity', () => {
  it('automation-token prints only a JWT of svc-automation for svc-api', async () => {
    const result = await run(['automation-token']);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const claims = decodeJwt(lines[0]!);
    expect(claims['client_id']).toBe('svc-automation');
    expect([claims.aud].flat()).toContain('svc-api');
  });

  it('user-token prints only the access token; a wrong password or a leftover hash is refused (401)', async () => {
    const admin = (await loadCredentials(join(home, 'work'), { mode: 'builtin' })).admin;
    const ok = await run(['user-token'], `${admin.password}\n`);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(ok.stdout.trim().length).toBeGreaterThan(20);
    for (const wrong of ['wrong', admin.password_hash.slice(0, 72)]) {
      const refused = await run(['user-token', 'admin@svc.local'], `${wrong}\n`);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(/^svc-auth: token request refused: 401 /);
    }
  });

  it('set-initial-password is pending: the old password works until the provider restarts', async () => {
    const old = (await loadCredentials(join(home, 'work'), { mode: 'builtin' })).admin.password!;
    expect((await run(['set-initial-password'], 'the-new-password\n')).code).toBe(0);
    expect((await run(['user-token'], `${old}\n`)).code).toBe(0);
    expect((await run(['user-token'], 'the-new-password\n')).code).toBe(1);
    await stopProvider();
    await startProvider();
    expect((await run(['user-token'], 'the-new-password\n')).code).toBe(0);
    expect((await run(['user-token'], `${old}\n`)).code).toBe(1);
  });
});
