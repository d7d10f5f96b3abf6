import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SvcError } from '@svc/protocol';
import {
  PolicyFileError,
  PolicyStore,
  checkPolicyRecords,
  type PolicyAuthority,
  type PolicyDocument,
} from './policy-store.ts';

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-policy-'));
  file = join(dir, 'auth', 'policy.yaml');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function onDisk(): Promise<{ principals: Record<string, unknown>; roles: Record<string, unknown> }> {
  return parse(await readFile(file, 'utf8')) as {
    principals: Record<string, unknown>;
    roles: Record<string, unknown>;
  };
}

async function writePolicy(text: string): Promise<void> {
  await PolicyStore.open(file); // creates the directory
  await writeFile(file, text);
}

const SEED = { admin: ['svc-admin'], guest: ['svc-viewer'], 'client:svc-automation': ['svc-maintenance'] };

describe('PolicyStore.open', () => {
  it('creates the file with the seed, mode 0600', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    expect(store.getPrincipal('admin')).toEqual({ id: 'admin', roles: ['svc-admin'], status: 'active' });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await onDisk()).principals).toEqual({
      admin: { roles: ['svc-admin'], status: 'active' },
      'client:svc-automation': { roles: ['svc-maintenance'], status: 'active' },
      guest: { roles: ['svc-viewer'], status: 'active' },
    });
  });

  it('never overrides or revives an existing record with the seed', async () => {
    await writePolicy('principals:\n  admin: { roles: [svc-viewer], status: tombstoned }\n');
    const store = await PolicyStore.open(file, { seed: SEED });
    expect(store.getPrincipal('admin')).toEqual({ id: 'admin', roles: ['svc-viewer'], status: 'tombstoned' });
    expect(store.getPrincipal('guest')?.roles).toEqual(['svc-viewer']);
  });

  it('reads a hand-written file with custom roles and defaults', async () => {
    await writePolicy(
      [
        'principals:',
        '  alice: { roles: [deployer, svc-viewer] }',
        '  bob: {}',
        '  "client:ci": { roles: [deployer], status: active }',
        'roles:',
        '  deployer: [app-reg, app-control, app-reg]',
        '',
      ].join('\n'),
    );
    const store = await PolicyStore.open(file);
    expect(store.getPrincipal('alice')).toEqual({
      id: 'alice',
      roles: ['deployer', 'svc-viewer'],
      status: 'active',
    });
    expect(store.getPrincipal('bob')).toEqual({ id: 'bob', roles: [], status: 'active' });
    expect(store.listRoles()['deployer']).toEqual(['app-reg', 'app-control']);
    const alice = await store.resolve('alice', 123);
    expect([...alice.permissions].sort()).toEqual(
      [
        'app-reg',
        'app-control',
        'app-view-all',
        'app-view',
        'app-output-view',
        'config-view',
        'host-resource-view',
        'label-view',
        'role-view',
      ].sort(),
    );
  });

  it('accepts an empty file as an empty policy', async () => {
    await writePolicy('');
    const store = await PolicyStore.open(file);
    expect(store.listPrincipals()).toEqual([]);
  });

  it.each([
    ['a list at the top', '- a\n- b\n', 'top level: must be a map'],
    ['a scalar at the top', 'hello\n', 'top level: must be a map'],
    ['an unknown top-level key', 'principal:\n  alice: {}\n', 'principal: unknown key'],
    ['principals not a map', 'principals: [alice]\n', 'principals: must be a map'],
    [
      'a bad status',
      'principals:\n  alice: { roles: [], status: enabled }\n',
      'principals."alice".status: must be',
    ],
    [
      'roles not a list',
      'principals:\n  alice: { roles: svc-admin }\n',
      'principals."alice".roles: must be a list',
    ],
    ['an unknown role', 'principals:\n  alice: { roles: [superuser] }\n', 'unknown role "superuser"'],
    [
      'a typo in a record key',
      'principals:\n  alice: { role: [svc-admin] }\n',
      'principals."alice".role: unknown key',
    ],
    ['a record that is a string', 'principals:\n  alice: admin\n', 'principals."alice": must be a map'],
    [
      'an unknown permission',
      'roles:\n  ops: [app-view, app-nuke]\n',
      'roles.ops: unknown permission "app-nuke"',
    ],
    [
      'a redefined built-in role',
      'roles:\n  svc-viewer: [app-view]\n',
      'roles.svc-viewer: is a built-in role',
    ],
    ['a role that is not a list', 'roles:\n  ops: app-view\n', 'roles.ops: must be a list'],
    ['a bad role name', 'roles:\n  "ops team": [app-view]\n', 'role names match'],
    ['duplicate keys', 'principals:\n  alice: {}\n  alice: {}\n', 'not valid YAML'],
    ['broken YAML', 'principals: {alice: [\n', 'not valid YAML'],
  ])('refuses %s with a precise error', async (_name, text, message) => {
    await writePolicy(text);
    const error = await PolicyStore.open(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PolicyFileError);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain(message);
  });

  it('allows a tombstoned record to keep a role that no longer exists', async () => {
    await writePolicy('principals:\n  old: { roles: [gone], status: tombstoned }\n');
    const store = await PolicyStore.open(file);
    const old = await store.resolve('old', 1);
    expect(old.status).toBe('tombstoned');
    expect(old.permissions.size).toBe(0);
  });
});

describe('PolicyStore changes', () => {
  it('resolve creates a role-less active record on first sight and persists it', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const p = await store.resolve('new-user', 1700000000);
    expect(p).toMatchObject({ id: 'new-user', roles: [], status: 'active', expiresAt: 1700000000 });
    expect(p.permissions.size).toBe(0);
    expect((await onDisk()).principals['new-user']).toEqual({ roles: [], status: 'active' });

    const admin = await store.resolve('admin', 1);
    expect(admin.permissions.has('principal-set')).toBe(true);
  });

  it('resolveKnown: undefined without a record; one object per record, roles and expiry; a change makes a new one', async () => {
    const store = await PolicyStore.open(file);
    expect(store.resolveKnown('dev', 1)).toBeUndefined();
    await store.setRole('builder', ['app-view']);
    await store.setRoles('dev', ['builder']);
    const first = store.resolveKnown('dev', 1)!;
    expect([...first.permissions]).toEqual(['app-view']);
    expect(store.resolveKnown('dev', 1)).toBe(first);
    expect(await store.resolve('dev', 1)).toBe(first);
    expect(store.resolveKnown('dev', 2)).toMatchObject({ expiresAt: 2 });
    // The role's permissions change: the record is the same, the roles table is not.
    await store.setRole('builder', ['app-view', 'app-reg']);
    expect([...store.resolveKnown('dev', 2)!.permissions].sort()).toEqual(['app-reg', 'app-view']);
    await store.setRoles('dev', []);
    expect(store.resolveKnown('dev', 2)!.permissions.size).toBe(0);
    await store.tombstone('dev');
    expect(store.resolveKnown('dev', 2)).toMatchObject({ status: 'tombstoned' });
  });

  it('concurrent first sights of one principal write one record', async () => {
    const store = await PolicyStore.open(file);
    const all = await Promise.all(Array.from({ length: 20 }, () => store.resolve('same', 1)));
    expect(all.every((p) => p.id === 'same')).toBe(true);
    expect(store.listPrincipals()).toEqual([{ id: 'same', roles: [], status: 'active' }]);
  });

  it('serializes concurrent setRoles: every change lands, memory equals disk', async () => {
    const store = await PolicyStore.open(file);
    const ids = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    await Promise.all(ids.map((id, i) => store.setRoles(id, i % 2 === 0 ? ['svc-viewer'] : ['svc-admin'])));
    const disk = await onDisk();
    expect(Object.keys(disk.principals)).toHaveLength(40);
    for (const record of store.listPrincipals()) {
      expect(disk.principals[record.id]).toEqual({ roles: record.roles, status: 'active' });
    }
    // Last writer wins for the same principal, in call order.
    await Promise.all([store.setRoles('x', ['svc-viewer']), store.setRoles('x', ['svc-admin'])]);
    expect(store.getPrincipal('x')?.roles).toEqual(['svc-admin']);
    expect((await onDisk()).principals['x']).toEqual({ roles: ['svc-admin'], status: 'active' });
    // No temp files are left behind.
    expect(await readdir(dirname(file))).toEqual(['policy.yaml']);
  });

  it('setRoles refuses an unknown role without changing anything', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const before = await readFile(file, 'utf8');
    await expect(store.setRoles('guest', ['svc-viewer', 'root'])).rejects.toMatchObject({
      code: 'bad_request',
      message: 'unknown role "root"',
    });
    expect(store.getPrincipal('guest')?.roles).toEqual(['svc-viewer']);
    expect(await readFile(file, 'utf8')).toBe(before);
  });

  it('tombstone keeps the record and its roles; resolve reports it; setRoles reinstates', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    await store.tombstone('guest');
    const guest = await store.resolve('guest', 1);
    expect(guest.status).toBe('tombstoned');
    expect(guest.roles).toEqual(['svc-viewer']);
    expect(guest.permissions.size).toBe(0);
    expect((await onDisk()).principals['guest']).toEqual({ roles: ['svc-viewer'], status: 'tombstoned' });
    await expect(store.tombstone('guest')).resolves.toMatchObject({ status: 'tombstoned' });
    await expect(store.tombstone('nobody')).rejects.toMatchObject({ code: 'not_found' });

    await store.setRoles('guest', ['svc-viewer']);
    expect((await store.resolve('guest', 1)).permissions.has('app-view')).toBe(true);
  });

  it('custom roles: set, use, refuse built-ins and unknown permissions, delete when unused', async () => {
    const store = await PolicyStore.open(file);
    await store.setRole('deployer', ['app-reg', 'app-view']);
    await store.setRoles('alice', ['deployer']);
    expect((await store.resolve('alice', 1)).permissions.has('app-reg')).toBe(true);

    await store.setRole('deployer', ['app-view']);
    expect((await store.resolve('alice', 1)).permissions.has('app-reg')).toBe(false);
    expect((await onDisk()).roles).toEqual({ deployer: ['app-view'] });

    await expect(store.setRole('svc-admin', [])).rejects.toMatchObject({ code: 'bad_request' });
    await expect(store.deleteRole('svc-viewer')).rejects.toMatchObject({ code: 'bad_request' });
    await expect(store.setRole('ops', ['app-nuke'])).rejects.toMatchObject({
      code: 'bad_request',
      message: 'unknown permission "app-nuke"',
    });
    await expect(store.setRole('bad name', ['app-view'])).rejects.toBeInstanceOf(SvcError);
    await expect(store.deleteRole('deployer')).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.deleteRole('missing')).rejects.toMatchObject({ code: 'not_found' });

    await store.setRoles('alice', []);
    await store.deleteRole('deployer');
    expect(store.listRoles()['deployer']).toBeUndefined();
    expect(Object.keys(store.listRoles())).toEqual(['svc-admin', 'svc-maintenance', 'svc-viewer']);
  });

  it('adopts a binding the operator wrote while running, on the principal’s first request', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const text = await readFile(file, 'utf8');
    await writeFile(
      `${file}.new`,
      text.replace('principals:\n', 'principals:\n  carol:\n    roles: [svc-viewer]\n'),
    );
    const { rename } = await import('node:fs/promises');
    await rename(`${file}.new`, file); // as the helper script does: temp file + rename
    const carol = await store.resolve('carol', 1);
    expect(carol.roles).toEqual(['svc-viewer']);
    expect(store.getPrincipal('admin')?.roles).toEqual(['svc-admin']);
  });

  it('refuses changes while an operator edit left the file invalid, and does not overwrite it', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    await writeFile(file, 'principals: [broken\n');
    await expect(store.setRoles('dave', ['svc-viewer'])).rejects.toMatchObject({ code: 'internal' });
    expect(await readFile(file, 'utf8')).toBe('principals: [broken\n');
    // Known principals still resolve from memory.
    expect((await store.resolve('admin', 1)).roles).toEqual(['svc-admin']);
  });

  it('a failed write leaves memory and disk unchanged, and does not poison the queue', async () => {
    let failNext = false;
    const { writeFileAtomic } = await import('@svc/platform/atomic-file');
    const store = await PolicyStore.open(file, {
      seed: SEED,
      writeFile: async (path, data, mode) => {
        if (failNext) {
          failNext = false;
          throw new Error('ENOSPC: no space left on device');
        }
        await writeFileAtomic(path, data, { mode });
      },
    });
    const before = await readFile(file, 'utf8');
    failNext = true;
    await expect(store.setRoles('erin', ['svc-viewer'])).rejects.toThrow('ENOSPC');
    expect(store.getPrincipal('erin')).toBeUndefined();
    expect(await readFile(file, 'utf8')).toBe(before);

    await store.setRoles('erin', ['svc-viewer']);
    expect((await onDisk()).principals['erin']).toEqual({ roles: ['svc-viewer'], status: 'active' });
  });

  it('readers never see a partial file while changes are written', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    let writing = true;
    const writes = Promise.all(
      Array.from({ length: 60 }, (_, i) => store.setRoles(`p${i}`, ['svc-viewer'])),
    ).finally(() => {
      writing = false;
    });
    let reads = 0;
    while (writing) {
      const text = await readFile(file, 'utf8');
      const doc = parse(text) as { principals: Record<string, unknown> };
      expect(doc.principals['admin']).toEqual({ roles: ['svc-admin'], status: 'active' });
      reads += 1;
    }
    await writes;
    expect(reads).toBeGreaterThan(0);
    expect(Object.keys((await onDisk()).principals)).toHaveLength(63);
  });
});

function dirname(path: string): string {
  return path.slice(0, path.lastIndexOf('/'));
}

describe('execution_user in principal records', () => {
  it('reads, keeps and writes execution_user; setPrincipal changes only what it is given', async () => {
    await writePolicy('principals:\n  alice:\n    roles: [svc-viewer]\n    execution_user: alice_os\n');
    const store = await PolicyStore.open(file);
    expect(store.getPrincipal('alice')).toEqual({
      id: 'alice',
      roles: ['svc-viewer'],
      status: 'active',
      execution_user: 'alice_os',
    });
    expect((await store.resolve('alice', 1)).executionUser).toBe('alice_os');
    await store.setRoles('alice', ['svc-maintenance']);
    expect(store.getPrincipal('alice')?.execution_user).toBe('alice_os');
    await store.setPrincipal('alice', { executionUser: 'other' });
    expect(store.getPrincipal('alice')?.roles).toEqual(['svc-maintenance']);
    expect((await onDisk()).principals['alice']).toEqual({
      roles: ['svc-maintenance'],
      status: 'active',
      execution_user: 'other',
    });
    await store.tombstone('alice');
    expect(store.getPrincipal('alice')?.execution_user).toBe('other');
    await store.setPrincipal('alice', { executionUser: null });
    expect(store.getPrincipal('alice')).toEqual({
      id: 'alice',
      roles: ['svc-maintenance'],
      status: 'active',
    });
  });

  it('refuses a malformed execution_user in the file and through setPrincipal', async () => {
    for (const bad of ['"../x"', '42', '[root]', '"a b"', `"${'x'.repeat(40)}"`]) {
      await rm(file, { force: true });
      await writePolicy(`principals:\n  alice:\n    roles: []\n    execution_user: ${bad}\n`);
      await expect(PolicyStore.open(file), bad).rejects.toBeInstanceOf(PolicyFileError);
    }
    await rm(file, { force: true });
    const store = await PolicyStore.open(file);
    await expect(store.setPrincipal('bob', { executionUser: '-rf' })).rejects.toBeInstanceOf(SvcError);
  });
});

describe('permission names of earlier releases', () => {
  it('reads principal-view as principal-list and drops the cluster-app-* pair', async () => {
    await writePolicy(
      'principals:\n  ops: { roles: [auditor] }\nroles:\n  auditor: [principal-view, cluster-app-view, cluster-app-reg, app-view]\n',
    );
    const store = await PolicyStore.open(file);
    expect(store.listRoles()['auditor']).toEqual(['principal-list', 'app-view']);
    const ops = await store.resolve('ops', 0);
    expect([...ops.permissions].sort()).toEqual(['app-view', 'principal-list']);
  });

  it('still refuses names that never existed', async () => {
    await writePolicy('roles:\n  typo: [principal-veiw]\n');
    await expect(PolicyStore.open(file)).rejects.toThrow(PolicyFileError);
  });
});

describe('onTombstone', () => {
  it('names each principal once when it becomes tombstoned, by DELETE or by an adopted file edit', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const seen: string[] = [];
    const stop = store.onTombstone((id) => seen.push(id));
    await store.tombstone('guest');
    await store.tombstone('guest'); // idempotent: no second notice
    expect(seen).toEqual(['guest']);
    // An operator's edit that tombstones admin is adopted with the next change.
    const text = (await readFile(file, 'utf8')).replace(
      /admin:\n(\s+)roles:\n(\s+)- svc-admin\n(\s+)status: active/,
      'admin:\n$1roles:\n$2- svc-admin\n$3status: tombstoned',
    );
    expect(text).toContain('status: tombstoned');
    await writeFile(file, text);
    await store.setRoles('someone', ['svc-viewer']);
    expect(seen).toEqual(['guest', 'admin']);
    stop();
    await store.tombstone('someone');
    expect(seen).toEqual(['guest', 'admin']);
  });
});

/** The registry's in-memory twin: one document, changed atomically; can be made unreachable. */
function memoryAuthority(initial: PolicyDocument = { roles: {}, principals: {} }): PolicyAuthority & {
  document: PolicyDocument;
  down: boolean;
  commits: number;
} {
  const twin = {
    document: initial,
    down: false,
    commits: 0,
    update(
      change: (current: PolicyDocument) => PolicyDocument | undefined,
    ): Promise<PolicyDocument | undefined> {
      if (twin.down) return Promise.reject(new SvcError('unavailable', 'registry down'));
      const next = change(structuredClone(twin.document));
      if (next === undefined) return Promise.resolve(undefined);
      twin.document = next;
      twin.commits++;
      return Promise.resolve(next);
    },
  };
  return twin;
}

describe('PolicyStore with a shared authority (cluster mode)', () => {
  it('commits changes to the authority, enforces and caches what it committed', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const authority = memoryAuthority({
      roles: { ops: ['app-view'] },
      principals: { zed: { roles: ['ops'], status: 'active' } },
    });
    store.useAuthority(authority);
    await store.setPrincipal('amy', { roles: ['ops'] });
    // The change was decided on the shared policy (role ops exists there, not in the file).
    expect(authority.document.principals['amy']).toEqual({ roles: ['ops'], status: 'active' });
    expect(authority.document.principals['zed']).toBeDefined();
    expect(store.getPrincipal('zed')?.roles).toEqual(['ops']);
    expect((await onDisk()).principals['amy']).toEqual({ roles: ['ops'], status: 'active' });
    // The file's seed principals are not in the shared policy until addSeedPrincipals.
    expect(authority.document.principals['admin']).toBeUndefined();
    await store.addSeedPrincipals();
    expect(authority.document.principals['admin']).toEqual({ roles: ['svc-admin'], status: 'active' });
    const before = authority.commits;
    await store.addSeedPrincipals();
    expect(authority.commits).toBe(before);
  });

  it('adopts a document: enforced at once, tombstone listeners run, cached; the same document again changes nothing', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    store.useAuthority(memoryAuthority());
    const tombstoned: string[] = [];
    store.onTombstone((id) => tombstoned.push(id));
    const document: PolicyDocument = {
      roles: { ops: ['app-view'] },
      principals: {
        admin: { roles: ['svc-admin'], status: 'tombstoned' },
        bo: { roles: ['ops'], status: 'active' },
      },
    };
    await store.adopt(document);
    expect(tombstoned).toEqual(['admin']);
    expect((await store.resolve('admin', 0)).permissions.size).toBe(0);
    expect(store.permissionsOf(['ops']).has('app-view')).toBe(true);
    expect(store.getPrincipal('guest')).toBeUndefined();
    expect((await onDisk()).principals['bo']).toEqual({ roles: ['ops'], status: 'active' });
    const mtime = (await stat(file)).mtimeMs;
    await store.adopt(structuredClone(document));
    expect((await stat(file)).mtimeMs).toBe(mtime);
    expect(tombstoned).toEqual(['admin']);
  });

  it('reads an adopted policy only after its own earlier changes are committed (no flicker back)', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const authority = memoryAuthority();
    store.useAuthority(authority);
    let readAt: number | undefined;
    const change = store.setRole('ops', ['app-view']);
    const adopted = store.adopt(() => {
      readAt = authority.commits;
      return Promise.resolve(structuredClone(authority.document));
    });
    await Promise.all([change, adopted]);
    expect(readAt).toBe(1);
    expect(store.listRoles()['ops']).toEqual(['app-view']);
  });

  it('with the registry unreachable: writes fail unavailable, known principals keep working, a new one gets no role', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const authority = memoryAuthority();
    store.useAuthority(authority);
    authority.down = true;
    await expect(store.setRole('ops', ['app-view'])).rejects.toMatchObject({ code: 'unavailable' });
    expect((await store.resolve('admin', 0)).permissions.has('app-reg')).toBe(true);
    const stranger = await store.resolve('stranger', 0);
    expect(stranger.permissions.size).toBe(0);
    expect(store.getPrincipal('stranger')).toBeUndefined();
  });

  it('a failed cache write does not fail a committed change (it is logged)', async () => {
    let fail = false;
    const store = await PolicyStore.open(file, {
      seed: SEED,
      writeFile: async (path, data, mode) => {
        if (fail) throw new Error('ENOSPC: no space left on device');
        await writeFile(path, data, { mode });
      },
    });
    const warnings: string[] = [];
    const authority = memoryAuthority();
    store.useAuthority(authority, { warn: (message) => warnings.push(message) });
    fail = true;
    await store.setRole('ops', ['app-view']);
    expect(authority.document.roles['ops']).toEqual(['app-view']);
    expect(store.listRoles()['ops']).toEqual(['app-view']);
    expect(warnings).toEqual(['policy cache file not written']);
  });

  it('shares a local edit of the file with the next change, record by record', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const authority = memoryAuthority({ roles: {}, principals: { other: { roles: [], status: 'active' } } });
    store.useAuthority(authority);
    await store.adopt(authority.document);
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace('principals:\n', 'principals:\n  edited: { roles: [svc-viewer] }\n'));
    await store.setRole('ops', ['app-view']);
    expect(authority.document.principals['edited']).toEqual({ roles: ['svc-viewer'], status: 'active' });
    expect(authority.document.principals['other']).toBeDefined();
    expect(store.getPrincipal('edited')?.roles).toEqual(['svc-viewer']);
  });
});

describe('PolicyStore with a shared authority: an invalid edit of the cache file', () => {
  it('does not stop adopting the shared policy; the edit stays for its author and is reported', async () => {
    const store = await PolicyStore.open(file, { seed: SEED });
    const warnings: string[] = [];
    store.useAuthority(memoryAuthority(), { warn: (message) => warnings.push(message) });
    await writeFile(file, 'principals: [unclosed\n');
    await store.adopt({ roles: {}, principals: { admin: { roles: ['svc-admin'], status: 'tombstoned' } } });
    expect(store.getPrincipal('admin')?.status).toBe('tombstoned');
    expect(await readFile(file, 'utf8')).toBe('principals: [unclosed\n');
    expect(warnings).toEqual(['policy file edit not shared']);
    await expect(store.setRole('ops', ['app-view'])).rejects.toMatchObject({ code: 'internal' });
  });
});

describe('checkPolicyRecords (records from the registry)', () => {
  it('keeps the valid records and reports each invalid one', () => {
    const problems: string[] = [];
    const document = checkPolicyRecords(
      { ops: ['app-view', 'app-view'], 'svc-admin': ['app-view'], moon: ['fly'], 'bad name': [] },
      {
        ok: { roles: ['ops'] },
        typo: { role: ['ops'] },
        ghost: { roles: ['missing'], status: 'active' },
        weird: { roles: [], status: 'deleted' },
        'ctl\u0001': { roles: [] },
        long: 'x',
      },
      (where, problem) => problems.push(`${where}: ${problem}`),
    );
    expect(document.roles).toEqual({ ops: ['app-view'] });
    expect(Object.keys(document.principals).sort()).toEqual(['ghost', 'ok']);
    expect(problems).toHaveLength(7);
    expect(problems.join('\n')).toContain('roles.moon');
  });
});
