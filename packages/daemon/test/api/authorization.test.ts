// Every endpoint × every role × REST and TCP, against a real daemon, with the expectation written
// from CONTRACT §5–§6 (not read from the daemon's own table): allowed, 403 (authenticated, not
// permitted) or 401. WSS shares the dispatcher with TCP (see same-over-transports.test.ts).
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_ROLES, type Permission } from '@svc/protocol';
import {
  DEVELOPER_ROLE,
  startTestDaemon,
  type ApiClient,
  type CallOptions,
  type TestDaemon,
  type TestRole,
} from '@svc/testkit';
import { operations } from '../../src/api/operations/index.ts';

let daemon: TestDaemon;
const MATRIX_FILE = join(tmpdir(), `svc-authz-matrix-${process.pid}.txt`);
beforeAll(async () => {
  daemon = await startTestDaemon();
  const admin = await daemon.token('admin');
  const developer = await daemon.token('developer');
  const rest = daemon.rest();
  for (const [name, token] of [
    ['admin-app', admin],
    ['dev-app', developer],
    ['dev-del-rest', developer],
    ['dev-del-tcp', developer],
  ] as const) {
    const r = await rest.call('PUT', `/svc/app/${name}`, { token, body: { command: 'sleep 600' } });
    expect(r.status, r.text()).toBe(200);
  }
});
afterAll(async () => {
  await daemon?.close();
  await rm(MATRIX_FILE, { force: true });
});

function has(role: TestRole, permission: Permission): boolean {
  if (role === 'developer') return DEVELOPER_ROLE.includes(permission);
  if (role === 'nobody') return false;
  const table: Record<string, readonly string[]> = BUILTIN_ROLES;
  return table[
    role === 'admin' ? 'svc-admin' : role === 'viewer' ? 'svc-viewer' : 'svc-maintenance'
  ]!.includes(permission);
}

type Rule = Permission | 'public' | 'authenticated' | 'process-key' | ((role: TestRole) => boolean);

interface Row {
  method: string;
  /** `{role}` / `{transport}` are replaced, for rows that create or delete a resource per caller. */
  path: string;
  rule: Rule;
  /** Where TCP differs: subscriptions need a persistent connection, so REST stops at 405 first. */
  tcpRule?: Rule;
  options?: Omit<CallOptions, 'token'>;
}

const ROLES: TestRole[] = ['admin', 'viewer', 'maintenance', 'nobody', 'developer'];

// CONTRACT §5. Ownership rows (§6): without app-manage-all only own or shared apps.
const ROWS: Row[] = [
  { method: 'GET', path: '/svc/applications', rule: 'app-view-all' },
  // GET one app: app-view-all, or app-view on an app one owns.
  { method: 'GET', path: '/svc/app/admin-app', rule: (r) => has(r, 'app-view-all') },
  { method: 'GET', path: '/svc/app/dev-app', rule: (r) => has(r, 'app-view-all') || r === 'developer' },
  { method: 'PUT', path: '/svc/app/new-app-{role}', rule: 'app-reg', options: { body: { command: 'true' } } },
  // replacing an app owned by someone else needs app-manage-all
  {
    method: 'PUT',
    path: '/svc/app/admin-app',
    rule: (r) => has(r, 'app-reg') && has(r, 'app-manage-all'),
    options: { body: { command: 'sleep 600' } },
  },
  {
    method: 'POST',
    path: '/svc/app/admin-app/disable',
    rule: (r) => has(r, 'app-control') && has(r, 'app-manage-all'),
  },
  {
    method: 'POST',
    path: '/svc/app/dev-app/enable',
    rule: (r) => has(r, 'app-control') && (has(r, 'app-manage-all') || r === 'developer'),
  },
  { method: 'GET', path: '/svc/app/admin-app/health', rule: 'public' },
  {
    method: 'GET',
    path: '/svc/app/admin-app/output',
    rule: (r) => has(r, 'app-output-view') && has(r, 'app-manage-all'),
  },
  {
    method: 'GET',
    path: '/svc/app/dev-app/output',
    rule: (r) => has(r, 'app-output-view') && (has(r, 'app-manage-all') || r === 'developer'),
  },
  { method: 'POST', path: '/svc/app/run', rule: 'app-run-async', options: { body: { command: 'true' } } },
  { method: 'POST', path: '/svc/app/syncrun', rule: 'app-run-sync', options: { body: { command: 'true' } } },
  { method: 'GET', path: '/svc/labels', rule: 'label-view' },
  { method: 'PUT', path: '/svc/label/zone', rule: 'label-set', options: { query: { value: 'a' } } },
  { method: 'DELETE', path: '/svc/label/nolabel', rule: 'label-delete' },
  { method: 'GET', path: '/svc/config', rule: 'config-view' },
  {
    method: 'POST',
    path: '/svc/config',
    rule: 'config-set',
    options: { body: { BaseConfig: { LogLevel: 'INFO' } } },
  },
  { method: 'GET', path: '/svc/resources', rule: 'host-resource-view' },
  { method: 'GET', path: '/svc/self', rule: 'authenticated' },
  { method: 'GET', path: '/svc/principal/self', rule: 'authenticated' },
  { method: 'GET', path: '/svc/principal/self/permissions', rule: 'authenticated' },
  { method: 'GET', path: '/svc/roles', rule: 'role-view' },
  { method: 'POST', path: '/svc/role/matrix-role', rule: 'role-set', options: { body: ['app-view'] } },
  { method: 'DELETE', path: '/svc/role/no-such-role', rule: 'role-delete' },
  { method: 'GET', path: '/svc/permissions', rule: 'permission-list' },
  { method: 'GET', path: '/svc/principals', rule: 'principal-list' },
  {
    method: 'POST',
    path: '/svc/principal/someone',
    rule: 'principal-set',
    options: { body: { roles: ['svc-viewer'] } },
  },
  { method: 'DELETE', path: '/svc/principal/someone-else', rule: 'principal-delete' },
  { method: 'GET', path: '/svc/auth/config', rule: 'public' },
  { method: 'GET', path: '/.well-known/oauth-protected-resource', rule: 'public' },
  { method: 'GET', path: '/openapi.json', rule: 'public' },
  // Events: over REST every caller with app-subscribe gets 405 (persistent connection required).
  {
    method: 'POST',
    path: '/svc/app/admin-app/subscribe',
    rule: 'app-subscribe',
    tcpRule: (r) => has(r, 'app-subscribe') && (has(r, 'app-view-all') || has(r, 'app-manage-all')),
  },
  { method: 'POST', path: '/svc/app/dev-app/subscribe', rule: 'app-subscribe' },
  {
    method: 'POST',
    path: '/svc/subscribe',
    rule: 'app-subscribe',
    tcpRule: (r) => has(r, 'app-subscribe') && has(r, 'app-view-all'),
  },
  {
    method: 'DELETE',
    path: '/svc/app/dev-app/subscribe',
    rule: 'app-subscribe',
    options: { query: { subscription_id: 'none' } },
  },
  {
    method: 'DELETE',
    path: '/svc/subscribe',
    rule: 'app-subscribe',
    options: { query: { subscription_id: 'none' } },
  },
  // Tasks: clients need app-run-task (the machine identity has not); workers use the process key.
  {
    method: 'POST',
    path: '/svc/app/admin-app/task',
    rule: (r) => has(r, 'app-run-task') && has(r, 'app-manage-all'),
    options: { rawBody: 'payload', query: { timeout: '1' } },
  },
  { method: 'DELETE', path: '/svc/app/admin-app/task', rule: 'app-run-task' },
  { method: 'GET', path: '/svc/app/admin-app/task', rule: 'process-key' },
  { method: 'PUT', path: '/svc/app/admin-app/task', rule: 'process-key', options: { rawBody: 'result' } },
  // File transfer: every role that may, writes one scratch file (removed in afterAll) and reads a
  // file every host has; /ws are the data-channel aliases of App Mesh 3.0's WSS clients.
  ...(['/svc/file/upload', '/svc/file/upload/ws'] as const).map((path): Row => ({
    method: 'POST',
    path,
    rule: 'file-upload',
    options: { rawBody: 'matrix', headers: { 'x-file-path': encodeURIComponent(MATRIX_FILE) } },
  })),
  ...(['/svc/file/download', '/svc/file/download/ws'] as const).map((path): Row => ({
    method: 'GET',
    path,
    rule: 'file-download',
    options: { headers: { 'x-file-path': encodeURIComponent('/etc/hostname') } },
  })),
  // Metrics: host-resource-view bearers, or the agent's process key (packages/agent/test/proxy.test.ts).
  { method: 'GET', path: '/svc/metrics', rule: 'host-resource-view' },
  // DELETE: the owner needs no permission; others need app-delete and app-manage-all.
  {
    method: 'DELETE',
    path: '/svc/app/dev-del-{transport}',
    rule: (r) => r === 'developer' || (has(r, 'app-delete') && has(r, 'app-manage-all')),
  },
];

function allowed(rule: Rule, role: TestRole): boolean {
  if (rule === 'public' || rule === 'authenticated' || rule === 'process-key') return true;
  if (typeof rule === 'function') return rule(role);
  return has(role, rule);
}

describe('authorization of every endpoint for every role', () => {
  it('covers every operation of the table', () => {
    const covered = new Set(
      ROWS.map(
        (r) =>
          `${r.method} ${r.path.replace(/\/(admin-app|dev-app|new-app-\{role\}|dev-del-\{transport\})/, '/{name}')}`,
      ),
    );
    const normalised = (p: string): string =>
      p
        .replace('/svc/label/zone', '/svc/label/{key}')
        .replace('/svc/label/nolabel', '/svc/label/{key}')
        .replace(/\/svc\/role\/[^/]+/, '/svc/role/{role}')
        .replace(/\/svc\/principal\/(?!self(?:\/|$))[^/]+/, '/svc/principal/{id}');
    const coveredOps = new Set([...covered].map(normalised));
    const missing = operations.map((o) => `${o.method} ${o.path}`).filter((k) => !coveredOps.has(k));
    expect(missing).toEqual([]);
  });

  const tcpClients = new Map<TestRole, ApiClient>();
  const clientFor = async (transport: 'rest' | 'tcp', role: TestRole): Promise<ApiClient> => {
    if (transport === 'rest') return daemon.rest();
    let client = tcpClients.get(role); // TCP pins one principal per connection
    if (client === undefined) tcpClients.set(role, (client = await daemon.tcp()));
    return client;
  };

  for (const row of ROWS) {
    for (const transport of ['rest', 'tcp'] as const) {
      it(`${row.method} ${row.path} over ${transport}`, async () => {
        const rule = transport === 'tcp' ? (row.tcpRule ?? row.rule) : row.rule;
        const path = (role: string): string =>
          row.path.replace('{role}', role).replace('{transport}', transport);
        const expected: Record<string, string> = {};
        const actual: Record<string, string> = {};
        // Deleting rows: let the denied roles try first, the allowed ones after.
        const order = [...ROLES].sort((a, b) => Number(allowed(rule, a)) - Number(allowed(rule, b)));
        for (const role of order) {
          const client = await clientFor(transport, role);
          const r = await client.call(row.method, path(role), {
            ...row.options,
            token: await daemon.token(role),
          });
          expected[role] = allowed(rule, role) ? 'allowed' : 'denied 403';
          actual[role] = r.status === 403 ? 'denied 403' : r.status === 401 ? 'denied 401' : 'allowed';
          if (r.status === 403)
            expect(r.json<{ error: string }>().error).toMatch(/forbidden|principal_tombstoned/);
          if (
            row.method === 'DELETE' &&
            row.path.startsWith('/svc/app/dev-del') &&
            actual[role] === 'allowed'
          )
            break;
        }
        for (const role of Object.keys(actual))
          expect({ role, outcome: actual[role] }).toEqual({ role, outcome: expected[role] });
        if (transport === 'tcp') return; // an unauthenticated TCP connection is covered in same-over-transports
        const anonymous = await daemon.rest().call(row.method, path('anonymous'), row.options ?? {});
        if (rule === 'public' || rule === 'process-key') expect(anonymous.status).not.toBe(401);
        else {
          expect(anonymous.status).toBe(401);
          expect(anonymous.headers['www-authenticate']).toMatch(
            /^Bearer realm="svc", resource_metadata="https:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/,
          );
          expect(anonymous.json<{ error: string }>().error).toBe('unauthorized');
        }
      });
    }
  }
});
