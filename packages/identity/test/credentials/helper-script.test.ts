// The real script/svc-auth.sh, run with bash against a temp SVC_HOME.
import { spawn } from 'node:child_process';
import {
  chmod,
  chown,
  link,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapCredentials, loadCredentials } from '../../src/credentials/bootstrap.ts';
import { credentialFilePath } from '../../src/credentials/credential-file.ts';
import { verifyPassword } from '../../src/credentials/password.ts';

const SCRIPT = resolve(import.meta.dirname, '../../../../script/svc-auth.sh');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let home: string;
let work: string;
let adminFile: string;

function run(args: string[], options: { stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: home, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined); // the script may exit before reading stdin
    child.stdin.end(options.stdin ?? '');
  });
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-auth-script-'));
  work = join(home, 'work');
  await bootstrapCredentials(work, { mode: 'builtin' });
  adminFile = credentialFilePath(work, 'admin');
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('svc-auth.sh administrator password actions', () => {
  it('print-initial-password prints the generated 48-character password', async () => {
    const result = await run(['print-initial-password']);
    expect(result.code).toBe(0);
    const admin = (await loadCredentials(work, { mode: 'builtin' })).admin;
    expect(result.stdout).toBe(`${admin.password}\n`);
    expect(result.stdout.trim()).toMatch(/^[0-9a-f]{48}$/);
  });

  it('set-initial-password takes one stdin line, hashes it (cost 10), keeps the plaintext line', async () => {
    const before = (await stat(adminFile)).ino;
    const result = await run(['set-initial-password'], { stdin: 'new pass=word\n' });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('active when svc restarts');
    expect(result.stdout + result.stderr).not.toContain('new pass=word');
    const admin = (await loadCredentials(work, { mode: 'builtin' })).admin;
    expect(admin.password).toBe('new pass=word');
    expect(admin.password_hash).toMatch(/^\$2b\$10\$/);
    expect(await verifyPassword('new pass=word', admin.password_hash)).toBe(true);
    const after = await stat(adminFile);
    expect(after.ino).not.toBe(before); // temp file + rename
    expect(after.mode & 0o777).toBe(0o600);
    expect((await run(['print-initial-password'])).stdout).toBe('new pass=word\n');
  });

  it('set-initial-password refuses 73 bytes, two lines, an empty stdin and an argument, leaving the file alone', async () => {
    const original = await readFile(adminFile, 'utf8');
    const long = await run(['set-initial-password'], { stdin: 'x'.repeat(73) + '\n' });
    expect(long.code).toBe(1);
    expect(long.stderr).toBe('svc-auth: stdin: password must be at most 72 bytes (it has 73)\n');
    expect((await run(['set-initial-password'], { stdin: 'x'.repeat(72) })).code).toBe(0);
    await writeFile(adminFile, original, { mode: 0o600 });
    const twoLines = await run(['set-initial-password'], { stdin: 'a\nb\n' });
    expect(twoLines.code).toBe(1);
    expect(twoLines.stderr).toContain('stdin must hold exactly one line');
    expect((await run(['set-initial-password'], { stdin: '' })).stderr).toContain(
      'password must not be empty',
    );
    const argv = await run(['set-initial-password', 'secret-in-argv']);
    expect(argv.code).toBe(2);
    expect(argv.stderr).toContain('password on stdin, never as an argument');
    expect(await readFile(adminFile, 'utf8')).toBe(original);
  });

  it('rotate-initial-password writes a new random password and hash; forget removes only the plaintext', async () => {
    const old = (await loadCredentials(work, { mode: 'builtin' })).admin;
    expect((await run(['rotate-initial-password'])).code).toBe(0);
    const rotated = (await loadCredentials(work, { mode: 'builtin' })).admin;
    expect(rotated.password).toMatch(/^[0-9a-f]{48}$/);
    expect(rotated.password).not.toBe(old.password);
    expect(await verifyPassword(rotated.password!, rotated.password_hash)).toBe(true);
    expect(await verifyPassword(old.password!, rotated.password_hash)).toBe(false);

    const forget = await run(['forget-initial-password']);
    expect(forget.code).toBe(0);
    const forgotten = (await loadCredentials(work, { mode: 'builtin' })).admin;
    expect(forgotten.password).toBeUndefined();
    expect(forgotten.password_hash).toBe(rotated.password_hash);
    expect(await readFile(adminFile, 'utf8')).not.toContain('password=');
    const print = await run(['print-initial-password']);
    expect(print.code).toBe(1);
    expect(print.stdout).toBe('');
    expect(print.stderr).toContain('no password= line (the plaintext was forgotten)');
  });

  it('checks mode, owner and link count of the credential file on each use', async () => {
    for (const mode of [0o644, 0o640]) {
      await chmod(adminFile, mode);
      const result = await run(['print-initial-password']);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `svc-auth: ${adminFile}: secret file must have mode 600 (it has ${mode.toString(8)})\n`,
      );
    }
    await chmod(adminFile, 0o600);
    await link(adminFile, join(home, 'second-link'));
    expect((await run(['rotate-initial-password'])).stderr).toBe(
      `svc-auth: ${adminFile}: secret file must have exactly one hard link (it has 2)\n`,
    );
    await rm(join(home, 'second-link'));
    await rename(adminFile, join(home, 'moved'));
    await symlink(join(home, 'moved'), adminFile);
    expect((await run(['print-initial-password'])).stderr).toBe(
      `svc-auth: ${adminFile}: secret file must be a regular file (it is a symbolic link)\n`,
    );
    await rm(adminFile);
    await rename(join(home, 'moved'), adminFile);
    if (process.getuid?.() === 0) {
      await chown(adminFile, 4242, 4242);
      expect((await run(['forget-initial-password'])).stderr).toBe(
        `svc-auth: ${adminFile}: secret file must be owned by the owner of its directory (uid 0; the file is owned by uid 4242)\n`,
      );
      await chown(adminFile, 0, 0);
    }
    expect((await run(['print-initial-password'])).code).toBe(0);
  });

  it('refuses a credential file whose content breaks a rule (checked by the helper)', async () => {
    const text = await readFile(adminFile, 'utf8');
    await writeFile(adminFile, text.replace('username=admin', 'username=root'));
    const result = await run(['print-initial-password']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `svc-auth: ${adminFile}:1: username must be "admin" verbatim (the packaged admin identity)\n`,
    );
  });
});

describe('svc-auth.sh users through the administration UI', () => {
  it('add-user and delete-user fail with a reachability error when the UI is disabled', async () => {
    const add = await run(['add-user', 'user@example.org'], {
      stdin: 'pw\n',
      env: { SVC_AUTH_ADMIN_UI: 'off' },
    });
    expect(add.code).toBe(3);
    expect(add.stderr).toContain('the administration UI is disabled (SVC_AUTH_ADMIN_UI=off)');
    expect(add.stderr).toContain('unreachable');
    const del = await run(['delete-user', 'user@example.org'], { env: { SVC_AUTH_ADMIN_UI: 'off' } });
    expect(del.code).toBe(3);
    expect(del.stderr).toContain('unreachable');
  });

  it('add-user and delete-user fail with a reachability error when nothing listens', async () => {
    const port = await closedPort();
    await writeFile(join(work, 'ports.json'), JSON.stringify({ admin_ui: port }));
    const add = await run(['add-user', 'user@example.org', 'svc-viewer'], { stdin: 'pw\n' });
    expect(add.code).toBe(3);
    expect(add.stderr).toBe(
      `svc-auth: the administration UI at http://127.0.0.1:${port} is unreachable (ECONNREFUSED)\n`,
    );
    const del = await run(['delete-user', 'user@example.org'], {
      env: { SVC_AUTH_ADMIN_LISTEN: `127.0.0.1:${port}` },
    });
    expect(del.code).toBe(3);
    expect(del.stderr).toContain('unreachable (ECONNREFUSED)');
  });

  it('add-user rejects the static identities, unknown roles and external mode before any request', async () => {
    const port = await closedPort();
    const env = { SVC_AUTH_ADMIN_LISTEN: `127.0.0.1:${port}` };
    for (const email of ['admin@svc.local', 'GUEST@svc.local', 'admin']) {
      const result = await run(['add-user', email], { stdin: 'pw\n', env });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('rejects the static identities admin and guest');
    }
    const role = await run(['add-user', 'u@example.org', 'no-such-role'], { stdin: 'pw\n', env });
    expect(role.code).toBe(1);
    expect(role.stderr).toContain('role "no-such-role" does not exist in');
    const external = await run(['add-user', 'u@example.org'], {
      stdin: 'pw\n',
      env: { ...env, SVC_AUTH_MODE: 'external' },
    });
    expect(external.code).toBe(1);
    expect(external.stderr).toContain('add-user needs builtin mode');
    expect((await run(['delete-user', 'admin@svc.local'], { env })).stderr).toContain(
      'rejects the static identities',
    );
  });

  it('usage errors exit 2', async () => {
    expect((await run([])).code).toBe(2);
    expect((await run(['no-such-action'])).code).toBe(2);
    expect((await run(['add-user'])).code).toBe(2);
    expect((await run(['delete-user', 'a@b', 'c@d'])).code).toBe(2);
    expect((await run(['automation-token', 'x'])).code).toBe(2);
  });
});

describe('svc-auth.sh token actions (file checks only; grants are tested with the provider)', () => {
  it('automation-token checks the automation-client file first', async () => {
    const file = join(work, 'auth', 'secrets', 'automation-client');
    await chmod(file, 0o640);
    const result = await run(['automation-token']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`svc-auth: ${file}: secret file must have mode 600 (it has 640)\n`);
  });

  it('user-token reports an unreachable issuer (port from work/ports.json)', async () => {
    const port = await closedPort();
    await writeFile(join(work, 'ports.json'), JSON.stringify({ issuer: port }));
    const result = await run(['user-token', 'admin@svc.local'], { stdin: 'pw\n' });
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `svc-auth: the token endpoint at http://127.0.0.1:${port} is unreachable (ECONNREFUSED)\n`,
    );
  });
});
