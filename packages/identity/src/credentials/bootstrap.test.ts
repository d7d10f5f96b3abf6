import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  automationSecretPath,
  bootstrapCredentials,
  loadCredentials,
  readAdminPasswordFile,
} from './bootstrap.ts';
import { credentialFilePath } from './credential-file.ts';
import { CredentialError } from './errors.ts';
import { verifyPassword } from './password.ts';

let home: string;
let work: string;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-bootstrap-'));
  work = join(home, 'work');
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('bootstrap', () => {
  it('creates the secrets directory (0700) and the three files (0600) with random secrets', async () => {
    const result = await bootstrapCredentials(work, { mode: 'builtin' });
    expect(result.created).toEqual([
      'initial-admin-credentials',
      'initial-viewer-credentials',
      'automation-client',
    ]);
    expect((await stat(join(work, 'auth', 'secrets'))).mode & 0o777).toBe(0o700);
    const loaded = await loadCredentials(work, { mode: 'builtin' });
    expect(loaded.admin.password).toMatch(/^[0-9a-f]{48}$/);
    expect(loaded.viewer.password).toMatch(/^[0-9a-f]{48}$/);
    expect(loaded.viewer.password).not.toBe(loaded.admin.password);
    expect(loaded.admin.password_hash).toMatch(/^\$2b\$10\$/);
    expect(await verifyPassword(loaded.admin.password!, loaded.admin.password_hash)).toBe(true);
    expect(loaded.automationSecret).toMatch(/^[0-9a-f]{64}$/);
    for (const file of [
      credentialFilePath(work, 'admin'),
      credentialFilePath(work, 'guest'),
      automationSecretPath(work),
    ])
      expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('leaves existing files alone on the next start', async () => {
    await bootstrapCredentials(work, { mode: 'builtin' });
    const before = await readFile(credentialFilePath(work, 'admin'), 'utf8');
    expect((await bootstrapCredentials(work, { mode: 'builtin' })).created).toEqual([]);
    expect(await readFile(credentialFilePath(work, 'admin'), 'utf8')).toBe(before);
  });

  it('uses SVC_ADMIN_PASSWORD_FILE only while no admin credential exists', async () => {
    const pwFile = join(home, 'admin-password');
    await writeFile(pwFile, 'from-the-file\n');
    await bootstrapCredentials(work, { mode: 'builtin', adminPasswordFile: pwFile });
    const first = await loadCredentials(work, { mode: 'builtin' });
    expect(first.admin.password).toBe('from-the-file');
    expect(await verifyPassword('from-the-file', first.admin.password_hash)).toBe(true);
    expect(first.viewer.password).toMatch(/^[0-9a-f]{48}$/);
    await writeFile(pwFile, 'changed\n');
    await bootstrapCredentials(work, { mode: 'builtin', adminPasswordFile: pwFile });
    expect((await loadCredentials(work, { mode: 'builtin' })).admin.password).toBe('from-the-file');
  });

  it('trims exactly one trailing newline of the password file and enforces 72 bytes', async () => {
    const pwFile = join(home, 'pw');
    await writeFile(pwFile, 'two-newlines\n\n');
    await expect(readAdminPasswordFile(pwFile)).rejects.toThrow('password must be one line');
    await writeFile(pwFile, 'crlf\r\n');
    expect(await readAdminPasswordFile(pwFile)).toBe('crlf');
    await writeFile(pwFile, 'x'.repeat(72));
    expect(await readAdminPasswordFile(pwFile)).toHaveLength(72);
    await writeFile(pwFile, 'y'.repeat(73) + '\n');
    const error = await readAdminPasswordFile(pwFile).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CredentialError);
    expect((error as Error).message).toBe(
      `${pwFile}: SVC_ADMIN_PASSWORD_FILE: password must be at most 72 bytes (it has 73)`,
    );
    // A failing password file creates no admin credential.
    await expect(bootstrapCredentials(work, { mode: 'builtin', adminPasswordFile: pwFile })).rejects.toThrow(
      /SVC_ADMIN_PASSWORD_FILE/,
    );
    await expect(stat(credentialFilePath(work, 'admin'))).rejects.toThrow(/ENOENT/);
  });

  it('does nothing in external mode (the password file is ignored) and loads nothing', async () => {
    const pwFile = join(home, 'pw');
    await writeFile(pwFile, 'ignored\n');
    expect(
      (await bootstrapCredentials(work, { mode: 'external', adminPasswordFile: pwFile })).created,
    ).toEqual([]);
    await expect(stat(join(work, 'auth', 'secrets', 'initial-admin-credentials'))).rejects.toThrow(/ENOENT/);
    await expect(loadCredentials(work, { mode: 'external' })).rejects.toThrow(/builtin mode only/);
  });

  it('loadCredentials names the file and the rule of the first violation', async () => {
    await bootstrapCredentials(work, { mode: 'builtin' });
    const viewer = credentialFilePath(work, 'guest');
    await chmod(viewer, 0o640);
    await expect(loadCredentials(work, { mode: 'builtin' })).rejects.toThrow(
      `${viewer}: secret file must have mode 600 (it has 640)`,
    );
    await chmod(viewer, 0o600);
    const automation = automationSecretPath(work);
    await writeFile(automation, 'short\n');
    await expect(loadCredentials(work, { mode: 'builtin' })).rejects.toThrow(
      `${automation}:1: automation-client must hold one line of 32 to 512 characters`,
    );
    await rm(automation);
    await expect(loadCredentials(work, { mode: 'builtin' })).rejects.toThrow(
      `${automation}: secret file is missing`,
    );
  });
});
