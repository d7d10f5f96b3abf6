// The placement follower (a worker node) with real svcd nodes and a real etcd, the test writing the topology itself (no
// main node runs, so no leader interferes): a placed task runs through the supervisor (visible in
// the app list, not editable locally), its replica is a service with the app health URL, peers get
// SVC_SERVICE_<APP>_ADDR, a withdrawn placement stops it, a local app of the same name is kept.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@svc/testkit';
import { KEYS } from '../../src/cluster/records.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startCluster, type TestCluster } from './harness.ts';

const SCHEDULE_TIME = '2026-11-24 04:40:00+00';

describe('cluster worker', () => {
  let cluster: TestCluster;
  let token: string;
  let scratch: string;
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'svc-cluster-worker-'));
    cluster = await startCluster({
      nodes: [
        { host: 'w1', main: false },
        { host: 'w2', main: false },
        { host: 'w3', main: false, viaProxy: true },
      ],
      ttlSeconds: 3,
    });
    await cluster.waitForReports(['w1', 'w2', 'w3']);
    token = await cluster.node('w1').daemon.token('admin');
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
    rmSync(scratch, { recursive: true, force: true });
  }, 60_000);

  const api = (host: string) => cluster.node(host).daemon.rest();
  const place = async (host: string, apps: string[]): Promise<void> => {
    const key = KEYS.topology(host);
    if (apps.length === 0) await cluster.registry.delete().key(key);
    else
      await cluster.registry
        .put(key)
        .value(JSON.stringify(apps.map((app) => ({ app, schedule_time: SCHEDULE_TIME }))));
  };
  const defineTask = async (name: string, task: Record<string, unknown>): Promise<void> => {
    const r = await api('w1').call('PUT', `/svc/cluster/app/${name}`, {
      token,
      body: { replication: 1, port: 0, memoryMB: 0, condition: {}, ...task },
    });
    expect(r.status, r.text()).toBe(200);
  };
  const appOn = async (host: string, name: string): Promise<Record<string, unknown> | undefined> => {
    const r = await api(host).call('GET', '/svc/applications', { token });
    return r.json<Record<string, unknown>[]>().find((app) => app['name'] === name);
  };

  it('runs a placed task as a cluster app, registers its service and refuses local changes', async () => {
    const port = await freePort();
    await defineTask('web', { port, content: { command: 'sleep 600' } });
    await place('w1', ['web']);
    const app = await waitFor(
      async () => {
        const found = await appOn('w1', 'web');
        return found?.['state'] === 'running' ? found : undefined;
      },
      { timeoutMs: 30_000, what: 'web running on w1' },
    );
    expect(app['cluster']).toBe(true);
    expect(app['owner_principal_id']).toBeDefined();
    expect(await appOn('w2', 'web')).toBeUndefined();
    const record = await waitFor(() => cluster.get(KEYS.service('web', 'w1')), { what: 'service record' });
    const restUrl = cluster.node('w1').daemon.restUrl;
    expect(JSON.parse(record)).toEqual({
      address: new URL(restUrl).hostname,
      port,
      health_url: `${restUrl}/svc/app/web/health`,
    });
    const raw = await cluster.registry.get(KEYS.service('web', 'w1')).exec();
    expect(raw.kvs[0]!.lease).not.toBe('0'); // on the node's lease
    for (const [method, path, body] of [
      ['PUT', '/svc/app/web', { command: 'sleep 1' }],
      ['DELETE', '/svc/app/web', undefined],
      ['POST', '/svc/app/web/disable', undefined],
      ['POST', '/svc/app/web/enable', undefined],
    ] as const) {
      const r = await api('w1').call(method, path, { token, ...(body === undefined ? {} : { body }) });
      expect(r.status, `${method} ${path}`).toBe(409);
      const answer = r.json<{ error: string; message: string }>();
      expect(answer.error).toBe('conflict');
      expect(answer.message).toContain('/svc/cluster/app/web');
    }
    const listed = await api('w2').call('GET', '/svc/cluster/applications', { token });
    expect(listed.json<Record<string, { placements: unknown }>>()['web']!.placements).toEqual([
      { host: 'w1', schedule_time: SCHEDULE_TIME },
    ]);
  });

  it('gives a peer the SVC_SERVICE_<APP>_ADDR of every registered replica', async () => {
    const out = join(scratch, 'peer-env.txt');
    const record = JSON.parse((await cluster.get(KEYS.service('web', 'w1')))!) as {
      address: string;
      port: number;
    };
    await defineTask('peer', {
      content: { command: `sh -c 'echo "$SVC_SERVICE_WEB_ADDR" > ${out}; sleep 600'` },
    });
    await place('w2', ['peer']);
    await waitFor(() => existsSync(out) && readFileSync(out, 'utf8').endsWith('\n'), {
      timeoutMs: 30_000,
      what: 'the peer wrote its environment',
    });
    expect(readFileSync(out, 'utf8').trim()).toBe(`${record.address}:${record.port}`);
  });

  it('withdraws an app whose placement is gone, and its service record', async () => {
    await place('w1', []);
    await waitFor(async () => (await appOn('w1', 'web')) === undefined, {
      timeoutMs: 30_000,
      what: 'web gone',
    });
    await waitFor(async () => (await cluster.get(KEYS.service('web', 'w1'))) === undefined, {
      what: 'service record gone',
    });
  });

  it('keeps a local app of the same name and shows the conflict in its view', async () => {
    const w2 = await cluster.node('w2').daemon.token('admin');
    const local = await api('w2').call('PUT', '/svc/app/dup', { token: w2, body: { command: 'sleep 600' } });
    expect(local.status).toBe(200);
    await defineTask('dup', { port: await freePort(), content: { command: 'sleep 601' } });
    await place('w2', ['peer', 'dup']);
    const app = await waitFor(
      async () => {
        const found = await appOn('w2', 'dup');
        return typeof found?.['cluster_conflict'] === 'string' ? found : undefined;
      },
      { timeoutMs: 30_000, what: 'the conflict in the view' },
    );
    expect(app['command']).toBe('sleep 600');
    expect(app['cluster']).toBeUndefined();
    expect(await cluster.get(KEYS.service('dup', 'w2'))).toBeUndefined();
    expect((await appOn('w2', 'peer'))?.['state']).toBe('running');
  });

  it('re-applies a changed task and removes a deleted one', async () => {
    await defineTask('peer', { content: { command: 'sleep 602' } });
    await waitFor(async () => (await appOn('w2', 'peer'))?.['command'] === 'sleep 602', {
      timeoutMs: 30_000,
      what: 'peer replaced',
    });
    // A task deleted while its placement stays: the app keeps running until the schedule drops it.
    const del = await api('w1').call('DELETE', '/svc/cluster/app/peer', { token });
    expect(del.status).toBe(200);
    expect((await api('w1').call('DELETE', '/svc/cluster/app/peer', { token })).status).toBe(404);
    await place('w2', []);
    await waitFor(async () => (await appOn('w2', 'peer')) === undefined, {
      timeoutMs: 30_000,
      what: 'peer gone',
    });
    expect((await appOn('w2', 'dup'))?.['command']).toBe('sleep 600');
  });

  it('forwards X-Target-Host to a registered node by host name or TCP address, and to nothing else', async () => {
    const w2 = cluster.node('w2').daemon;
    const names = async (headers: Record<string, string>): Promise<number | string[]> => {
      const r = await api('w1').call('GET', '/svc/applications', { token, headers });
      return r.status === 200 ? r.json<{ name: string }[]>().map((app) => app.name) : r.status;
    };
    await waitFor(async () => (await cluster.get(KEYS.endpoint('w2'))) !== undefined, {
      what: 'w2 endpoint',
    });
    // `dup` is a local app of w2 only.
    expect(await names({ 'x-target-host': 'w2' })).toContain('dup');
    expect(await names({ 'x-target-host': `127.0.0.1:${w2.tcpPort}` })).toContain('dup');
    expect(await names({})).not.toContain('dup');
    const refused = await api('w1').call('GET', '/svc/applications', {
      token,
      headers: { 'x-target-host': 'w9' },
    });
    expect(refused.status).toBe(403);
    expect(refused.json<{ error: string }>().error).toBe('target_not_allowed');
    // A registered address with another port is not a registered node.
    const otherPort = await api('w1').call('GET', '/svc/applications', {
      token,
      headers: { 'x-target-host': `127.0.0.1:${w2.tcpPort === 1 ? 2 : w2.tcpPort - 1}` },
    });
    expect(otherPort.status).toBe(403);
  });

  it('catches up after a partition from etcd during which its watched revision was compacted', async () => {
    await defineTask('before-cut', { content: { command: 'sleep 600' } });
    await place('w3', ['before-cut']);
    await waitFor(async () => (await appOn('w3', 'before-cut'))?.['state'] === 'running', {
      timeoutMs: 30_000,
      what: 'before-cut running on w3',
    });
    cluster.proxy('w3').cut();
    await defineTask('after-cut', { content: { command: 'sleep 600' } });
    await place('w3', ['after-cut']);
    // History up to now is gone: a watch resuming from before the cut is cancelled (compacted).
    const revision = (await cluster.registry.get(KEYS.topology('w3')).exec()).header.revision;
    await cluster.registry.kv.compact({ revision, physical: true });
    // Still cut off: w3 keeps what it runs.
    expect((await appOn('w3', 'before-cut'))?.['state']).toBe('running');
    cluster.proxy('w3').heal();
    await waitFor(
      async () =>
        (await appOn('w3', 'after-cut'))?.['state'] === 'running' &&
        (await appOn('w3', 'before-cut')) === undefined,
      { timeoutMs: 30_000, what: 'w3 on the schedule written while it was cut off' },
    );
  });

  it('keeps its cluster apps through an etcd restart and registers its records again', async () => {
    const port = await freePort();
    await defineTask('steady', { port, content: { command: 'sleep 600' } });
    await place('w1', ['steady']);
    const pid = await waitFor(
      async () => {
        const app = await appOn('w1', 'steady');
        return app?.['state'] === 'running' ? app['pid'] : undefined;
      },
      { timeoutMs: 30_000, what: 'steady running on w1' },
    );
    await waitFor(() => cluster.get(KEYS.service('steady', 'w1')), { what: 'steady service record' });
    await cluster.stopEtcd('SIGKILL');
    // Service and endpoint records are on the lease: after an outage longer than the TTL they come
    // back on the node's new lease.
    await cluster.startEtcd();
    await waitFor(async () => (await cluster.get(KEYS.service('steady', 'w1'))) !== undefined, {
      timeoutMs: 30_000,
      what: 'steady service record after the restart',
    });
    await waitFor(async () => (await cluster.get(KEYS.endpoint('w1'))) !== undefined, {
      timeoutMs: 30_000,
      what: 'w1 endpoint after the restart',
    });
    expect((await appOn('w1', 'steady'))?.['pid']).toBe(pid);
    // The watches work again: a new placement is applied.
    await defineTask('after-restart', { content: { command: 'sleep 600' } });
    await place('w1', ['steady', 'after-restart']);
    await waitFor(async () => (await appOn('w1', 'after-restart'))?.['state'] === 'running', {
      timeoutMs: 30_000,
      what: 'after-restart running on w1',
    });
    // No node ended on the way (cancelled watches after the restart are recovered, never fatal).
    expect(cluster.nodes.map((node) => [node.host, node.running()]).sort()).toEqual([
      ['w1', true],
      ['w2', true],
      ['w3', true],
    ]);
  });

  it('runs a cluster app exactly once after its node restarts', async () => {
    await defineTask('once', { content: { command: 'sleep 600' } });
    await place('w2', ['once']);
    const before = await waitFor(
      async () => {
        const app = await appOn('w2', 'once');
        return app?.['state'] === 'running' ? (app['pid'] as number) : undefined;
      },
      { timeoutMs: 30_000, what: 'once running on w2' },
    );
    await cluster.node('w2').restart();
    const after = await waitFor(
      async () => {
        const app = await appOn('w2', 'once');
        return app?.['state'] === 'running' ? (app['pid'] as number) : undefined;
      },
      { timeoutMs: 30_000, what: 'once running on w2 after the restart' },
    );
    expect(after).not.toBe(before);
    await waitFor(
      () => {
        try {
          process.kill(before, 0);
          return false;
        } catch {
          return true;
        }
      },
      { timeoutMs: 15_000, what: 'the process of before the restart stopped' },
    );
  });
});
