// /svc/cluster/* input paths against a real cluster node (one etcd): malformed, oversized and hostile
// task bodies are refused with the right code and never reach the registry; names in the path are
// checked; a stand-alone daemon answers every cluster route 404 not_found; X-Target-Host reaches a
// registered node by its host name.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostileAppBody, hostileValue, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { KEYS } from '../../src/cluster/records.ts';
import { startCluster, type TestCluster } from './harness.ts';

const VALID = { replication: 1, port: 0, memoryMB: 0, condition: {}, content: { command: 'sleep 60' } };

describe('cluster API inputs', () => {
  let cluster: TestCluster;
  let token: string;
  beforeAll(async () => {
    cluster = await startCluster({ nodes: [{ host: 'api-1', main: false, worker: false }], ttlSeconds: 3 });
    await cluster.waitForReports(['api-1']);
    token = await cluster.node('api-1').daemon.token('admin');
  }, 120_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  const put = (name: string, options: { body?: unknown; rawBody?: string }) =>
    cluster
      .node('api-1')
      .daemon.rest()
      .call('PUT', `/svc/cluster/app/${name}`, { token, ...options });

  it('stores a valid task named like the path, owned by the caller', async () => {
    const r = await put('ok-task', { body: VALID });
    expect(r.status, r.text()).toBe(200);
    const stored = JSON.parse((await cluster.get(KEYS.task('ok-task')))!) as {
      content: Record<string, unknown>;
    };
    expect(stored.content['name']).toBe('ok-task');
    expect(typeof stored.content['owner']).toBe('string');
    const got = await cluster.node('api-1').daemon.rest().call('GET', '/svc/cluster/app/ok-task', { token });
    expect(got.json()).toMatchObject({ replication: 1, placements: [] });
  });

  it('refuses malformed, hostile and oversized bodies', async () => {
    const cases: [string, { body?: unknown; rawBody?: string }, number, string][] = [
      ['not json', { rawBody: '{"replication": ' }, 400, 'invalid_json'],
      ['an array', { body: [] }, 400, 'invalid_app'],
      ['negative replication', { body: { ...VALID, replication: -1 } }, 400, 'invalid_app'],
      ['port out of range', { body: { ...VALID, port: 70_000 } }, 400, 'invalid_app'],
      ['fractional memory', { body: { ...VALID, memoryMB: 1.5 } }, 400, 'invalid_app'],
      ['unknown field', { body: { ...VALID, extra: true } }, 400, 'invalid_app'],
      ['condition value not a string', { body: { ...VALID, condition: { zone: 1 } } }, 400, 'invalid_app'],
      [
        'too many conditions',
        {
          body: {
            ...VALID,
            condition: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])),
          },
        },
        400,
        'invalid_app',
      ],
      [
        'huge condition value',
        { body: { ...VALID, condition: { zone: 'x'.repeat(300) } } },
        400,
        'invalid_app',
      ],
      [
        'content of another name',
        { body: { ...VALID, content: { name: 'other', command: 'x' } } },
        400,
        'invalid_app',
      ],
      ['content without command', { body: { ...VALID, content: {} } }, 400, 'invalid_app'],
      [
        'content adopting a pid',
        { body: { ...VALID, content: { command: 'x', pid: 1 } } },
        400,
        'invalid_app',
      ],
      [
        'content claiming system',
        { body: { ...VALID, content: { command: 'x', system: true } } },
        400,
        'invalid_app',
      ],
      [
        'oversized task',
        { body: { ...VALID, content: { command: 'x', metadata: 'd'.repeat(300_000) } } },
        413,
        'payload_too_large',
      ],
    ];
    for (const [label, options, status, code] of cases) {
      const r = await put('bad-task', options);
      expect(r.status, `${label}: ${r.text()}`).toBe(status);
      expect(r.json<{ error: string }>().error, label).toBe(code);
    }
    expect(await cluster.get(KEYS.task('bad-task'))).toBeUndefined();
  });

  it('never stores a generated hostile body that is not a valid task, and never fails with 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            replication: hostileValue,
            port: hostileValue,
            memoryMB: hostileValue,
            condition: hostileValue,
            content: fc.oneof(hostileAppBody, hostileValue),
          },
          { requiredKeys: [] },
        ),
        async (body) => {
          const r = await put('fuzz-task', { body });
          expect(r.status).toBeLessThan(500);
          if (r.status !== 200) expect(await cluster.get(KEYS.task('fuzz-task'))).toBeUndefined();
          else await cluster.registry.delete().key(KEYS.task('fuzz-task'));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('checks the name in the path', async () => {
    for (const name of ['..', 'a%2Fb', 'x'.repeat(129), '%00']) {
      const r = await put(name, { body: VALID });
      expect(r.status, name).toBeGreaterThanOrEqual(400);
      expect(r.status, name).toBeLessThan(500);
    }
    const missing = await cluster.node('api-1').daemon.rest().call('GET', '/svc/cluster/app/none', { token });
    expect(missing.status).toBe(404);
    expect(missing.json<{ error: string }>().error).toBe('app_not_found');
  });
});

describe('cluster API on a stand-alone daemon', () => {
  let daemon: TestDaemon;
  beforeAll(async () => {
    daemon = await startTestDaemon();
  }, 60_000);
  afterAll(async () => {
    await daemon?.close();
  });

  it('answers every cluster route 404 not_found, saying cluster mode is off', async () => {
    const token = await daemon.token('admin');
    for (const [method, path] of [
      ['GET', '/svc/cluster/applications'],
      ['GET', '/svc/cluster/app/x'],
      ['PUT', '/svc/cluster/app/x'],
      ['DELETE', '/svc/cluster/app/x'],
      ['GET', '/svc/cluster/nodes'],
      ['GET', '/svc/cluster/topology'],
    ] as const) {
      const r = await daemon
        .rest()
        .call(method, path, { token, ...(method === 'PUT' ? { body: VALID } : {}) });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json<{ error: string; message: string }>()).toEqual({
        error: 'not_found',
        message: expect.stringContaining('cluster mode is off') as unknown,
      });
    }
  });
});
