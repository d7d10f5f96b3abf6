// The worker task loop against a real daemon, over the raw protocol: real managed worker processes
// (worker.ts) fetch tasks with their injected process key; clients submit over REST, TCP and WSS.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type ApiClient, type CallResult, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';

const WORKER = join(import.meta.dirname, 'worker.ts');

let daemon: TestDaemon;
let admin: string;
let rest: ApiClient;
let secret: Buffer;
/** Every process key this file used, to prove none reached server.log. */
const keysSeen = new Set<string>();

beforeAll(async () => {
  daemon = await startTestDaemon({ files: { 'config/config.yaml': 'log_level: debug\n' } });
  admin = await daemon.token('admin');
  rest = daemon.rest();
  secret = Buffer.from(
    (await readFile(join(daemon.workDir, 'auth', 'process-key.secret'), 'utf8')).trim(),
    'hex',
  );
});
afterAll(async () => {
  await daemon?.close();
});

function ok(result: CallResult, what: string): CallResult {
  expect(result.status, `${what}: ${result.text()}`).toBe(200);
  return result;
}

async function register(name: string, definition: Record<string, unknown>): Promise<void> {
  ok(await rest.call('PUT', `/svc/app/${name}`, { token: admin, body: definition }), `register ${name}`);
}

function workerApp(extraEnv: Record<string, string> = {}): Record<string, unknown> {
  return {
    command: `"${process.execPath}" "${WORKER}"`,
    env: { NODE_EXTRA_CA_CERTS: join(daemon.workDir, 'ssl', 'ca.pem'), ...extraEnv },
  };
}

/** The current process uuid of a running app (a different one than `not`, when given). */
async function runningUuid(name: string, not?: string): Promise<string> {
  return waitFor(
    async () => {
      const app = (await rest.call('GET', `/svc/app/${name}`, { token: admin })).json<
        Record<string, unknown>
      >();
      const uuid = app['process_uuid'];
      return typeof app['pid'] === 'number' && typeof uuid === 'string' && uuid !== not ? uuid : undefined;
    },
    { what: `${name} running`, intervalMs: 20 },
  );
}

/** The key the daemon injects: HMAC-SHA256(work/auth/process-key.secret, process_uuid). */
function keyOf(uuid: string): string {
  const key = createHmac('sha256', secret).update(uuid).digest('hex');
  keysSeen.add(key);
  return key;
}

async function output(name: string): Promise<string> {
  return ok(await rest.call('GET', `/svc/app/${name}/output`, { token: admin }), `output ${name}`).text();
}

async function outputMatching(name: string, pattern: RegExp): Promise<RegExpExecArray> {
  return waitFor(async () => pattern.exec(await output(name)) ?? undefined, {
    what: `${name} output ${pattern}`,
    intervalMs: 20,
  });
}

const worker = (key: string): Record<string, string> => ({ 'x-svc-process-key': key });

describe('worker task loop', () => {
  let workerKey: string;

  beforeAll(async () => {
    await register('worker', workerApp({ WORKER_CONCURRENCY: '2' }));
    await register('idle', { command: 'sleep 600' });
    workerKey = keyOf(await runningUuid('worker'));
    await runningUuid('idle');
  });

  it('injects SVC_PROCESS_KEY, SVC_APPLICATION_NAME, SVC_LAUNCH_TIME and SVC_DAEMON_URL', async () => {
    const [, name, url, launch, keyHash] = await outputMatching(
      'worker',
      /env name=(\S+) url=(\S+) launch=(\S+) key_sha256=([0-9a-f]{64})/,
    );
    expect(name).toBe('worker');
    expect(url).toMatch(new RegExp(`^https://[^/]+:${daemon.restPort}$`));
    expect(Number.isNaN(Date.parse(launch!))).toBe(false);
    expect(keyHash).toBe(createHash('sha256').update(workerKey).digest('hex'));
  });

  it('round-trips a task over REST, TCP and WSS, keeping the content type', async () => {
    const tcp = await daemon.tcp();
    const wss = await daemon.wss(admin);
    for (const client of [rest, tcp, wss]) {
      const r = ok(
        await client.call('POST', '/svc/app/worker/task', {
          token: admin,
          rawBody: `hello-${client.kind}`,
          headers: { 'content-type': 'text/x-task' },
        }),
        `${client.kind} task`,
      );
      expect(r.text()).toBe(`result:hello-${client.kind}`);
      expect(r.contentType).toBe('text/x-task');
      expect(r.headers['x-task-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    // Round-trip latency over TCP (client → daemon → worker → daemon → client).
    const times: number[] = [];
    for (let i = 0; i < 40; i++) {
      const start = performance.now();
      ok(await tcp.call('POST', '/svc/app/worker/task', { token: admin, rawBody: `t${i}` }), 'latency task');
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    console.log(
      `task round trip over TCP: p50 ${times[20]!.toFixed(2)} ms, p95 ${times[37]!.toFixed(2)} ms (40 tasks)`,
    );
  });

  it('delivers each task exactly once to two concurrent fetchers', async () => {
    const tcp = await daemon.tcp();
    const n = 40;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        tcp.call('POST', '/svc/app/worker/task', { token: admin, rawBody: `once-${i}` }),
      ),
    );
    const ids = results.map((r, i) => {
      expect(r.status).toBe(200);
      expect(r.text()).toBe(`result:once-${i}`);
      return r.headers['x-task-id']!;
    });
    const text = await output('worker');
    const took = [...text.matchAll(/took (\S+) worker=(\d)/g)].filter((m) => ids.includes(m[1]!));
    expect(took.map((m) => m[1]).sort()).toEqual([...ids].sort()); // each id once, none twice
    expect(new Set(took.map((m) => m[2])).size).toBe(2); // both fetchers served
  });

  it('answers 503 queue_full beyond 64 outstanding tasks, and DELETE cancels them with task_cancelled', async () => {
    const tcp = await daemon.tcp();
    const refused: CallResult[] = [];
    const calls = Array.from({ length: 70 }, () =>
      tcp
        .call('POST', '/svc/app/idle/task', { token: admin, rawBody: 'x', query: { timeout: '30' } })
        .then((r) => {
          if (r.status === 503) refused.push(r);
          return r;
        }),
    );
    // The 6 refusals arrive at once; then all 70 were processed and 64 are waiting.
    await waitFor(() => refused.length === 6, { what: 'six queue_full answers' });
    expect(refused[0]!.json()).toMatchObject({ error: 'queue_full' });
    const cancel = ok(await rest.call('DELETE', '/svc/app/idle/task', { token: admin }), 'cancel');
    expect(cancel.json<{ cancelled: string[] }>().cancelled).toHaveLength(64);
    const results = await Promise.all(calls);
    const cancelled = results.filter((r) => r.status === 409);
    expect(cancelled).toHaveLength(64);
    expect(cancelled[0]!.json()).toMatchObject({ error: 'task_cancelled' });
  });

  it('cancels one task by its caller-chosen task_id', async () => {
    const pending = rest.call('POST', '/svc/app/idle/task', {
      token: admin,
      rawBody: 'x',
      query: { task_id: 'my-task-1', timeout: '30' },
    });
    const cancel = await waitFor(
      async () => {
        const r = await rest.call('DELETE', '/svc/app/idle/task', {
          token: admin,
          query: { task_id: 'my-task-1' },
        });
        return r.status === 200 ? r : undefined;
      },
      { what: 'the task to be queued' },
    );
    expect(cancel.json()).toEqual({ app_name: 'idle', cancelled: ['my-task-1'] });
    const r = await pending;
    expect([r.status, r.json<{ error: string }>().error]).toEqual([409, 'task_cancelled']);
    const again = await rest.call('DELETE', '/svc/app/idle/task', {
      token: admin,
      query: { task_id: 'my-task-1' },
    });
    expect(again.status).toBe(404);
  });

  it('answers 408 timeout at the deadline and refuses the late result with 409', async () => {
    const r = await rest.call('POST', '/svc/app/idle/task', {
      token: admin,
      rawBody: 'x',
      query: { timeout: 'PT0.3S' },
    });
    expect([r.status, r.json<{ error: string }>().error]).toEqual([408, 'timeout']);
    const late = await rest.call('POST', '/svc/app/worker/task', {
      token: admin,
      rawBody: 'late:600',
      query: { timeout: 'PT0.3S' },
    });
    expect(late.status).toBe(408);
    await outputMatching('worker', /late-put \S+ 409/);
  });

  it('fails the in-flight task with task_cancelled when the worker process exits', async () => {
    await register('crasher', { ...workerApp(), behavior: { exit: 'standby' } });
    await runningUuid('crasher');
    const r = await rest.call('POST', '/svc/app/crasher/task', { token: admin, rawBody: 'crash' });
    expect(r.status).toBe(409);
    const body = r.json<{ error: string; message: string }>();
    expect(body.error).toBe('task_cancelled');
    expect(body.message).toContain('exited with 3');
  });

  it('answers 412 to a superseded key, also to a fetch waiting when the process was replaced', async () => {
    await register('replaced', { command: 'sleep 600' });
    const oldUuid = await runningUuid('replaced');
    const oldKey = keyOf(oldUuid);
    const waiting = rest.call('GET', '/svc/app/replaced/task', {
      headers: worker(oldKey),
      query: { timeout: '30' },
    });
    await register('replaced', { command: 'sleep 601' });
    const newKey = keyOf(await runningUuid('replaced', oldUuid));
    const answered = await waiting;
    expect([answered.status, answered.json<{ error: string }>().error]).toEqual([412, 'process_superseded']);
    const stale = await rest.call('GET', '/svc/app/replaced/task', {
      headers: worker(oldKey),
      query: { timeout: '0' },
    });
    expect([stale.status, stale.json<{ error: string }>().error]).toEqual([412, 'process_superseded']);
    const current = await rest.call('GET', '/svc/app/replaced/task', {
      headers: worker(newKey),
      query: { timeout: '0' },
    });
    expect(current.status).toBe(204);
  });

  it('refuses the key in the query string (400), a missing key (400) and a wrong key (403), never echoing it', async () => {
    const cases: [Record<string, string>, Record<string, string>, number, string][] = [
      [{}, { process_key: workerKey }, 400, 'obsolete_process_key'],
      [worker(workerKey), { Key: workerKey }, 400, 'obsolete_process_key'],
      [{}, { 'X-Svc-Process-Key': workerKey }, 400, 'obsolete_process_key'],
      [{}, {}, 400, 'bad_request'],
      [worker(randomBytes(32).toString('hex')), {}, 403, 'forbidden'],
      [worker('not-a-key'), {}, 403, 'forbidden'],
    ];
    for (const method of ['GET', 'PUT']) {
      for (const [headers, query, status, error] of cases) {
        const r = await rest.call(method, '/svc/app/worker/task', {
          headers: { ...headers, 'x-task-id': 'whatever' },
          query: { ...query, timeout: '0' },
        });
        expect([r.status, r.json<{ error: string }>().error], `${method} ${JSON.stringify(query)}`).toEqual([
          status,
          error,
        ]);
        expect(r.text()).not.toContain(workerKey);
      }
    }
    // The key of one app does not open another app's queue.
    const idleKey = keyOf(await runningUuid('idle'));
    const other = await rest.call('GET', '/svc/app/worker/task', {
      headers: worker(idleKey),
      query: { timeout: '0' },
    });
    expect(other.status).toBe(403);
  });

  it('answers a PUT for an unknown task id with 404, and one without a task id and nothing fetched with 404', async () => {
    const unknown = await rest.call('PUT', '/svc/app/worker/task', {
      headers: { ...worker(workerKey), 'x-task-id': 'no-such-task' },
      rawBody: 'r',
    });
    expect([unknown.status, unknown.json<{ error: string }>().error]).toEqual([404, 'not_found']);
    const idleKey = keyOf(await runningUuid('idle'));
    const nothing = await rest.call('PUT', '/svc/app/idle/task', { headers: worker(idleKey), rawBody: 'r' });
    expect([nothing.status, nothing.json<{ error: string }>().error]).toEqual([404, 'not_found']);
  });

  it('a result PUT with only X-Svc-Process-Key answers the fetched task, over REST, TCP and anonymous WSS', async () => {
    const idleKey = keyOf(await runningUuid('idle'));
    const transports = [
      ['rest', rest],
      ['tcp', await daemon.tcp()],
      ['wss', await daemon.wss()],
    ] as const;
    for (const [kind, client] of transports) {
      const submitted = rest.call('POST', '/svc/app/idle/task', { token: admin, rawBody: `job-${kind}` });
      const fetched = await client.call('GET', '/svc/app/idle/task', {
        headers: worker(idleKey),
        query: { timeout: '10' },
      });
      expect([fetched.status, fetched.text()], kind).toEqual([200, `job-${kind}`]);
      // The app view shows the taken task (App Mesh 3.0 runtime fields task_id / task_status).
      const busy = ok(await rest.call('GET', '/svc/app/idle', { token: admin }), 'view').json<{
        task_id?: unknown;
        task_status?: unknown;
      }>();
      expect(busy.task_status, kind).toBe('fetched');
      expect(Number.isInteger(busy.task_id), `${kind}: ${String(busy.task_id)}`).toBe(true);
      // Exactly what App Mesh 3.0's worker sends: the process key header and the body, nothing else.
      const put = await client.call('PUT', '/svc/app/idle/task', {
        headers: worker(idleKey),
        rawBody: `done-${kind}`,
      });
      expect(put.status, `${kind}: ${put.text()}`).toBe(200);
      expect(put.json<{ task_id: string }>().task_id).toBe(fetched.headers['x-task-id']);
      const result = ok(await submitted, `task answered over ${kind}`);
      expect(result.text()).toBe(`done-${kind}`);
      const idle = ok(await rest.call('GET', '/svc/app/idle', { token: admin }), 'view').json<object>();
      expect(idle, kind).not.toHaveProperty('task_status');
    }
  });

  it('lets a WSS session without a bearer fetch and answer tasks of its process, and nothing else (401)', async () => {
    const idleKey = keyOf(await runningUuid('idle'));
    const anonymous = await daemon.wss();
    const submitted = rest.call('POST', '/svc/app/idle/task', {
      token: admin,
      rawBody: '{"n":1}',
      headers: { 'content-type': 'application/json' },
    });
    const fetched = await anonymous.call('GET', '/svc/app/idle/task', {
      headers: worker(idleKey),
      query: { timeout: '10' },
    });
    expect(fetched.status).toBe(200);
    expect([fetched.text(), fetched.contentType]).toEqual(['{"n":1}', 'application/json']);
    const put = await anonymous.call('PUT', '/svc/app/idle/task', {
      headers: {
        ...worker(idleKey),
        'x-task-id': fetched.headers['x-task-id']!,
        'content-type': 'application/json',
      },
      rawBody: '{"ok":true}',
    });
    expect(put.status).toBe(200);
    const result = ok(await submitted, 'submitted over REST, answered over WSS');
    expect([result.text(), result.contentType]).toEqual(['{"ok":true}', 'application/json']);
    for (const [method, path] of [
      ['GET', '/svc/self'],
      ['POST', '/svc/app/idle/task'],
      ['DELETE', '/svc/app/idle/task'],
      ['GET', '/svc/app/idle'],
    ] as const) {
      const r = await anonymous.call(method, path, { headers: worker(idleKey) });
      expect(r.status, `${method} ${path}`).toBe(401);
    }
  });

  it('refuses POST task to the machine identity, a viewer and a developer without app-run-task (403)', async () => {
    for (const role of ['maintenance', 'viewer', 'developer'] as const) {
      const r = await rest.call('POST', '/svc/app/worker/task', {
        token: await daemon.token(role),
        rawBody: 'x',
      });
      expect([r.status, r.json<{ error: string }>().error], role).toEqual([403, 'forbidden']);
      const d = await rest.call('DELETE', '/svc/app/worker/task', { token: await daemon.token(role) });
      expect(d.status, `${role} DELETE`).toBe(403);
    }
    const missing = await rest.call('POST', '/svc/app/nope/task', { token: admin, rawBody: 'x' });
    expect(missing.status).toBe(404);
    const anonymous = await rest.call('POST', '/svc/app/worker/task', { rawBody: 'x' });
    expect(anonymous.status).toBe(401);
  });

  it('fails an in-flight task with 404 app_not_found when its app is removed, and refuses new ones with 404', async () => {
    await register('doomed', { command: 'sleep 600' });
    const key = keyOf(await runningUuid('doomed'));
    const held = rest.call('POST', '/svc/app/doomed/task', { token: admin, rawBody: 'held' });
    // Taking it with the app's key proves it was submitted (it is now in flight).
    const fetched = await rest.call('GET', '/svc/app/doomed/task', {
      headers: worker(key),
      query: { timeout: '10' },
    });
    expect(fetched.text()).toBe('held');
    ok(await rest.call('DELETE', '/svc/app/doomed', { token: admin }), 'remove doomed');
    // A delete publishes REMOVED and no EXIT for the process it stops (S8): REMOVED fails every
    // task of the app, in flight or queued, with app_not_found (task-queues.test.ts, failApp).
    const r = await held;
    expect([r.status, r.json<{ error: string }>().error]).toEqual([404, 'app_not_found']);
    const after = await rest.call('POST', '/svc/app/doomed/task', { token: admin, rawBody: 'x' });
    expect([after.status, after.json<{ error: string }>().error]).toEqual([404, 'app_not_found']);
  });

  it('never writes a process key to server.log', async () => {
    const log = await readFile(join(daemon.workDir, 'server.log'), 'utf8');
    expect(log.length).toBeGreaterThan(0);
    expect(keysSeen.size).toBeGreaterThan(3);
    for (const key of keysSeen) expect(log).not.toContain(key);
  });
});
