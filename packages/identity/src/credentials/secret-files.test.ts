import { chmod, chown, link, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CredentialError } from './errors.ts';
import { checkSecretFile, checkSecretStats, readSecretFile } from './secret-files.ts';

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-secret-files-'));
  file = join(dir, 'initial-admin-credentials');
  await writeFile(file, 'content-not-to-be-shown\n', { mode: 0o600 });
  await chmod(file, 0o600);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function failure(promise: Promise<unknown>): Promise<CredentialError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CredentialError);
  const credentialError = error as CredentialError;
  expect(credentialError.message).toContain(file);
  expect(credentialError.message).not.toContain('content-not-to-be-shown');
  return credentialError;
}

describe('secret files', () => {
  it('accepts a regular 0600 file owned by the directory owner with one link, and reads it', async () => {
    await checkSecretFile(file);
    expect(await readSecretFile(file)).toBe('content-not-to-be-shown\n');
  });

  it.each([0o644, 0o640, 0o700, 0o400, 0o660, 0o4600])('refuses mode %o', async (mode) => {
    await chmod(file, mode);
    const error = await failure(readSecretFile(file));
    expect(error.rule).toBe(`secret file must have mode 600 (it has ${mode.toString(8).padStart(3, '0')})`);
  });

  it('refuses a file owned by another user than the directory owner', async () => {
    const dirUid = (await stat(dir)).uid;
    if (process.getuid?.() === 0) {
      await chown(file, dirUid + 4242, 0);
      const error = await failure(readSecretFile(file));
      expect(error.rule).toContain(`owned by the owner of its directory (uid ${dirUid}`);
      expect(error.rule).toContain(`owned by uid ${dirUid + 4242}`);
    }
    // Independent of privileges: the rule on the stats themselves.
    const info = await stat(file);
    expect(() => checkSecretStats(file, info, info.uid + 1)).toThrow(/owned by the owner of its directory/);
  });

  it('refuses a file whose directory is owned by someone else (as root: chown the directory)', async () => {
    if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0);
    await chown(dir, 4243, 4243);
    const error = await failure(checkSecretFile(file));
    expect(error.rule).toContain('(uid 4243; the file is owned by uid 0)');
  });

  it('refuses a file with two hard links', async () => {
    await link(file, join(dir, 'copy'));
    const error = await failure(readSecretFile(file));
    expect(error.rule).toBe('secret file must have exactly one hard link (it has 2)');
  });

  it('refuses a symbolic link, even to a valid file', async () => {
    const target = join(dir, 'target');
    await writeFile(target, 'x\n', { mode: 0o600 });
    await rm(file);
    await symlink(target, file);
    const error = await failure(readSecretFile(file));
    expect(error.rule).toBe('secret file must be a regular file (it is a symbolic link)');
  });

  it('refuses a directory and reports a missing file', async () => {
    await rm(file);
    await mkdir(file, { mode: 0o600 });
    expect((await failure(readSecretFile(file))).rule).toBe(
      'secret file must be a regular file (it is a directory)',
    );
    await rm(file, { recursive: true });
    expect((await failure(readSecretFile(file))).rule).toBe('secret file is missing');
  });
});
