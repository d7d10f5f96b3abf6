// The storage engine alone (no definitions): real files in a temp directory. The store's own tests
// (supervisor/app-store.test.ts) cover it further through AppStore.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOURNAL_FILE, JournaledDir } from './journaled-dir.ts';

const txt = (name: string): boolean => /^[a-z0-9]+\.txt$/.test(name);

describe('JournaledDir', () => {
  let dir: string;
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'svc-jdir-')), 'files');
  });
  afterEach(async () => {
    await rm(join(dir, '..'), { recursive: true, force: true });
  });

  it('without a journal: puts and deletes land in place; loadAll lists every entry, sorted', async () => {
    const files = new JournaledDir(dir, { isFileName: txt });
    expect(await files.loadAll()).toEqual({ entries: [], problems: [] }); // missing directory
    await Promise.all([files.put('b.txt', Buffer.from('B')), files.put('a.txt', Buffer.from('A1'))]);
    await files.put('a.txt', Buffer.from('A2'));
    await files.put('c.txt', Buffer.from('C'));
    await files.delete('c.txt');
    await files.delete('c.txt'); // missing is fine
    await files.close(); // the pooled temp files go
    const { entries, problems } = await files.loadAll();
    expect(problems).toEqual([]);
    expect(entries.map((e) => e.name)).toEqual(['a.txt', 'b.txt']);
    expect((await entries[0]!.read()).toString()).toBe('A2');
    expect(entries[0]!.path).toBe(join(dir, 'a.txt'));
    expect(await readdir(dir)).not.toContain(JOURNAL_FILE);
  });

  it('journaled: an answered put is in place, and replayed after the loss of its file', async () => {
    const files = new JournaledDir(dir, { journal: true, isFileName: txt });
    await files.loadAll();
    await files.put('kept.txt', Buffer.from('v1'));
    await files.put('kept.txt', Buffer.from('v2'));
    expect(await readFile(join(dir, 'kept.txt'), 'utf8')).toBe('v2');
    await writeFile(join(dir, 'kept.txt'), 'garbage'); // as after a power loss; `files` never closed
    const next = new JournaledDir(dir, { journal: true, isFileName: txt });
    const loaded = await next.loadAll();
    expect(loaded.problems).toEqual([]);
    expect(await readFile(join(dir, 'kept.txt'), 'utf8')).toBe('v2');
    await next.close();
    await files.close().catch(() => undefined);
  });

  it('journaled: a record naming a file the caller does not accept is never replayed', async () => {
    // Written by a directory that accepted any name (as a forged or foreign log would hold)...
    const loose = new JournaledDir(dir, { journal: true, isFileName: () => true });
    await loose.loadAll();
    await loose.put('evil.sh', Buffer.from('x'));
    await loose.put('ok.txt', Buffer.from('y'));
    await rm(join(dir, 'evil.sh'));
    await rm(join(dir, 'ok.txt'));
    // ...replayed by one that accepts only `*.txt`: the other record is skipped.
    const strict = new JournaledDir(dir, { journal: true, isFileName: txt });
    await strict.loadAll();
    const names = await readdir(dir);
    expect(names).toContain('ok.txt');
    expect(names).not.toContain('evil.sh');
    await strict.close();
    await loose.close().catch(() => undefined);
  });
});
