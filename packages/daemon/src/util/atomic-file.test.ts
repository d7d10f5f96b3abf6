import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
    await writeFileAtomic(file, 'x', 0o644);
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

  it('fails when the directory is missing', async () => {
    await expect(writeFileAtomic(join(dir, 'missing', 'f'), 'x')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
