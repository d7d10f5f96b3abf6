// Attack row L1 (issue 25): unauthenticated GET /svc/app/{name}/health answered 200 for every
// existing application, system applications included, and 404 otherwise, so application names could
// be listed without a token. Now, on a real cluster node (etcd, one worker running a placed task
// with a port): without a token only a registered service answers (its name and this URL are what
// service registration publishes); a name nobody registered, a system application, a private
// application and a shared one all get the same answer, status, type and body alike (but for the
// echoed name); with a token, the applications the principal sees answer and every other name is
// answered as a missing one. The service's health URL from the registry works with no token.
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type CallResult } from '@svc/testkit';
import { KEYS } from '../../src/cluster/records.ts';
import { startCluster, type TestCluster } from '../cluster/harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

const HOST = 'l1-node';
const SERVICE = 'l1-web';
const SYSTEM_APP = 'l1-sys';
const PRIVATE_APP = 'l1-private';
const SHARED_APP = 'l1-shared';
const MISSING_APP = 'l1-nobody-registered-this';

let cluster: TestCluster;
let adminToken: string;
let developerToken: string;

const api = () => cluster.node(HOST).daemon.rest();

beforeAll(async () => {
  cluster = await startCluster({
    // main: false: no leader rewrites the topology this test writes
    nodes: [
      {
        host: HOST,
        main: false,
        files: { [`apps/${SYSTEM_APP}.yaml`]: `name: ${SYSTEM_APP}\ncommand: sleep 600\nsystem: true\n` },
      },
    ],
    ttlSeconds: 3,
  });
  await cluster.waitForReports([HOST]);
  adminToken = await cluster.node(HOST).daemon.token('admin');
  developerToken = await cluster.node(HOST).daemon.token('developer');
  for (const [name, permission] of [
    [PRIVATE_APP, 11],
    [SHARED_APP, 21],
  ] as const) {
    const r = await api().call('PUT', `/svc/app/${name}`, {
      token: adminToken,
      body: { command: 'sleep 600', permission },
    });
    expect(r.status, r.text()).toBe(200);
  }
  const task = {
    replication: 1,
    port: await freePort(),
    memoryMB: 0,
    condition: {},
    content: { command: 'sleep 600' },
  };
  const defined = await api().call('PUT', `/svc/cluster/app/${SERVICE}`, { token: adminToken, body: task });
  expect(defined.status, defined.text()).toBe(200);
  await cluster.registry
    .put(KEYS.topology(HOST))
    .value(JSON.stringify([{ app: SERVICE, schedule_time: '2026-11-28 00:00:00+00' }]));
  await waitFor(() => cluster.get(KEYS.service(SERVICE, HOST)), {
    timeoutMs: 30_000,
    what: 'service record',
  });
}, 120_000);
afterAll(async () => {
  await cluster?.close();
}, 60_000);

/** What a caller learns from an answer about `name`: everything but the echoed name. */
function seen(name: string, r: CallResult): { status: number; contentType: string; body: string } {
  return { status: r.status, contentType: r.contentType, body: r.text().replaceAll(name, '<name>') };
}

const health = (name: string, token?: string) =>
  api().call('GET', `/svc/app/${name}/health`, token === undefined ? {} : { token });

describe('L1: what the public health endpoint tells a caller without a token', () => {
  it('answers a registered service, with the URL service registration published', async () => {
    const r = await health(SERVICE);
    expect(r.status).toBe(200);
    expect(r.text()).toBe('0');
    const record = JSON.parse((await cluster.get(KEYS.service(SERVICE, HOST)))!) as { health_url: string };
    const daemon = cluster.node(HOST).daemon;
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      request(record.health_url, { ca: daemon.ca }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      })
        .on('error', reject)
        .end();
    });
    expect({ status, body }).toEqual({ status: 200, body: '0' });
  });

  it('gives a missing name, a system app, a private app and a shared app the same answer', async () => {
    const missing = seen(MISSING_APP, await health(MISSING_APP));
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toEqual({
      error: 'app_not_found',
      message: 'no application named <name>',
    });
    for (const name of [SYSTEM_APP, PRIVATE_APP, SHARED_APP]) {
      // they exist and run (the admin sees them healthy)
      expect((await health(name, adminToken)).status, name).toBe(200);
      expect(seen(name, await health(name)), name).toEqual(missing);
    }
  });

  it('with a token: the apps the principal sees; every other name as a missing one', async () => {
    const missing = seen(MISSING_APP, await health(MISSING_APP, developerToken));
    expect(missing.status).toBe(404);
    // the developer sees the shared app and the service, not the admin's private app nor the system app
    expect((await health(SHARED_APP, developerToken)).status).toBe(200);
    expect((await health(SERVICE, developerToken)).status).toBe(200);
    for (const name of [SYSTEM_APP, PRIVATE_APP])
      expect(seen(name, await health(name, developerToken)), name).toEqual(missing);
    expect((await health(SYSTEM_APP, adminToken)).status).toBe(200);
  });

  it('verifies a token that is sent', async () => {
    const r = await health(SERVICE, 'not-a-token');
    expect(r.status).toBe(401);
  });
});
