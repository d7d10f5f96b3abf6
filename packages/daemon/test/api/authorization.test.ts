// The authorization matrix, generated from spec/access.json: every operation × every built-in role
// (plus the `developer` test principal that owns apps) × REST and TCP, plus no token over REST,
// against a real daemon. The rule of each operation comes from access.json; the expectation is this
// file's own reading of the rule kinds (written from spec/access.json's `kinds`, not from
// auth/access-rules.ts), down to the exact status: the success status when allowed, 403 when the
// caller lacks the permission or may not act on an application it sees, 404 for an application it
// does not see (a private app of another principal, a system app, a name nobody registered), 403
// system_app for a change to a system app (process-key operations: the key's own refusal). Per-application
// operations are tried on apps each role sees and does not see, on a system app and on a missing
// name; every 404 must be word for word a missing app's, and no refusal may name the owner.
// Every success body is checked against the operation's declared response schema.
// WSS shares the dispatcher with TCP (see same-over-transports.test.ts).
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_ROLES, type Permission } from '@svc/protocol';
import {
  DEVELOPER_ROLE,
  TEST_PRINCIPALS,
  startEtcd,
  startTestDaemon,
  type ApiClient,
  type CallOptions,
  type TestDaemon,
  type TestEtcd,
  type TestRole,
} from '@svc/testkit';
import { operations } from '../../src/api/operations/index.ts';

type AppLocator = { from: 'path' } | { from: 'body-copy'; needs: Permission };
type Rule =
  | { kind: 'public' | 'authenticated' }
  | { kind: 'permission'; permission: Permission; also?: Permission[]; orProcessKeyOf?: 'agent' }
  | {
      kind: 'app';
      permission: Permission;
      app: AppLocator;
      missing: 'not-found' | 'new';
      changes: boolean;
      withQuery?: { name: string; permission: Permission };
    }
  | { kind: 'subscription-owner'; permission: Permission; app: 'path' | 'any' }
  | { kind: 'process-key'; app: 'path' | 'agent' }
  | { kind: 'visible-app' };

interface AccessEntry {
  method: string;
  path: string;
  success: number;
  rule: Rule;
}

const ACCESS = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../../../spec/access.json'), 'utf8'),
) as { operations: Record<string, AccessEntry> };

const WORKER = join(import.meta.dirname, '../tasks/worker.ts');
/** Scratch directory of the upload rows (removed in afterAll). */
const MATRIX_DIR = mkdtempSync(join(tmpdir(), 'svc-authz-matrix-'));
const ROLES: TestRole[] = ['admin', 'viewer', 'maintenance', 'nobody', 'developer'];
type Transport = 'rest' | 'tcp';

type Others = 'deny' | 'read' | 'write';
/** Owners of the fixture applications and what others may do (tens digit of `permission`). */
interface Fixture {
  owner: string | undefined;
  others: Others;
  system?: true;
}
const APPS: Record<string, Fixture> = {
  'admin-app': { owner: TEST_PRINCIPALS.admin.sub, others: 'deny' },
  'dev-app': { owner: TEST_PRINCIPALS.developer.sub, others: 'deny' },
  'shared-app': { owner: TEST_PRINCIPALS.admin.sub, others: 'write' },
  'read-app': { owner: TEST_PRINCIPALS.admin.sub, others: 'read' },
  'worker-app': { owner: TEST_PRINCIPALS.admin.sub, others: 'deny' },
};
/** A bundled system application (SVC_SYSTEM_APPS_DIR of the test daemon): svc-admin's alone. */
const SYSTEM_APP = 'sys-app';
const SYSTEM_FIXTURE: Fixture = { owner: undefined, others: 'deny', system: true };
/** A name nobody registers. */
const MISSING_APP = 'no-such-app';
const PERMISSION_DIGITS: Record<Others, number> = { deny: 11, read: 21, write: 31 };
/** What a `read` share extends to others (spec/contract.md §6); `write` extends everything. */
const READ_SHARE: readonly Permission[] = [
  'app-view',
  'app-output-view',
  'app-subscribe',
  'app-run-async',
  'app-run-sync',
];

interface Call {
  path: string;
  options?: Omit<CallOptions, 'token'>;
  /** The fixture app the rule looks at (undefined: a new app, owned by the caller). */
  app?: string | undefined;
  /** For subscription-owner rules: who created the subscription used. */
  subscriptionOwner?: TestRole;
}

interface Case {
  /** Shown in the test name. */
  label: string;
  /** The concrete call for `role` over `transport`; may create what it needs first (as admin). */
  call(role: TestRole, transport: Transport): Promise<Call>;
}

let daemon: TestDaemon;
let etcd: TestEtcd | undefined;
const tokens = new Map<TestRole, string>();
const tcpClients = new Map<TestRole, ApiClient>();

async function admin(method: string, path: string, options: Omit<CallOptions, 'token'> = {}): Promise<void> {
  const r = await daemon.rest().call(method, path, { ...options, token: tokens.get('admin') });
  expect(r.status, `${method} ${path}: ${r.text()}`).toBe(200);
}

async function clientFor(transport: Transport, role: TestRole): Promise<ApiClient> {
  if (transport === 'rest') return daemon.rest();
  let client = tcpClients.get(role); // TCP pins one principal per connection
  if (client === undefined) tcpClients.set(role, (client = await daemon.tcp()));
  return client;
}

const fixed =
  (call: Call): Case['call'] =>
  () =>
    Promise.resolve(call);

/** A resource per role and transport, so that every allowed caller can consume its own. */
const own = (role: TestRole, transport: Transport): string => `${role}-${transport}`;

/**
 * A subscription of `role` to `app` on its TCP connection, or admin's when `role` cannot subscribe
 * (or when `by` says admin).
 */
async function subscriptionFor(
  role: TestRole,
  transport: Transport,
  app: string,
  by: TestRole = role,
): Promise<Call> {
  const path = app === '*' ? '/svc/subscribe' : `/svc/app/${app}/subscribe`;
  for (const owner of [by, 'admin'] as const) {
    const client = await clientFor('tcp', owner);
    const r = await client.call('POST', path, { token: tokens.get(owner), query: { events: 'EXIT' } });
    if (r.status === 200) {
      const id = r.json<{ subscription_id: string }>().subscription_id;
      return {
        path: app === '*' ? '/svc/subscribe' : `/svc/app/${app}/subscribe`,
        options: { query: { subscription_id: id } },
        subscriptionOwner: owner,
      };
    }
  }
  throw new Error(`no subscription could be made for ${role} over ${transport}`);
}

/** A cluster task nothing is placed for (replication 0): the cluster rows change no process. */
const IDLE_TASK = { replication: 0, port: 0, memoryMB: 0, condition: {}, content: { command: 'sleep 60' } };

/** Each caller that may deletes a task of its own, created first by admin. */
async function clusterTaskFor(role: TestRole, transport: Transport): Promise<Call> {
  const path = `/svc/cluster/app/del-${own(role, transport)}`;
  await admin('PUT', path, { body: IDLE_TASK });
  return { path };
}

const CASES: Record<string, Case[]> = {
  listClusterApplications: [{ label: 'list', call: fixed({ path: '/svc/cluster/applications' }) }],
  getClusterApplication: [{ label: 'matrix-task', call: fixed({ path: '/svc/cluster/app/matrix-task' }) }],
  putClusterApplication: [
    {
      label: 'own task',
      call: (role, t) =>
        Promise.resolve({ path: `/svc/cluster/app/put-${own(role, t)}`, options: { body: IDLE_TASK } }),
    },
  ],
  deleteClusterApplication: [{ label: 'own task', call: clusterTaskFor }],
  listClusterNodes: [{ label: 'nodes', call: fixed({ path: '/svc/cluster/nodes' }) }],
  getClusterTopology: [{ label: 'topology', call: fixed({ path: '/svc/cluster/topology' }) }],
  listApplications: [{ label: 'list', call: fixed({ path: '/svc/applications' }) }],
  getApplication: ['admin-app', 'dev-app', 'shared-app', 'read-app', SYSTEM_APP, MISSING_APP].map((app) => ({
    label: app,
    call: fixed({ path: `/svc/app/${app}`, app }),
  })),
  registerApplication: [
    {
      label: 'new app',
      call: (role, t) =>
        Promise.resolve({
          path: `/svc/app/new-${own(role, t)}`,
          options: { body: { command: 'sleep 600' } },
        }),
    },
    {
      label: "replace another's app",
      call: fixed({
        path: '/svc/app/admin-app',
        options: { body: { command: 'sleep 600' } },
        app: 'admin-app',
      }),
    },
    {
      label: 'replace a shared app',
      call: fixed({
        path: '/svc/app/shared-app',
        options: { body: { command: 'sleep 600', permission: PERMISSION_DIGITS.write } },
        app: 'shared-app',
      }),
    },
    {
      label: 'replace the system app',
      call: fixed({
        path: `/svc/app/${SYSTEM_APP}`,
        options: { body: { command: 'sleep 600' } },
        app: SYSTEM_APP,
      }),
    },
  ],
  deleteApplication: [
    {
      label: "developer's app",
      async call(role, t) {
        const name = `del-${own(role, t)}`;
        const r = await daemon.rest().call('PUT', `/svc/app/${name}`, {
          token: tokens.get('developer'),
          body: { command: 'sleep 600' },
        });
        expect(r.status, r.text()).toBe(200);
        APPS[name] = { owner: TEST_PRINCIPALS.developer.sub, others: 'deny' };
        return { path: `/svc/app/${name}`, app: name };
      },
    },
    {
      label: "admin's private app",
      async call(role, t) {
        const name = `dela-${own(role, t)}`;
        await admin('PUT', `/svc/app/${name}`, { body: { command: 'sleep 600' } });
        APPS[name] = { owner: TEST_PRINCIPALS.admin.sub, others: 'deny' };
        return { path: `/svc/app/${name}`, app: name };
      },
    },
    { label: 'the system app', call: fixed({ path: `/svc/app/${SYSTEM_APP}`, app: SYSTEM_APP }) },
    { label: 'a missing app', call: fixed({ path: `/svc/app/${MISSING_APP}`, app: MISSING_APP }) },
  ],
  enableApplication: ['dev-app', 'admin-app', 'read-app', 'shared-app', SYSTEM_APP, MISSING_APP].map(
    (app) => ({
      label: app,
      call: fixed({ path: `/svc/app/${app}/enable`, app }),
    }),
  ),
  disableApplication: [
    {
      label: 'a fresh app of admin',
      async call(role, t) {
        const name = `dis-${own(role, t)}`;
        await admin('PUT', `/svc/app/${name}`, { body: { command: 'sleep 600' } });
        APPS[name] = { owner: TEST_PRINCIPALS.admin.sub, others: 'deny' };
        return { path: `/svc/app/${name}/disable`, app: name };
      },
    },
    { label: 'the system app', call: fixed({ path: `/svc/app/${SYSTEM_APP}/disable`, app: SYSTEM_APP }) },
    { label: 'a missing app', call: fixed({ path: `/svc/app/${MISSING_APP}/disable`, app: MISSING_APP }) },
  ],
  getApplicationHealth: ['admin-app', 'dev-app', 'read-app', SYSTEM_APP, MISSING_APP].map((app) => ({
    label: app,
    call: fixed({ path: `/svc/app/${app}/health`, app }),
  })),
  getApplicationOutput: ['admin-app', 'dev-app', 'shared-app', 'read-app', SYSTEM_APP, MISSING_APP].map(
    (app) => ({ label: app, call: fixed({ path: `/svc/app/${app}/output`, app }) }),
  ),
  runApplication: [
    { label: 'new command', call: fixed({ path: '/svc/app/run', options: { body: { command: 'true' } } }) },
    ...['dev-app', 'admin-app', MISSING_APP].map((app) => ({
      label: `copy of ${app}`,
      call: fixed({ path: '/svc/app/run', options: { body: { name: app } }, app }),
    })),
  ],
  syncRunApplication: [
    {
      label: 'new command',
      call: fixed({ path: '/svc/app/syncrun', options: { body: { command: 'true' } } }),
    },
  ],
  runTask: [
    {
      label: 'worker-app',
      call: fixed({
        path: '/svc/app/worker-app/task',
        options: { rawBody: 'payload', query: { timeout: '60' } },
        app: 'worker-app',
      }),
    },
  ],
  // (runTask is not tried on an app without a worker: the task would only time out. Its rule is the
  // same kind as cancelTasks', tried on every kind of app here.)
  cancelTasks: ['worker-app', 'dev-app', SYSTEM_APP, MISSING_APP].map((app) => ({
    label: app,
    call: fixed({ path: `/svc/app/${app}/task`, app }),
  })),
  fetchTask: [
    {
      label: 'no key',
      call: fixed({ path: '/svc/app/worker-app/task', options: { query: { timeout: '0' } } }),
    },
  ],
  returnTaskResult: [
    {
      label: 'no key',
      call: fixed({
        path: '/svc/app/worker-app/task',
        options: { rawBody: 'x', headers: { 'x-task-id': 't1' } },
      }),
    },
  ],
  listLabels: [{ label: 'all', call: fixed({ path: '/svc/labels' }) }],
  setLabel: [{ label: 'zone', call: fixed({ path: '/svc/label/zone', options: { query: { value: 'a' } } }) }],
  deleteLabel: [
    {
      label: 'own label',
      async call(role, t) {
        await admin('PUT', `/svc/label/del-${own(role, t)}`, { query: { value: 'x' } });
        return { path: `/svc/label/del-${own(role, t)}` };
      },
    },
  ],
  getConfig: [{ label: 'config', call: fixed({ path: '/svc/config' }) }],
  updateConfig: [
    {
      label: 'log level',
      call: fixed({ path: '/svc/config', options: { body: { BaseConfig: { LogLevel: 'INFO' } } } }),
    },
  ],
  getResources: [{ label: 'resources', call: fixed({ path: '/svc/resources' }) }],
  getSelf: [{ label: 'self', call: fixed({ path: '/svc/principal/self' }) }],
  getSelfAlias: [{ label: 'alias', call: fixed({ path: '/svc/self' }) }],
  getSelfPermissions: [{ label: 'permissions', call: fixed({ path: '/svc/principal/self/permissions' }) }],
  listRoles: [{ label: 'roles', call: fixed({ path: '/svc/roles' }) }],
  setRole: [
    {
      label: 'custom role',
      call: (role, t) =>
        Promise.resolve({ path: `/svc/role/set-${own(role, t)}`, options: { body: ['app-view'] } }),
    },
  ],
  deleteRole: [
    {
      label: 'own custom role',
      async call(role, t) {
        await admin('POST', `/svc/role/del-${own(role, t)}`, { body: ['app-view'] });
        return { path: `/svc/role/del-${own(role, t)}` };
      },
    },
  ],
  listPermissions: [{ label: 'permissions', call: fixed({ path: '/svc/permissions' }) }],
  listPrincipals: [{ label: 'principals', call: fixed({ path: '/svc/principals' }) }],
  setPrincipal: [
    {
      label: 'someone',
      call: fixed({ path: '/svc/principal/someone', options: { body: { roles: ['svc-viewer'] } } }),
    },
  ],
  deletePrincipal: [
    {
      label: 'own principal record',
      async call(role, t) {
        await admin('POST', `/svc/principal/del-${own(role, t)}`, { body: { roles: ['svc-viewer'] } });
        return { path: `/svc/principal/del-${own(role, t)}` };
      },
    },
  ],
  getAuthConfig: [{ label: 'public', call: fixed({ path: '/svc/auth/config' }) }],
  getProtectedResourceMetadata: [
    { label: 'public', call: fixed({ path: '/.well-known/oauth-protected-resource' }) },
  ],
  getOpenApi: [{ label: 'public', call: fixed({ path: '/openapi.json' }) }],
  subscribeApplication: ['admin-app', 'dev-app', 'read-app', SYSTEM_APP, MISSING_APP].map((app) => ({
    label: app,
    call: fixed({ path: `/svc/app/${app}/subscribe`, app }),
  })),
  subscribeAll: [{ label: 'all', call: fixed({ path: '/svc/subscribe' }) }],
  unsubscribeApplication: [
    { label: "own or admin's subscription", call: (role, t) => subscriptionFor(role, t, 'dev-app') },
    { label: "admin's subscription", call: (role, t) => subscriptionFor(role, t, 'dev-app', 'admin') },
  ],
  unsubscribeAll: [
    { label: "own or admin's subscription", call: (role, t) => subscriptionFor(role, t, '*') },
    { label: "admin's subscription", call: (role, t) => subscriptionFor(role, t, '*', 'admin') },
  ],
  getMetrics: [{ label: 'bearer', call: fixed({ path: '/svc/metrics' }) }],
  // Every caller that may writes its own scratch file (removed in afterAll) and reads a file every
  // host has; the /ws paths are App Mesh 3.0's data-channel aliases.
  ...Object.fromEntries(
    (['uploadFile', 'uploadFileDataChannel'] as const).map((id) => [
      id,
      [
        {
          label: 'scratch file',
          call: (role: TestRole, t: Transport) =>
            Promise.resolve({
              path: id === 'uploadFile' ? '/svc/file/upload' : '/svc/file/upload/ws',
              options: {
                rawBody: 'matrix',
                headers: { 'x-file-path': encodeURIComponent(`${MATRIX_DIR}/${id}-${own(role, t)}`) },
              },
            }),
        },
      ],
    ]),
  ),
  ...Object.fromEntries(
    (['downloadFile', 'downloadFileDataChannel'] as const).map((id) => [
      id,
      [
        {
          label: '/etc/hostname',
          call: fixed({
            path: id === 'downloadFile' ? '/svc/file/download' : '/svc/file/download/ws',
            options: { headers: { 'x-file-path': encodeURIComponent('/etc/hostname') } },
          }),
        },
      ],
    ]),
  ),
};

// ---------------------------------------------------------------------------------------------
// The reading of a rule

function permissionsOf(role: TestRole): ReadonlySet<Permission> {
  if (role === 'developer') return new Set(DEVELOPER_ROLE);
  if (role === 'nobody') return new Set();
  const builtin = TEST_PRINCIPALS[role].roles[0];
  return new Set(BUILTIN_ROLES[builtin]);
}

/** The fixture an app rule looks at: undefined for a name nobody registered. */
function fixtureOf(name: string): Fixture | undefined {
  return name === SYSTEM_APP ? SYSTEM_FIXTURE : APPS[name];
}

/**
 * Whether the role sees the app (kinds `app`, step 2): system apps svc-admin only; otherwise the
 * owner, everyone when shared (read or write), and holders of app-view-all or app-manage-all.
 */
function sees(role: TestRole, app: Fixture | undefined): boolean {
  if (app === undefined) return false;
  if (app.system === true) return role === 'admin';
  const has = (p: Permission): boolean => permissionsOf(role).has(p);
  return (
    app.owner === TEST_PRINCIPALS[role].sub ||
    app.others !== 'deny' ||
    has('app-view-all') ||
    has('app-manage-all')
  );
}

/** Step 3 on a seen app: app-manage-all widens which apps, app-view-all lets view (and subscribe to) any. */
function allowedOnApp(role: TestRole, permission: Permission, app: Fixture): boolean {
  const has = (p: Permission): boolean => permissionsOf(role).has(p);
  const owns = app.owner === TEST_PRINCIPALS[role].sub;
  const mine = owns || app.others === 'write' || (app.others === 'read' && READ_SHARE.includes(permission));
  if (permission === 'app-delete' && owns) return true;
  if (permission === 'app-view')
    return has('app-view-all') || has('app-manage-all') || (has('app-view') && mine);
  if (!has(permission)) return false;
  if (permission === 'app-subscribe') return mine || has('app-view-all') || has('app-manage-all');
  return mine || has('app-manage-all');
}

/** Step 1: the permission every caller needs, whatever the name (app-delete: none, the owner needs none). */
function holdsUpfront(role: TestRole, rule: Rule & { kind: 'app' }): boolean {
  const has = (p: Permission): boolean => permissionsOf(role).has(p);
  if (rule.app.from === 'body-copy') return has(rule.permission);
  if (rule.permission === 'app-delete') return true;
  if (rule.permission === 'app-view') return has('app-view') || has('app-view-all') || has('app-manage-all');
  return has(rule.permission);
}

/** The status `role` must get for `call` under `rule` (success = the operation's success status). */
function expectedStatus(rule: Rule, role: TestRole, call: Call, success: number): number {
  const has = (p: Permission): boolean => permissionsOf(role).has(p);
  switch (rule.kind) {
    case 'public':
    case 'authenticated':
      return success;
    case 'process-key':
      return rule.app === 'agent' ? 403 : 400; // a bearer is never a process key; 400: no X-Svc-Process-Key
    case 'permission':
      return has(rule.permission) && (rule.also ?? []).every(has) ? success : 403;
    case 'subscription-owner':
      // another principal's subscription is as unknown as one that does not exist
      return !has(rule.permission) ? 403 : call.subscriptionOwner === role ? success : 404;
    case 'visible-app':
      // no registered service here: the apps the role sees
      return sees(role, fixtureOf(call.app!)) ? success : 404;
    case 'app': {
      if (!holdsUpfront(role, rule)) return 403;
      if (call.app === undefined) return success; // a new app (the caller's own) or a new command
      const app = fixtureOf(call.app);
      if (!sees(role, app)) {
        if (rule.missing === 'not-found') return 404;
        if (app !== undefined) return 403; // registration over a name it cannot see
      }
      if (app?.system === true && rule.changes) return 403; // system_app, svc-admin included
      const subject = app ?? { owner: TEST_PRINCIPALS[role].sub, others: 'deny' as const };
      if (!allowedOnApp(role, rule.app.from === 'body-copy' ? rule.app.needs : rule.permission, subject))
        return 403;
      if (rule.withQuery !== undefined && call.options?.query?.[rule.withQuery.name] !== undefined)
        return allowedOnApp(role, rule.withQuery.permission, subject) ? success : 403;
      return success;
    }
  }
}

/**
 * A refusal about an app `role` does not see says nothing of it (never its owner, never "owned by
 * another principal"), and a 404 is word for word a missing app's.
 */
function checkRefusal(
  rule: Rule,
  role: TestRole | undefined,
  call: Call,
  status: number,
  body: { error: string; message: string },
): void {
  if ((rule.kind !== 'app' && rule.kind !== 'visible-app') || call.app === undefined) return;
  if (role === undefined || !sees(role, fixtureOf(call.app)))
    expect(body.message).not.toMatch(/owned by|test-admin|test-developer/);
  if (status === 404)
    expect(body).toEqual({ error: 'app_not_found', message: `no application named ${call.app}` });
}

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  // A cluster node (one etcd, this node alone): the /svc/cluster/* rows need a registry.
  etcd = await startEtcd();
  daemon = await startTestDaemon({
    env: { SVC_REGISTRY_URL: etcd.url, SVC_HOST_NAME: 'matrix-node' },
    files: { [`apps/${SYSTEM_APP}.yaml`]: `name: ${SYSTEM_APP}\ncommand: sleep 600\nsystem: true\n` },
  });
  for (const role of ROLES) tokens.set(role, await daemon.token(role));
  await admin('PUT', '/svc/cluster/app/matrix-task', { body: IDLE_TASK });
  for (const [name, { owner, others }] of Object.entries(APPS)) {
    const token = owner === TEST_PRINCIPALS.developer.sub ? tokens.get('developer') : tokens.get('admin');
    const body =
      name === 'worker-app'
        ? {
            command: `"${process.execPath}" "${WORKER}"`,
            env: { NODE_EXTRA_CA_CERTS: join(daemon.workDir, 'ssl', 'ca.pem'), WORKER_CONCURRENCY: '4' },
          }
        : { command: 'sleep 600', permission: PERMISSION_DIGITS[others] };
    const r = await daemon.rest().call('PUT', `/svc/app/${name}`, { token, body });
    expect(r.status, r.text()).toBe(200);
  }
});
afterAll(async () => {
  for (const client of tcpClients.values()) await client.close();
  await daemon?.close();
  await etcd?.close();
  await rm(MATRIX_DIR, { recursive: true, force: true });
});

describe('authorization of every operation for every role (from spec/access.json)', () => {
  it('has a case for every operation of access.json, and no case for an operation it lacks', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(ACCESS.operations).sort());
  });

  for (const [id, entry] of Object.entries(ACCESS.operations)) {
    const persistent = id.startsWith('subscribe') || id.startsWith('unsubscribe');
    for (const testCase of CASES[id] ?? []) {
      for (const transport of ['rest', 'tcp'] as const) {
        it(`${id} (${entry.method} ${entry.path}, ${testCase.label}) over ${transport}`, async () => {
          const { rule } = entry;
          const expected: Record<string, number> = {};
          const actual: Record<string, number> = {};
          for (const role of ROLES) {
            const call = await testCase.call(role, transport);
            // Subscriptions live on a persistent connection: over REST every caller gets 405.
            expected[role] =
              persistent && transport === 'rest' ? 405 : expectedStatus(rule, role, call, entry.success);
            const client = await clientFor(transport, role);
            const r = await client.call(entry.method, call.path, {
              ...call.options,
              token: tokens.get(role),
            });
            actual[role] = r.status;
            if (r.status === 403 || r.status === 404)
              checkRefusal(rule, role, call, r.status, r.json<{ error: string; message: string }>());
            // A success answers what the operation declares (its zod response schema).
            const declared = operations.find((op) => op.id === id)!.responses[0];
            if (r.status === entry.success && 'json' in declared) {
              const checked = declared.json.safeParse(r.json());
              expect(checked.success, `${id} answer: ${checked.error?.message ?? ''}`).toBe(true);
            }
            if (r.status === 403 && rule.kind !== 'process-key')
              expect(r.json<{ error: string }>().error).toBe(
                rule.kind === 'app' && rule.changes && call.app === SYSTEM_APP && role === 'admin'
                  ? 'system_app'
                  : 'forbidden',
              );
          }
          expect(actual).toEqual(expected);
          if (transport === 'tcp') return; // an unauthenticated TCP connection: same-over-transports
          const call = await testCase.call('nobody', transport);
          const anonymous = await daemon.rest().call(entry.method, call.path, call.options ?? {});
          if (rule.kind === 'public') expect(anonymous.status).toBe(entry.success);
          else if (rule.kind === 'process-key')
            expect(anonymous.status).toBe(expectedStatus(rule, 'nobody', call, entry.success));
          else if (rule.kind === 'visible-app') {
            // no registered service here: every name is answered as a missing one
            expect(anonymous.status).toBe(404);
            checkRefusal(rule, undefined, call, 404, anonymous.json<{ error: string; message: string }>());
          } else {
            expect(anonymous.status).toBe(401);
            expect(anonymous.headers['www-authenticate']).toMatch(
              /^Bearer realm="svc", resource_metadata="https:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/,
            );
            expect(anonymous.json<{ error: string }>().error).toBe('unauthorized');
          }
        });
      }
    }
  }
});
