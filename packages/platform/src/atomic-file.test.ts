import { chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './atomic-file.ts';

describe('writeFileAtomic', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-atomic-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes new content, replaces old content and leaves no temp file', async () => {
    const file = join(dir, 'a.yaml');
    await writeFileAtomic(file, 'first');
    await writeFileAtomic(file, new TextEncoder().encode('second'));
    expect(await readFile(file, 'utf8')).toBe('second');
    expect(await readdir(dir)).toEqual(['a.yaml']);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('applies the requested mode regardless of umask', async () => {
    const file = join(dir, 'b');
    await writeFileAtomic(file, 'x', { mode: 0o644 });
    expect((await stat(file)).mode & 0o777).toBe(0o644);
  });

  it('writes large content intact', async () => {
    const file = join(dir, 'big');
    const data = '0123456789abcdef'.repeat(1 << 16);
    await writeFileAtomic(file, data);
    expect(await readFile(file, 'utf8')).toBe(data);
  });

  it('leaves the old file and no temp file when the rename fails', async () => {
    await writeFile(join(dir, 'other'), 'untouched');
    // Renaming a file over a non-empty directory fails (EISDIR / ENOTEMPTY).
    const blocked = join(dir, 'blocked');
    await mkdir(join(blocked, 'child'), { recursive: true });
    await expect(writeFileAtomic(blocked, 'data')).rejects.toThrow();
    expect((await readdir(dir)).sort()).toEqual(['blocked', 'other']);
    expect(await readdir(blocked)).toEqual(['child']);
    expect(await readFile(join(dir, 'other'), 'utf8')).toBe('untouched');
  });

  it('creates only when exclusive: an existing file is left alone and false is returned', async () => {
    const file = join(dir, 'c');
    expect(await writeFileAtomic(file, 'first', { exclusive: true })).toBe(true);
    expect(await writeFileAtomic(file, 'second', { exclusive: true })).toBe(false);
    expect(await readFile(file, 'utf8')).toBe('first');
    expect(await readdir(dir)).toEqual(['c']);
  });

  // Only root can give a file away; elsewhere there is nothing to check.
  it.skipIf(process.getuid?.() !== 0)(
    'as root, gives the file to the directory owner only when asked (ownerFromDirectory)',
    async () => {
      const owned = join(dir, 'owned');
      await mkdir(owned);
      await chown(owned, 4244, 4245);
      await writeFileAtomic(join(owned, 'kept'), 'x', { ownerFromDirectory: true });
      await writeFileAtomic(join(owned, 'root'), 'x');
      expect(await stat(join(owned, 'kept'))).toMatchObject({ uid: 4244, gid: 4245 });
      expect(await stat(join(owned, 'root'))).toMatchObject({ uid: 0, gid: 0 });
    },
  );

  it('fails when the directory is missing', async () => {
    await expect(writeFileAtomic(join(dir, 'missing', 'f'), 'x')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
