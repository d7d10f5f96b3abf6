// Security in sync against a real etcd, with policy stores as the nodes (cluster/security-sync.ts):
// the first node seeds etcd, later ones adopt it; a change on one store is enforced on the other
// within a second; concurrent writers lose no update; a node that was away catches up from its
// cache and etcd; invalid records written to etcd directly are ignored; etcd out of reach means
// writes fail `unavailable` while the cached policy stays enforced.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { startEtcd, type TestEtcd } from '@svc/testkit';
import { PolicyStore } from '../../src/auth/policy-store.ts';
import { KEYS } from '../../src/cluster/records.ts';
import { startSecuritySync, type SecuritySync } from '../../src/cluster/security-sync.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startTcpProxy } from './tcp-proxy.ts';

const FILE_A = `principals:
  alice: { roles: [svc-admin] }
  ops-bot: { roles: [deployer] }
roles:
  deployer: [app-view, app-reg]
`;

interface Node {
  store: PolicyStore;
  sync: SecuritySync;
  file: string;
  warnings: string[];
}

describe('security sync (real etcd, policy stores)', () => {
  let etcd: TestEtcd;
  let registry: Etcd3;
  let dir: string;
  const running: Node[] = [];

  const startNode = async (
    name: string,
    text?: string,
    seed: Record<string, readonly string[]> = {},
    url?: string,
  ): Promise<Node> => {
    const file = join(dir, name, 'policy.yaml');
    if (text !== undefined) {
      await rm(join(dir, name), { recursive: true, force: true });
      await import('node:fs/promises').then((fs) => fs.mkdir(join(dir, name), { recursive: true }));
      await writeFile(file, text, { mode: 0o600 });
    }
    const store = await PolicyStore.open(file, { seed });
    const warnings: string[] = [];
    const client = new Etcd3({ hosts: url ?? etcd.url, dialTimeout: 2_000 });
    const sync = startSecuritySync({
      client,
      store,
      node: name,
      log: (level, message, fields) => {
        if (level === 'warn') warnings.push(`${message} ${JSON.stringify(fields)}`);
      },
    });
    const node: Node = {
      store,
      sync: {
        ...sync,
        async close() {
          await sync.close();
          client.close();
        },
      },
      file,
      warnings,
    };
    running.push(node);
    await sync.ready();
    return node;
  };

  const stopNode = async (node: Node): Promise<void> => {
    running.splice(running.indexOf(node), 1);
    await node.sync.close();
  };

  beforeAll(async () => {
    etcd = await startEtcd();
    registry = new Etcd3({ hosts: etcd.url });
  });
  afterAll(async () => {
    registry.close();
    await etcd.close();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-secsync-'));
    await registry.delete().prefix(KEYS.securityPrefix);
  });
  afterEach(async () => {
    for (const node of [...running]) await stopNode(node);
    await rm(dir, { recursive: true, force: true });
  });

  it('seeds etcd from the first node; a later node adopts etcd (and adds its own seed principals)', async () => {
    await startNode('a', FILE_A);
    expect(JSON.parse((await registry.get(KEYS.securityRole('deployer')).string())!)).toEqual([
      'app-view',
      'app-reg',
    ]);
    expect(JSON.parse((await registry.get(KEYS.securityPrincipal('ops-bot')).string())!)).toEqual({
      roles: ['deployer'],
      status: 'active',
    });
    const b = await startNode('b', 'principals:\n  mallory: { roles: [svc-admin] }\n', {
      'b-admin': ['svc-admin'],
    });
    expect(b.store.getPrincipal('ops-bot')?.roles).toEqual(['deployer']);
    expect(b.store.getPrincipal('mallory')).toBeUndefined(); // etcd's policy wins over B's file
    expect(b.store.getPrincipal('b-admin')?.roles).toEqual(['svc-admin']);
    expect(await registry.get(KEYS.securityPrincipal('mallory')).string()).toBeNull();
    expect(await registry.get(KEYS.securityPrincipal('b-admin')).string()).not.toBeNull();
    // B's file is now the cache of the shared policy.
    expect(await readFile(b.file, 'utf8')).toContain('ops-bot');
    expect(await readFile(b.file, 'utf8')).not.toContain('mallory');
  });

  it('seeds a large policy (more records than one etcd transaction takes) completely', async () => {
    const lines = ['principals:'];
    for (let i = 0; i < 250; i++) lines.push(`  user-${i}: { roles: [svc-viewer] }`);
    await startNode('a', lines.join('\n') + '\n');
    const b = await startNode('b', '');
    expect(b.store.listPrincipals()).toHaveLength(250);
    expect(await registry.getAll().prefix(KEYS.securityPrincipalsPrefix).count()).toBe(250);
  });

  it('keeps principal ids with slashes, colons, unicode and maximal length exact across nodes', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    const ids = ['team/ops/bot', 'client:svc/x', 'ünï-cödé 😀', '../../etc/passwd', 'x'.repeat(256)];
    for (const id of ids) await a.store.setPrincipal(id, { roles: ['svc-viewer'] });
    await waitFor(() => ids.every((id) => b.store.getPrincipal(id)?.roles[0] === 'svc-viewer'), {
      what: 'every id on B',
    });
    await expect(a.store.setPrincipal('x'.repeat(257), { roles: [] })).rejects.toMatchObject({
      code: 'bad_request',
    });
    await expect(a.store.setPrincipal('bad\nid', { roles: [] })).rejects.toMatchObject({
      code: 'bad_request',
    });
    expect(await registry.get(KEYS.securityPrincipal('team/ops/bot')).string()).not.toBeNull();
  });

  it('enforces a role change, a new principal and a tombstone made on A on B within a second', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    const within = async (what: string, check: () => boolean): Promise<number> => {
      const started = Date.now();
      await waitFor(check, { timeoutMs: 1_000, intervalMs: 2, what });
      return Date.now() - started;
    };
    await a.store.setRole('deployer', ['app-view', 'app-reg', 'app-delete']);
    await within('the new permission on B', () => b.store.permissionsOf(['deployer']).has('app-delete'));
    await a.store.setPrincipal('carol', { roles: ['deployer'] });
    await within('carol on B', () => b.store.getPrincipal('carol')?.roles[0] === 'deployer');
    const tombstoned: string[] = [];
    b.store.onTombstone((id) => tombstoned.push(id));
    await a.store.tombstone('ops-bot');
    await within('the tombstone on B', () => b.store.getPrincipal('ops-bot')?.status === 'tombstoned');
    expect(tombstoned).toEqual(['ops-bot']);
    expect((await b.store.resolve('ops-bot', 0)).permissions.size).toBe(0);
    await a.store.setPrincipal('carol', { roles: [] });
    await a.store.deleteRole('deployer');
    await within('the role gone on B', () => !('deployer' in b.store.listRoles()));
  });

  it('loses no update when two nodes write at once', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => [
        a.store.setPrincipal(`from-a-${i}`, { roles: ['svc-viewer'] }),
        b.store.setPrincipal(`from-b-${i}`, { roles: ['svc-viewer'] }),
        (i % 2 === 0 ? a : b).store.setRole(`role-${i}`, ['app-view']),
      ]).flat(),
    );
    const ids = (node: Node): string[] =>
      node.store
        .listPrincipals()
        .map((p) => p.id)
        .filter((id) => id.startsWith('from-'));
    const roles = (node: Node): string[] =>
      Object.keys(node.store.listRoles()).filter((r) => r.startsWith('role-'));
    const keys = await registry.getAll().prefix(KEYS.securityPrefix).keys();
    expect(keys.filter((key) => key.includes('/from-'))).toHaveLength(20);
    expect(keys.filter((key) => key.includes('/role-'))).toHaveLength(10);
    await waitFor(
      () => ids(a).length === 20 && ids(b).length === 20 && roles(a).length === 10 && roles(b).length === 10,
      { what: 'all 20 principals and 10 roles on both' },
    );
  });

  it('refuses to delete a role that another node granted meanwhile (the check runs on the shared policy)', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    await a.store.setRole('temp', ['app-view']);
    await waitFor(() => 'temp' in b.store.listRoles(), { what: 'temp on B' });
    await a.store.setPrincipal('dave', { roles: ['temp'] });
    // B has not necessarily seen dave yet; its delete is decided on etcd's policy, not its cache.
    await expect(b.store.deleteRole('temp')).rejects.toMatchObject({ code: 'conflict' });
  });

  it('catches up after being away: changes made meanwhile are enforced on its return', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    await stopNode(b);
    await a.store.setPrincipal('erin', { roles: ['deployer'] });
    await a.store.tombstone('alice');
    // B restarts from its cache file (which does not know erin) and catches up.
    expect(await readFile(b.file, 'utf8')).not.toContain('erin');
    const back = await startNode('b');
    expect(back.store.getPrincipal('erin')?.roles).toEqual(['deployer']);
    expect(back.store.getPrincipal('alice')?.status).toBe('tombstoned');
    await waitFor(async () => (await readFile(b.file, 'utf8')).includes('erin'), { what: 'the cache file' });
  });

  it('keeps watching across an etcd kill -9 and restart', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    await etcd.stop('SIGKILL');
    // Meanwhile writes fail as unavailable and the cached policy stays enforced.
    const failed = await a.store.setRole('late', ['app-view']).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SvcError);
    expect((failed as SvcError).code).toBe('unavailable');
    expect(b.store.getPrincipal('ops-bot')?.roles).toEqual(['deployer']);
    await etcd.start();
    await waitFor(
      async () => {
        try {
          await a.store.setRole('late', ['app-view']);
          return true;
        } catch {
          return false;
        }
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'a write after etcd came back' },
    );
    await waitFor(() => 'late' in b.store.listRoles(), { timeoutMs: 15_000, what: 'the role on B' });
  }, 60_000);

  it('re-lists when its watch is cancelled because the revision it resumes from was compacted', async () => {
    const a = await startNode('a', FILE_A);
    const proxy = await startTcpProxy(etcd.clientPort);
    try {
      const b = await startNode('b', '', {}, proxy.url);
      proxy.cut();
      for (let i = 0; i < 5; i++) await a.store.setPrincipal(`while-away-${i}`, { roles: ['svc-viewer'] });
      const { header } = await registry.getAll().prefix(KEYS.securityPrefix).exec();
      await registry.kv.compact({ revision: header.revision, physical: true });
      proxy.heal();
      await waitFor(() => b.store.getPrincipal('while-away-4') !== undefined, {
        timeoutMs: 30_000,
        intervalMs: 20,
        what: 'B to catch up after the partition',
      });
      await waitFor(() => b.warnings.some((w) => w.includes('security watch cancelled')), {
        timeoutMs: 30_000,
        what: 'the compacted watch to be reported',
      });
      // The new watch works: a later change arrives within a second.
      await a.store.setPrincipal('after-compaction', { roles: ['svc-viewer'] });
      await waitFor(() => b.store.getPrincipal('after-compaction') !== undefined, {
        timeoutMs: 1_000,
        intervalMs: 5,
        what: 'a change after the compaction on B',
      });
    } finally {
      proxy.heal();
      for (const node of [...running]) await stopNode(node);
      await proxy.close();
    }
  }, 90_000);

  it('ignores invalid and hostile records written to etcd directly, applying the valid ones', async () => {
    const a = await startNode('a', FILE_A);
    const bump = (): Promise<unknown> =>
      registry
        .put(KEYS.securityVersion)
        .value(JSON.stringify({ node: 'test', at: new Date().toISOString() }))
        .exec();
    await registry.put(KEYS.securityPrincipal('broken')).value('{not json');
    await registry
      .put(KEYS.securityPrincipal('sneaky'))
      .value('{"roles":["svc-admin"],"status":"active","admin":true}');
    await registry.put(KEYS.securityPrincipal('__proto__')).value('{"roles":["svc-admin"]}');
    await registry.put(KEYS.securityPrincipal('bad\u0000id')).value('{"roles":["svc-admin"]}');
    await registry.put(KEYS.securityRole('svc-viewer')).value('["app-delete"]');
    await registry.put(KEYS.securityRole('moon')).value('["fly-to-the-moon"]');
    await registry.put(KEYS.securityRole('huge')).value(JSON.stringify(Array(100_000).fill('app-view')));
    await registry.put(KEYS.securityPrincipal('ghost-role')).value('{"roles":["no-such-role"]}');
    await registry.put(KEYS.securityPrincipal('fine')).value('{"roles":["svc-viewer"]}');
    await bump();
    await waitFor(() => a.store.getPrincipal('fine') !== undefined, { what: 'the valid record' });
    expect(a.store.getPrincipal('broken')).toBeUndefined();
    expect(a.store.getPrincipal('sneaky')).toBeUndefined();
    expect(a.store.getPrincipal('bad\u0000id')).toBeUndefined();
    expect(Object.getPrototypeOf(a.store.listPrincipals())).toBe(Array.prototype);
    expect(a.store.listRoles()['svc-viewer']).not.toContain('app-delete');
    expect(a.store.listRoles()['moon']).toBeUndefined();
    expect(a.store.listRoles()['huge']).toEqual(['app-view']);
    expect((await a.store.resolve('ghost-role', 0)).permissions.size).toBe(0);
    expect(a.warnings.join('\n')).toContain('broken');
    // The store still works and writes over the bad records' neighbours normally.
    await a.store.setPrincipal('fine', { roles: ['deployer'] });
    expect(JSON.parse((await registry.get(KEYS.securityPrincipal('fine')).string())!)).toEqual({
      roles: ['deployer'],
      status: 'active',
    });
  });

  it('shares an edit of the cache file (the operator helper) with the next change', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    const text = await readFile(a.file, 'utf8');
    await writeFile(
      a.file,
      text.replace('principals:\n', 'principals:\n  frank:\n    roles: [svc-viewer]\n    status: active\n'),
    );
    await a.store.setRole('another', ['app-view']);
    await waitFor(() => b.store.getPrincipal('frank')?.roles[0] === 'svc-viewer', { what: 'frank on B' });
    expect(a.store.getPrincipal('frank')?.roles).toEqual(['svc-viewer']);
  });

  it('commits a change of more records than one transaction takes (a large file edit) completely', async () => {
    const a = await startNode('a', FILE_A);
    const b = await startNode('b', '');
    const added = Array.from({ length: 150 }, (_, i) => `  bulk-${i}: { roles: [svc-viewer] }`).join('\n');
    await writeFile(
      a.file,
      (await readFile(a.file, 'utf8')).replace('principals:\n', `principals:\n${added}\n`),
    );
    await a.store.setRole('trigger', ['app-view']);
    const bulk = (node: Node): number =>
      node.store.listPrincipals().filter((p) => p.id.startsWith('bulk-')).length;
    await waitFor(() => bulk(b) === 150 && 'trigger' in b.store.listRoles(), {
      what: 'all 150 and the role on B',
    });
    expect(bulk(a)).toBe(150);
  });
});
