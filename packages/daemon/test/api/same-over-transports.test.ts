// One operation suite, run over HTTPS REST, WSS and TLS TCP against one real daemon: the results
// (status, error code, normalised body, API headers) must be identical on all three.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTestDaemon,
  type ApiClient,
  type CallOptions,
  type TestDaemon,
  type TestRole,
} from '@svc/testkit';

let daemon: TestDaemon;
beforeAll(async () => {
  daemon = await startTestDaemon();
});
afterAll(async () => {
  await daemon?.close();
});

type Kind = 'rest' | 'wss' | 'tcp';

/** Per transport, a client per role (WSS pins the principal at upgrade, so one connection per role). */
async function clientsFor(kind: Kind): Promise<(role: TestRole | 'anonymous') => Promise<ApiClient>> {
  const cache = new Map<string, ApiClient>();
  return async (role) => {
    const hit = cache.get(role);
    if (hit !== undefined) return hit;
    let client: ApiClient;
    if (kind === 'rest') client = daemon.rest();
    else if (kind === 'tcp') client = await daemon.tcp();
    else client = await daemon.wss(role === 'anonymous' ? undefined : await daemon.token(role));
    cache.set(role, client);
    return client;
  };
}

/** Fields that legitimately differ between runs (times, pids, uuids, names that embed the transport). */
function normalise(value: unknown, kind: Kind): unknown {
  const volatile = new Set([
    'pid',
    'process_uuid',
    'register_time',
    'last_start_time',
    'last_exit_time',
    'next_start_time',
    'memory',
    'cpu',
    'expires_at',
    'stdout_file_count',
    'fd',
    'pstree',
    'pid_user',
    'starts',
    'health',
    'return_code',
    'last_error',
    'fd',
  ]);
  if (Array.isArray(value)) return value.map((v) => normalise(v, kind));
  if (typeof value === 'string') return value.replaceAll(`-${kind}`, '-<t>');
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = volatile.has(k) ? typeof v : normalise(v, kind);
    return out;
  }
  return value;
}

interface Step {
  label: string;
  role: TestRole | 'anonymous';
  method: string;
  path: string;
  options?: Omit<CallOptions, 'token'>;
  expectStatus: number;
  expectError?: string;
}

function steps(kind: Kind): Step[] {
  const app = `demo-${kind}`;
  return [
    { label: 'self', role: 'admin', method: 'GET', path: '/svc/self', expectStatus: 200 },
    {
      label: 'no token',
      role: 'anonymous',
      method: 'GET',
      path: '/svc/applications',
      expectStatus: 401,
      expectError: 'unauthorized',
    },
    {
      label: 'register',
      role: 'admin',
      method: 'PUT',
      path: `/svc/app/${app}`,
      options: { body: { command: 'echo ready; exec sleep 600', shell: true, description: 'demo' } },
      expectStatus: 200,
    },
    { label: 'get', role: 'admin', method: 'GET', path: `/svc/app/${app}`, expectStatus: 200 },
    {
      label: 'output (long poll)',
      role: 'admin',
      method: 'GET',
      path: `/svc/app/${app}/output`,
      options: { query: { stdout_position: '0', timeout: '10' } },
      expectStatus: 200,
    },
    {
      label: 'viewer cannot register',
      role: 'viewer',
      method: 'PUT',
      path: `/svc/app/${app}-v`,
      options: { body: { command: 'true' } },
      expectStatus: 403,
      expectError: 'forbidden',
    },
    {
      label: 'machine identity cannot register',
      role: 'maintenance',
      method: 'PUT',
      path: `/svc/app/${app}-m`,
      options: { body: { command: 'true' } },
      expectStatus: 403,
      expectError: 'forbidden',
    },
    { label: 'viewer reads', role: 'viewer', method: 'GET', path: `/svc/app/${app}`, expectStatus: 200 },
    { label: 'disable', role: 'admin', method: 'POST', path: `/svc/app/${app}/disable`, expectStatus: 200 },
    { label: 'enable', role: 'admin', method: 'POST', path: `/svc/app/${app}/enable`, expectStatus: 200 },
    {
      label: 'missing app',
      role: 'admin',
      method: 'GET',
      path: '/svc/app/nope',
      expectStatus: 404,
      expectError: 'app_not_found',
    },
    {
      label: 'dot-dot name',
      role: 'admin',
      method: 'GET',
      path: '/svc/app/..',
      expectStatus: 400,
      expectError: 'invalid_name',
    },
    {
      label: 'unknown route',
      role: 'admin',
      method: 'GET',
      path: '/svc/nothing',
      expectStatus: 404,
      expectError: 'route_not_found',
    },
    {
      label: 'wrong method',
      role: 'admin',
      method: 'POST',
      path: '/svc/applications',
      expectStatus: 405,
      expectError: 'method_not_allowed',
    },
    {
      label: 'bad json',
      role: 'admin',
      method: 'PUT',
      path: `/svc/app/${app}-bad`,
      options: { rawBody: '{"command":' },
      expectStatus: 400,
      expectError: 'invalid_json',
    },
    {
      label: 'invalid definition',
      role: 'admin',
      method: 'PUT',
      path: `/svc/app/${app}-bad`,
      options: { body: { command: 'x', behavior: { exit: 'explode' } } },
      expectStatus: 400,
      expectError: 'invalid_app',
    },
    {
      label: 'bad query',
      role: 'admin',
      method: 'GET',
      path: `/svc/app/${app}/output`,
      options: { query: { stdout_position: '-5' } },
      expectStatus: 400,
      expectError: 'invalid_query',
    },
    {
      label: 'syncrun',
      role: 'admin',
      method: 'POST',
      path: '/svc/app/syncrun',
      options: { body: { command: 'printf "hi\\n"; exit 3', shell: true }, query: { timeout: '20' } },
      expectStatus: 200,
    },
    {
      label: 'auth config (public)',
      role: 'viewer',
      method: 'GET',
      path: '/svc/auth/config',
      expectStatus: 200,
    },
    { label: 'delete', role: 'admin', method: 'DELETE', path: `/svc/app/${app}`, expectStatus: 200 },
    {
      label: 'gone',
      role: 'admin',
      method: 'GET',
      path: `/svc/app/${app}`,
      expectStatus: 404,
      expectError: 'app_not_found',
    },
  ];
}

const API_HEADERS = ['x-exit-code', 'www-authenticate'];

async function runSuite(kind: Kind): Promise<unknown[]> {
  const clientFor = await clientsFor(kind);
  const record: unknown[] = [];
  for (const step of steps(kind)) {
    // WSS without an upgrade bearer may only use the worker task RPC; anonymous WSS is tested elsewhere.
    const role = kind === 'wss' && step.role === 'anonymous' ? 'anonymous' : step.role;
    const client = await clientFor(role);
    const token = step.role === 'anonymous' ? undefined : await daemon.token(step.role);
    const result = await client.call(step.method, step.path, { ...step.options, token });
    const body = result.contentType.startsWith('application/json') ? result.json() : result.text();
    expect({ step: step.label, status: result.status }).toEqual({
      step: step.label,
      status: step.expectStatus,
    });
    if (step.expectError !== undefined) expect((body as { error: string }).error).toBe(step.expectError);
    const headers = Object.fromEntries(
      API_HEADERS.filter((h) => h in result.headers).map((h) => [h, result.headers[h]]),
    );
    // The anonymous WSS session is refused with its own explanation (it may only use the task RPC).
    const comparable =
      step.role === 'anonymous' && step.expectError !== undefined ? { error: step.expectError } : body;
    record.push({
      step: step.label,
      status: result.status,
      contentType: result.contentType,
      headers,
      body: normalise(comparable, kind),
    });
  }
  return record;
}

describe('the same operations over REST, WSS and TCP', () => {
  it('give identical results', async () => {
    const rest = await runSuite('rest');
    const tcp = await runSuite('tcp');
    const wss = await runSuite('wss');
    expect(tcp).toEqual(rest);
    expect(wss).toEqual(rest);
    const syncrun = rest.find((r) => (r as { step: string }).step === 'syncrun') as {
      body: string;
      headers: Record<string, string>;
    };
    expect(syncrun.body).toBe('hi\n');
    expect(syncrun.headers['x-exit-code']).toBe('3');
    const poll = rest.find((r) => (r as { step: string }).step === 'output (long poll)') as { body: string };
    expect(poll.body).toBe('ready\n');
  });
});
