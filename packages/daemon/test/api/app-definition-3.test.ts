// The application definition on the wire is App Mesh 3.0's (field names, types the 3.0 SDKs read),
// stored files of the shape before it are rewritten at daemon start, and depends_on holds an app
// until its dependencies run. Against a real svcd with real children.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';
import { killGroup, ok, processAlive, type AppView } from '../robustness/helpers.ts';

/** A stored work/apps/<name>.yaml as the daemon wrote it before the 3.0 names (today's shape). */
const LEGACY_FILE = [
  'name: legacy',
  'command: sleep 600',
  'shell: false',
  'env:',
  '  A: "1"',
  'status: 0',
  'stdout_cache_num: 4',
  'start_time: "2030-01-01T00:00:00.000Z"',
  'start_interval_seconds: "0 3 * * *"',
  'cron: true',
  'behavior:',
  '  exit: standby',
  '  control:',
  '    "2": restart',
  'retention: 45',
  'permission:',
  '  - bob',
  'owner: test-admin',
  'system: false',
  'register_time: "2024-01-01T00:00:00.000Z"',
  'sec_env:',
  '  TOKEN: plain-secret-value',
  '',
].join('\n');

let daemon: TestDaemon;
let admin: string;
const pgids: number[] = [];
beforeAll(async () => {
  daemon = await startTestDaemon({ files: { 'work/apps/legacy.yaml': LEGACY_FILE } });
  admin = await daemon.token('admin');
});
afterAll(async () => {
  for (const pgid of pgids) killGroup(pgid);
  await daemon?.close();
});

const get = async (name: string): Promise<AppView> =>
  ok<AppView>(await daemon.rest().call('GET', `/svc/app/${name}`, { token: admin }), `GET ${name}`);
const put = (name: string, body: Record<string, unknown>) =>
  daemon.rest().call('PUT', `/svc/app/${name}`, { token: admin, body: { name, ...body } });
const OLD_NAMES = [
  'status',
  'sec_env',
  'stdout_cache_num',
  'start_interval_seconds',
  'cron',
  'retention',
  'owner',
];

/**
 * What the 3.0 Python SDK's App(data) keeps of a value: its getters drop a value of the wrong
 * type (an ISO string where it reads an int, a number where it reads a string). A view whose every
 * typed field survives is one the SDK parses without losing anything.
 */
function sdkDrops(view: AppView): string[] {
  const ints = [
    'start_time',
    'end_time',
    'stdout_backup_count',
    'permission',
    'pid',
    'register_time',
    'starts',
    'memory',
    'fd',
    'stdout_file_count',
    'last_start_time',
    'last_exit_time',
    'next_start_time',
    'health',
    'return_code',
    'task_id',
  ];
  const strings = [
    'name',
    'command',
    'description',
    'working_dir',
    'docker_image',
    'cron_schedule',
    'stop_grace_period',
    'health_check_cmd',
    'owner_principal_id',
    'owner_display_name',
    'pid_user',
    'pstree',
    'last_error',
    'task_status',
    'subscription_id',
  ];
  const drops: string[] = [];
  for (const key of ints)
    if (key in view && view[key] !== null && !Number.isInteger(view[key])) drops.push(key);
  for (const key of strings)
    if (key in view && view[key] !== null && typeof view[key] !== 'string') drops.push(key);
  const daily = view['daily_limitation'] as Record<string, unknown> | undefined;
  if (daily !== undefined)
    for (const key of ['daily_start', 'daily_end'])
      if (!Number.isInteger(daily[key])) drops.push(`daily_limitation.${key}`);
  const limit = view['resource_limit'] as Record<string, unknown> | undefined;
  if (limit !== undefined)
    for (const [key, value] of Object.entries(limit))
      if (!Number.isInteger(value)) drops.push(`resource_limit.${key}`);
  for (const key of ['shell', 'session_login', 'enabled'])
    if (key in view && typeof view[key] !== 'boolean') drops.push(key);
  return drops;
}

describe('stored applications of the old shape', () => {
  it('are rewritten with 3.0 names at daemon start and served in them', async () => {
    const view = await get('legacy');
    expect(view).toMatchObject({
      enabled: false,
      stdout_backup_count: 4,
      cron_schedule: '0 3 * * *',
      stop_grace_period: '45',
      behavior: { exit: 'standby', exit_code_actions: { '2': 'restart' } },
      permission: 11,
      owner_principal_id: 'test-admin',
      start_time: Date.UTC(2030, 0, 1) / 1000,
      register_time: Date.UTC(2024, 0, 1) / 1000,
      secret_env: { TOKEN: '******' },
    });
    for (const name of OLD_NAMES) expect(view).not.toHaveProperty(name);
    const apps = join(daemon.workDir, 'apps');
    const text = readFileSync(join(apps, 'legacy.yaml'), 'utf8');
    expect(text).toMatch(/^enabled: false$/m);
    expect(text).toMatch(/^cron_schedule: /m);
    for (const name of OLD_NAMES) expect(text).not.toMatch(new RegExp(`^${name}:`, 'm'));
    expect(text).not.toContain('plain-secret-value'); // encrypted by the rewrite
    expect(text).toMatch(/TOKEN: enc:v1:/);
    expect(readdirSync(apps).filter((file) => file !== 'legacy.yaml' && file.includes('legacy'))).toEqual([]);
  });
});

describe('the definition as App Mesh 3.0 clients send and read it', () => {
  // What App.to_dict() of the 3.0 SDK sends for an app with every user-settable field set.
  const sdkBody = {
    name: 'sdk-app',
    command: 'sleep 600',
    shell: true,
    session_login: false,
    description: 'from the SDK',
    metadata: { job: 1 },
    working_dir: '/tmp',
    enabled: false,
    stdout_backup_count: 2,
    start_time: 1893456000,
    end_time: 1924992000,
    interval: 'PT30M',
    daily_limitation: { daily_start: 32400, daily_end: 64800 },
    stop_grace_period: 'PT20S',
    health_check_cmd: 'true',
    depends_on: ['sdk-dep'],
    permission: 22,
    behavior: { exit: 'restart', exit_code_actions: { '0': 'standby', '9': 'remove' } },
    env: { A: 'x' },
    secret_env: { S: 'hidden-value' },
    resource_limit: { cpu_shares: 100, memory_mb: 64, memory_virt_mb: 128 },
  };

  it('registers, reads back in 3.0 names and types the SDK keeps, and round-trips GET then PUT', async () => {
    const registered = ok<AppView>(await put('sdk-app', sdkBody), 'register');
    const view = await get('sdk-app');
    expect(view).toMatchObject({
      ...sdkBody,
      interval: 1800,
      stop_grace_period: 'PT20S',
      secret_env: { S: '******' },
      owner_principal_id: 'test-admin',
      owner_display_name: 'test-admin',
    });
    expect(registered['register_time']).toBe(view['register_time']);
    expect(Math.abs(Number(view['register_time']) - Date.now() / 1000)).toBeLessThan(120);
    expect(sdkDrops(view)).toEqual([]);
    expect(JSON.stringify(view)).not.toContain('hidden-value');
    // The SDK's App(view).to_dict() sends everything back, runtime fields included.
    const again = ok<AppView>(await put('sdk-app', { ...view, description: 'edited' }), 're-register');
    expect(again).toMatchObject({
      ...sdkBody,
      description: 'edited',
      interval: 1800,
      stop_grace_period: 'PT20S',
      secret_env: { S: '******' },
    });
    // The masked secret sent back kept its stored value (encrypted, not the mask).
    const stored = readFileSync(join(daemon.workDir, 'apps', 'sdk-app.yaml'), 'utf8');
    expect(stored).not.toContain('hidden-value');
    expect(stored).toMatch(/^ {2}S: enc:v1:/m);
    expect(stored).not.toContain('******');
  });

  it('accepts the old names as input aliases, answers in the new ones', async () => {
    const view = ok<AppView>(
      await put('old-client', {
        command: 'sleep 600',
        status: 0,
        stdout_cache_num: 1,
        start_interval_seconds: 60,
        behavior: { exit: 'standby', control: { '3': 'remove' } },
      }),
      'register',
    );
    expect(view).toMatchObject({ enabled: false, stdout_backup_count: 1, interval: 60 });
    expect(view['behavior']).toEqual({ exit: 'standby', exit_code_actions: { '3': 'remove' } });
    for (const name of OLD_NAMES) expect(view).not.toHaveProperty(name);
  });

  it.each([
    [{ permission: ['bob'] }, 'permission: must be a two-digit number'],
    [{ permission: 44 }, 'permission: tens digit'],
    [{ status: 1, enabled: true }, 'status: is the old name of enabled'],
    [{ interval: '*/5 * * * *' }, 'use cron_schedule for a cron expression'],
    [{ interval: 60, cron_schedule: '@daily' }, 'give either interval or cron_schedule'],
    [{ depends_on: 'db' }, 'depends_on: must be an array'],
    [{ depends_on: ['../etc'] }, 'depends_on[0]: must be an application name'],
    [
      { depends_on: Array.from({ length: 65 }, (_, i) => `d${i}`) },
      'depends_on: must have at most 64 entries',
    ],
    [{ depends_on: ['bad-self'] }, 'cannot depend on itself'],
    [{ docker_image: 'x'.repeat(2000) }, 'docker_image: must be at most 1024 bytes'],
    [{ resource_limit: { memory_mb: 64, memory_virt_mb: 32 } }, 'memory_virt_mb: must be at least memory_mb'],
    [{ daily_limitation: { daily_start: -5, daily_end: 10 } }, 'daily_limitation.daily_start'],
    [{ stop_grace_period: 'forever' }, 'stop_grace_period: must be whole seconds'],
  ])('refuses %j with a 400 naming the field', async (extra, message) => {
    const r = await put('bad-self', { command: 'true', ...extra });
    expect(r.status, r.text()).toBe(400);
    expect(r.json<{ error: string; message: string }>().error).toBe('invalid_app');
    expect(r.json<{ message: string }>().message).toContain(message);
    expect((await daemon.rest().call('GET', '/svc/app/bad-self', { token: admin })).status).toBe(404);
  });

  it('accepts docker_image and reports that it cannot run it', async () => {
    ok(await put('boxed', { command: 'true', docker_image: 'alpine:3' }), 'register');
    const view = await waitFor(
      async () => {
        const v = await get('boxed');
        return typeof v['last_error'] === 'string' ? v : undefined;
      },
      { what: 'last_error of the docker app' },
    );
    expect(view['last_error']).toContain('docker_image');
    expect(view['pid']).toBeUndefined();
    expect(view['docker_image']).toBe('alpine:3');
  });
});

describe('depends_on', () => {
  it('holds an app until its dependency is registered, enabled, running and healthy', async () => {
    const web = ok<AppView>(await put('web', { command: 'sleep 600', depends_on: ['db'] }), 'register web');
    expect(web['pid']).toBeUndefined();
    expect((await get('web'))['waiting_for']).toEqual(['db']);

    ok(await put('db', { command: 'sleep 600', enabled: false }), 'register db disabled');
    expect((await get('web'))['waiting_for']).toEqual(['db']); // registered but disabled

    ok(await daemon.rest().call('POST', '/svc/app/db/enable', { token: admin }), 'enable db');
    const running = await waitFor(
      async () => {
        const v = await get('web');
        return typeof v['pid'] === 'number' ? v : undefined;
      },
      { what: 'web to start once db runs' },
    );
    pgids.push(running['pid'] as number, (await get('db'))['pid'] as number);
    expect(running).not.toHaveProperty('waiting_for');
  });

  it('refuses a registration that would close a cycle', async () => {
    // db <- web exists; db depending on web closes db -> web -> db.
    const r = await put('db', { command: 'sleep 600', depends_on: ['web'] });
    expect(r.status, r.text()).toBe(400);
    expect(r.json<{ message: string }>().message).toBe('depends_on: dependency cycle db -> web -> db');
    expect((await get('db'))['depends_on']).toBeUndefined(); // the stored definition is unchanged
    const three = await put('c', { command: 'true', depends_on: ['web'] });
    expect(three.status).toBe(200);
    const longer = await put('db', { command: 'sleep 600', depends_on: ['c'] });
    expect(longer.json<{ message: string }>().message).toBe(
      'depends_on: dependency cycle db -> c -> web -> db',
    );
  });

  it('a dependency that stops leaves the dependent running, but it is not restarted until satisfied', async () => {
    const before = await get('web');
    const pid = before['pid'] as number;
    ok(await daemon.rest().call('POST', '/svc/app/db/disable', { token: admin }), 'disable db');
    expect(processAlive(pid)).toBe(true);
    expect((await get('web'))['pid']).toBe(pid);
    // The dependent crashes: its restart waits for db.
    process.kill(-pid, 'SIGKILL');
    const waiting = await waitFor(
      async () => {
        const v = await get('web');
        return Array.isArray(v['waiting_for']) ? v : undefined;
      },
      { what: 'web to wait for db after its crash' },
    );
    expect(waiting['waiting_for']).toEqual(['db']);
    expect(waiting['pid']).toBeUndefined();
    ok(await daemon.rest().call('POST', '/svc/app/db/enable', { token: admin }), 'enable db');
    const restarted = await waitFor(
      async () => {
        const v = await get('web');
        return typeof v['pid'] === 'number' ? v : undefined;
      },
      { what: 'web to restart once db runs again' },
    );
    pgids.push(restarted['pid'] as number, (await get('db'))['pid'] as number);
    expect(restarted['pid']).not.toBe(pid);
  });
});
