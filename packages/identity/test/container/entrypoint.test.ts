// The container entrypoint, run directly with /bin/sh (the image itself cannot be built here).
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ENTRYPOINT = resolve(import.meta.dirname, '../../../../docker/entrypoint.sh');
const BUNDLED = resolve(import.meta.dirname, '../../../../apps/authadmin.yaml');

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-entrypoint-'));
  await mkdir(join(home, 'apps'));
  await writeFile(join(home, 'apps', 'authadmin.yaml'), await readFile(BUNDLED));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

async function entrypoint(env: Record<string, string>, ...args: string[]) {
  return run('/bin/sh', [ENTRYPOINT, ...args], {
    env: { PATH: process.env['PATH'], SVC_HOME: home, ...env },
  });
}

const statusOf = async (): Promise<string[]> =>
  (await readFile(join(home, 'apps', 'authadmin.yaml'), 'utf8'))
    .split('\n')
    .filter((l) => l.startsWith('status:') || l.startsWith('enabled:'));

describe('docker/entrypoint.sh', () => {
  it('disables the bundled admin UI app with SVC_AUTH_ADMIN_UI=off and re-enables it with on', async () => {
    const off = await entrypoint({ SVC_AUTH_ADMIN_UI: 'off' }, 'echo', 'started');
    expect(off.stdout).toBe('started\n');
    expect(await statusOf()).toEqual(['enabled: false']);
    const text = await readFile(join(home, 'apps', 'authadmin.yaml'), 'utf8');
    expect(text).toContain('system: true'); // the rest of the definition is kept
    await entrypoint({ SVC_AUTH_ADMIN_UI: 'off' }, 'true');
    expect(await statusOf()).toEqual(['enabled: false']); // idempotent: one status line
    await entrypoint({}, 'true');
    expect(await statusOf()).toEqual(['enabled: true']);
  });

  it('refuses an unknown switch value and an unreadable password file', async () => {
    await expect(entrypoint({ SVC_AUTH_ADMIN_UI: 'maybe' }, 'true')).rejects.toMatchObject({ code: 2 });
    const failed = entrypoint({ SVC_ADMIN_PASSWORD_FILE: join(home, 'missing') }, 'true');
    await expect(failed).rejects.toMatchObject({ code: 1 });
    await expect(failed).rejects.toThrow(/SVC_ADMIN_PASSWORD_FILE names a file that cannot be read/);
  });

  it('passes a readable password file on to svcd without printing it', async () => {
    const file = join(home, 'admin-password');
    await writeFile(file, 'correct horse battery staple\n', { mode: 0o600 });
    const r = await entrypoint(
      { SVC_ADMIN_PASSWORD_FILE: file },
      '/bin/sh',
      '-c',
      'echo "$SVC_ADMIN_PASSWORD_FILE"',
    );
    expect(r.stdout.trim()).toBe(file);
    expect(r.stdout + r.stderr).not.toContain('correct horse');
  });

  it('declares uid/gid 482 in the image', async () => {
    const dockerfile = await readFile(resolve(import.meta.dirname, '../../../../docker/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/--uid 482 --gid 482/);
    expect(dockerfile).toMatch(/^USER 482:482$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/opt\/svc\/docker\/entrypoint\.sh"\]$/m);
  });
});
