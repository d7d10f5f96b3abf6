import { SvcError } from '@svc/protocol';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseAppDefinition } from '../model/app-definition.ts';
import { createSecretCrypter } from '../model/secret-crypter.ts';
import { AppStore, appFileName } from './app-store.ts';

const crypter = createSecretCrypter(randomBytes(32));
const app = (name: string, extra: Record<string, unknown> = {}) =>
  parseAppDefinition({ name, command: 'sleep 1', ...extra }, { now: 1_700_000_000_000 });

describe('AppStore', () => {
  let root: string;
  let dir: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-apps-'));
    dir = join(root, 'apps');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('loads an empty store from a missing directory', async () => {
    expect(await new AppStore(dir, crypter).loadAll()).toEqual({ apps: [], errors: [], migrated: [] });
  });

  it('saves, loads back and deletes, leaving no temp files', async () => {
    const store = new AppStore(dir, crypter);
    const web = app('web', { secret_env: { TOKEN: 'hunter2' }, env: { A: '1' } });
    await store.save(web);
    await store.save(app('batch'));
    await store.save({ ...web, description: 'replaced' });
    await store.close(); // deletes the pooled (empty, pre-created) temp files
    expect((await readdir(dir)).sort()).toEqual(['batch.yaml', 'web.yaml']);
    expect((await stat(join(dir, 'web.yaml'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(dir, 'web.yaml'), 'utf8')).not.toContain('hunter2');

    const loaded = await new AppStore(dir, crypter).loadAll();
    expect(loaded.errors).toEqual([]);
    expect(loaded.apps.map((a) => a.name)).toEqual(['batch', 'web']);
    expect(loaded.apps[1]).toEqual({ ...web, description: 'replaced' });

    await store.delete('web');
    await store.delete('web'); // missing is fine
    expect(await readdir(dir)).toEqual(['batch.yaml']);
  });

  it('rewrites a file of the shape before App Mesh 3.0 names atomically, once', async () => {
    await mkdir(dir, { recursive: true });
    const secret = crypter.encrypt('hunter2');
    const old = [
      'name: legacy',
      'command: sleep 1',
      'status: 0',
      'stdout_cache_num: 5',
      'start_interval_seconds: "*/5 * * * *"',
      'cron: true',
      'retention: 30',
      'behavior:',
      '  exit: standby',
      '  control:',
      '    "1": restart',
      'permission:',
      '  - bob',
      'owner: alice',
      'sec_env:',
      `  TOKEN: ${secret}`,
      'register_time: "2024-01-01T00:00:00.000Z"',
      '',
    ].join('\n');
    await writeFile(join(dir, 'legacy.yaml'), old);
    const store = new AppStore(dir, crypter);
    const first = await store.loadAll();
    expect(first.errors).toEqual([]);
    expect(first.migrated).toEqual([
      {
        file: join(dir, 'legacy.yaml'),
        fields: expect.arrayContaining([
          'status',
          'stdout_cache_num',
          'cron',
          'behavior.control',
          'permission',
        ]) as unknown,
      },
    ]);
    const def = first.apps[0]!;
    expect(def).toMatchObject({
      enabled: false,
      stdout_backup_count: 5,
      cron_schedule: '*/5 * * * *',
      stop_grace_period: { seconds: 30, text: '30' },
      behavior: { exit: 'standby', exit_code_actions: { '1': 'restart' } },
      permission: 11, // a share list cannot be expressed: others denied
      owner_principal_id: 'alice',
      secret_env: { TOKEN: 'hunter2' },
      register_time: Date.UTC(2024, 0, 1),
    });
    const text = await readFile(join(dir, 'legacy.yaml'), 'utf8');
    for (const name of [
      'status:',
      'stdout_cache_num',
      'start_interval_seconds',
      'cron:',
      'control:',
      'sec_env',
      'owner:',
    ])
      expect(text).not.toContain(name);
    expect(text).not.toContain('hunter2');
    await store.close();
    expect((await readdir(dir)).filter((f) => f.startsWith('.'))).toEqual([]);
    const second = await new AppStore(dir, crypter).loadAll();
    expect(second.migrated).toEqual([]);
    expect(second.apps[0]).toEqual(def);
  });

  it('never rewrites a bundled (trusted) file of the old shape', async () => {
    await mkdir(dir, { recursive: true });
    const old = 'name: sys\ncommand: sleep 1\nstatus: 1\nsystem: true\n';
    await writeFile(join(dir, 'sys.yaml'), old);
    const loaded = await new AppStore(dir, crypter, { trusted: true }).loadAll();
    expect(loaded.apps[0]).toMatchObject({ enabled: true, system: true });
    expect(loaded.migrated).toEqual([]);
    expect(await readFile(join(dir, 'sys.yaml'), 'utf8')).toBe(old);
  });

  it('reports a broken file and leaves it in place', async () => {
    const store = new AppStore(dir, crypter);
    await store.save(app('good'));
    await writeFile(join(dir, 'broken.yaml'), 'name: broken\ncommand: x\nstatus: 7\n');
    await writeFile(join(dir, 'renamed.yaml'), 'name: other\ncommand: x\n');
    await writeFile(join(dir, 'notes.txt'), 'ignored');
    await writeFile(join(dir, '.tmp-good.yaml.abc123'), 'partial');
    await store.close();
    const { apps, errors } = await store.loadAll();
    expect(apps.map((a) => a.name)).toEqual(['good']);
    expect(errors).toEqual([
      { file: join(dir, 'broken.yaml'), error: 'broken.yaml: status: must be 1 (enabled) or 0 (disabled)' },
      { file: join(dir, 'renamed.yaml'), error: 'renamed.yaml: name "other" does not match the file name' },
    ]);
    expect((await readdir(dir)).sort()).toEqual([
      '.tmp-good.yaml.abc123',
      'broken.yaml',
      'good.yaml',
      'notes.txt',
      'renamed.yaml',
    ]);
  });

  it('keeps saving after close and after its pooled temp files were deleted by another store', async () => {
    const store = new AppStore(dir, crypter);
    await store.save(app('one'));
    // A second store on the same directory removes "stale" pooled temps on its first save.
    const other = new AppStore(dir, crypter);
    await other.save(app('two'));
    await store.save(app('three'));
    await store.close();
    await store.save(app('four'));
    await store.close();
    await other.close();
    expect((await readdir(dir)).sort()).toEqual(['four.yaml', 'one.yaml', 'three.yaml', 'two.yaml']);
  });

  it('group commit: concurrent saves and deletes of many apps all land, the last save of an app wins', async () => {
    const store = new AppStore(dir, crypter);
    const names = Array.from({ length: 24 }, (_, i) => `g${i}`);
    const writes: Promise<void>[] = [];
    for (let round = 0; round < 5; round++)
      for (const name of names) writes.push(store.save(app(name, { description: `r${round}` })));
    writes.push(store.delete('g0'), store.delete('g1'));
    writes.push(store.save(app('g1', { description: 'back' })));
    await Promise.all(writes);
    await store.close();
    const loaded = await new AppStore(dir, crypter).loadAll();
    expect(loaded.errors).toEqual([]);
    const byName = new Map(loaded.apps.map((a) => [a.name, a.description]));
    expect(byName.has('g0')).toBe(false);
    expect(byName.get('g1')).toBe('back');
    for (const name of names.slice(2)) expect(byName.get(name)).toBe('r4');
    expect((await readdir(dir)).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('group commit: a failed write fails its own callers only', async () => {
    const store = new AppStore(dir, crypter);
    await store.save(app('ok0'));
    // A directory named like the file: the rename over it fails (EISDIR), the others do not.
    await mkdir(join(dir, 'blocked.yaml', 'child'), { recursive: true });
    const results = await Promise.allSettled([
      store.save(app('ok1')),
      store.save(app('blocked')),
      store.save(app('blocked', { description: 'coalesced' })),
      store.save(app('ok2')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    await store.close();
    const loaded = await new AppStore(dir, crypter).loadAll();
    expect(loaded.apps.map((a) => a.name)).toEqual(['ok0', 'ok1', 'ok2']);
    expect((await readdir(dir)).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('journal: an answered save survives the loss of its file (replayed from the log at the next load)', async () => {
    const store = new AppStore(dir, crypter, { journal: true });
    await store.loadAll();
    await store.save(app('kept', { description: 'v1' }));
    await store.save(app('kept', { description: 'v2' }));
    await store.save(app('gone'));
    await store.delete('gone');
    // In place when answered (renamed once the record was durable).
    expect(await readFile(join(dir, 'kept.yaml'), 'utf8')).toContain('v2');
    expect(await readdir(dir)).not.toContain('gone.yaml');
    // A power loss before the files reached the disk: the file is garbage, the unlink undone.
    await writeFile(join(dir, 'kept.yaml'), '\0\0\0');
    await writeFile(join(dir, 'gone.yaml'), 'name: gone\ncommand: sleep 1\n');
    const next = new AppStore(dir, crypter, { journal: true }); // `store` is never closed: a crash
    const loaded = await next.loadAll();
    expect(loaded.errors).toEqual([]);
    expect(loaded.apps.map((a) => [a.name, a.description])).toEqual([['kept', 'v2']]);
    await next.close();
    await store.close().catch(() => undefined);
    expect((await readdir(dir)).filter((f) => f.startsWith('.tmp'))).toEqual([]);
  });

  it('journal: a clean close leaves an empty log; the next load changes nothing', async () => {
    const store = new AppStore(dir, crypter, { journal: true });
    await store.save(app('a')); // opens the log on first use
    await store.close();
    await writeFile(join(dir, 'a.yaml'), 'name: a\ncommand: sleep 2\n'); // edited by hand after the stop
    const loaded = await new AppStore(dir, crypter, { journal: true }).loadAll();
    expect(loaded.apps.map((a) => a.command)).toEqual(['sleep 2']);
  });

  it('journal: a definition too large for the log is written in place and wins over older records', async () => {
    const store = new AppStore(dir, crypter, { journal: true });
    await store.loadAll();
    await store.save(app('big', { description: 'small' }));
    const metadata = { blob: 'x'.repeat(300 * 1024) };
    await store.save(app('big', { description: 'large', metadata }));
    const loaded = await new AppStore(dir, crypter, { journal: true }).loadAll();
    expect(loaded.apps.map((a) => a.description)).toEqual(['large']);
    await store.close().catch(() => undefined);
  });

  it('journal: a full log is reset once its files are durable; every save lands', async () => {
    const store = new AppStore(dir, crypter, { journal: true, journalBytes: 6 * 4096 });
    await store.loadAll();
    const names = Array.from({ length: 40 }, (_, i) => `full${i}`);
    for (let round = 0; round < 3; round++)
      await Promise.all(names.map((n) => store.save(app(n, { description: `r${round}` }))));
    const loaded = await new AppStore(dir, crypter, { journal: true, journalBytes: 6 * 4096 }).loadAll();
    expect(loaded.errors).toEqual([]);
    expect(loaded.apps.map((a) => a.description)).toEqual(names.map(() => 'r2'));
    await store.close().catch(() => undefined);
  });

  it('journal: the handles kept for fast renames are bounded and all closed by close()', async () => {
    const fds = (): number => readdirSync('/proc/self/fd').length;
    const before = fds();
    const store = new AppStore(dir, crypter, { journal: true });
    await store.loadAll();
    const names = Array.from({ length: 300 }, (_, i) => `h${i}`);
    await Promise.all(names.map((n) => store.save(app(n))));
    await Promise.all(names.map((n) => store.save(app(n, { description: 'again' }))));
    await store.delete('h0');
    await store.settled();
    expect(fds() - before).toBeLessThan(300 + 16); // one per file at most, before trimming
    await store.close();
    expect(fds() - before).toBeLessThanOrEqual(0);
    const reloaded = new AppStore(dir, crypter, { journal: true });
    const loaded = await reloaded.loadAll();
    await reloaded.close();
    expect(loaded.apps).toHaveLength(299);
    expect(new Set(loaded.apps.map((a) => a.description))).toEqual(new Set(['again']));
  });

  it('accepts system apps only in a trusted store', async () => {
    await new AppStore(dir, crypter, { trusted: true }).save(
      parseAppDefinition({ name: 'svc-agent', command: 'agent', system: true }, { trusted: true }),
    );
    expect((await new AppStore(dir, crypter, { trusted: true }).loadAll()).apps[0]?.system).toBe(true);
    const untrusted = await new AppStore(dir, crypter).loadAll();
    expect(untrusted.apps).toEqual([]);
    expect(untrusted.errors[0]?.error).toBe(
      'svc-agent.yaml: system: only bundled application files (apps/*.yaml) may set system',
    );
  });

  it('derives file names only from valid names', async () => {
    expect(appFileName('web.1')).toBe('web.1.yaml');
    for (const name of ['..', '.', '../x', 'a/b', '', 'x'.repeat(129)]) {
      expect(() => appFileName(name)).toThrow(SvcError);
    }
    const store = new AppStore(dir, crypter);
    await expect(store.delete('../apps')).rejects.toMatchObject({ code: 'invalid_name' });
    await expect(store.save({ ...app('ok'), name: '..' })).rejects.toMatchObject({ code: 'invalid_name' });
  });
});
