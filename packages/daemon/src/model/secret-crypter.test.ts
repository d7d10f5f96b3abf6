import { randomBytes } from 'node:crypto';
import { chmod, link, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretCrypter, loadOrCreateMasterKey } from './secret-crypter.ts';

describe('createSecretCrypter', () => {
  const crypter = createSecretCrypter(randomBytes(32));

  it('round-trips with a fresh IV per value', () => {
    const a = crypter.encrypt('hunter2');
    const b = crypter.encrypt('hunter2');
    expect(a).toMatch(/^enc:v1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(crypter.decrypt(a)).toBe('hunter2');
    expect(crypter.decrypt(crypter.encrypt(''))).toBe('');
    expect(crypter.decrypt(crypter.encrypt('ünïcødé ✓'))).toBe('ünïcødé ✓');
  });

  it('detects tampering', () => {
    const token = crypter.encrypt('secret value');
    const raw = Buffer.from(token.slice('enc:v1:'.length), 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => crypter.decrypt('enc:v1:' + raw.toString('base64'))).toThrow(
      'encrypted value does not decrypt with this secret-master-key (wrong key or corrupted)',
    );
    expect(() => crypter.decrypt('plain')).toThrow('encrypted value must start with "enc:v1:"');
  });

  it('needs a 32-byte key', () => {
    expect(() => createSecretCrypter(randomBytes(16))).toThrow('secret master key must be 32 bytes');
  });
});

describe('loadOrCreateMasterKey', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-key-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a 0600 key in a 0700 directory and loads the same key again', async () => {
    const file = join(dir, 'auth', 'secrets', 'secret-master-key');
    const first = await loadOrCreateMasterKey(file);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'auth', 'secrets'))).mode & 0o777).toBe(0o700);
    expect(await readFile(file, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    const second = await loadOrCreateMasterKey(file);
    expect(second.decrypt(first.encrypt('x'))).toBe('x');
  });

  it('refuses group or other access without printing the key', async () => {
    const file = join(dir, 'secret-master-key');
    await loadOrCreateMasterKey(file);
    const key = (await readFile(file, 'utf8')).trim();
    await chmod(file, 0o640);
    const error = await loadOrCreateMasterKey(file).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      `${file}: secret-master-key must not be accessible by group or others (mode 640, expected 600)`,
    );
    expect((error as Error).message).not.toContain(key);
  });

  it('refuses a symlink, a hard-linked file and bad content', async () => {
    const real = join(dir, 'real');
    await writeFile(real, randomBytes(32).toString('hex'), { mode: 0o600 });
    const linked = join(dir, 'linked');
    await symlink(real, linked);
    await expect(loadOrCreateMasterKey(linked)).rejects.toThrow(
      `${linked}: secret-master-key must be a regular file (not a link or directory)`,
    );
    const hard = join(dir, 'hard');
    await link(real, hard);
    await expect(loadOrCreateMasterKey(hard)).rejects.toThrow(
      `${hard}: secret-master-key must have exactly one hard link (has 2)`,
    );
    const garbage = join(dir, 'garbage');
    await writeFile(garbage, 'not-hex', { mode: 0o600 });
    await expect(loadOrCreateMasterKey(garbage)).rejects.toThrow(
      `${garbage}: secret-master-key must contain 64 hex characters`,
    );
  });
});
