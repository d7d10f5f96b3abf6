// The worker loop against an in-memory transport whose answers the test scripts (no sockets).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProcessSupersededError, WorkerEnvironmentError, WorkerRejectedError } from './errors.ts';
import type { Transport, WireCall, WireResult } from './transport.ts';
import { runWorker, WORKER_RETRY_FLOOR_MS } from './worker.ts';

const ENV = { SVC_PROCESS_KEY: 'key-123', SVC_APPLICATION_NAME: 'w', SVC_DAEMON_URL: 'https://127.0.0.1:1' };

function result(status: number, body = '', headers: Record<string, string> = {}): WireResult {
  return {
    status,
    headers,
    contentType: headers['content-type'] ?? 'text/plain',
    body: new TextEncoder().encode(body),
  };
}

/** A transport answering from a script; each entry answers one call (a function may throw). */
function scripted(
  script: ((call: WireCall) => WireResult | Promise<WireResult>)[],
  kind: Transport['kind'] = 'rest',
) {
  const calls: WireCall[] = [];
  let closed = false;
  const transport: Transport = {
    kind,
    async call(call) {
      calls.push(call);
      const next = script.shift();
      // Past the script the long poll never ends, until the call's signal aborts it.
      if (next === undefined)
        return new Promise<WireResult>((_resolve, reject) =>
          call.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        );
      return next(call);
    },
    async close() {
      closed = true;
    },
  };
  return { transport, calls, closed: () => closed };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('runWorker', () => {
  it.each(['SVC_PROCESS_KEY', 'SVC_APPLICATION_NAME', 'SVC_DAEMON_URL'])(
    'fails at once without %s and makes no request',
    async (missing) => {
      const { transport, calls } = scripted([]);
      const env: Record<string, string | undefined> = { ...ENV, [missing]: undefined };
      await expect(runWorker(() => 'x', { env, transport: () => transport })).rejects.toBeInstanceOf(
        WorkerEnvironmentError,
      );
      expect(calls).toHaveLength(0);
    },
  );

  it('fetches with the key only in X-Svc-Process-Key, answers with X-Task-Id, then resolves null on abort', async () => {
    const controller = new AbortController();
    const { transport, calls, closed } = scripted([
      () => result(204),
      () => result(200, 'payload', { 'x-task-id': 't1', 'content-type': 'text/plain' }),
      (call) => {
        controller.abort();
        return result(200, JSON.stringify({ delivered: true, echo: new TextDecoder().decode(call.body) }));
      },
    ]);
    const seen: string[] = [];
    const done = runWorker(
      (task) => {
        seen.push(`${task.id}:${task.text()}`);
        return { body: `result:${task.text()}`, contentType: 'text/plain' };
      },
      { env: ENV, transport: () => transport, signal: controller.signal },
    );
    await expect(done).resolves.toBeNull();
    expect(seen).toEqual(['t1:payload']);
    expect(calls.map((c) => c.method)).toEqual(['GET', 'GET', 'PUT']);
    for (const call of calls) {
      expect(call.path).toBe('/svc/app/w/task');
      expect(call.headers?.['x-svc-process-key']).toBe('key-123');
      expect(JSON.stringify(call.query ?? {})).not.toContain('key-123');
      expect(call.path).not.toContain('key-123');
    }
    expect(calls[2]!.headers?.['x-task-id']).toBe('t1');
    expect(new TextDecoder().decode(calls[2]!.body)).toBe('result:payload');
    expect(closed()).toBe(true);
  });

  it('stops on 412 with ProcessSupersededError, without retrying', async () => {
    const { transport, calls } = scripted([
      () => result(412, '{"error":"process_superseded","message":"m"}'),
    ]);
    await expect(runWorker(() => 'x', { env: ENV, transport: () => transport })).rejects.toBeInstanceOf(
      ProcessSupersededError,
    );
    expect(calls).toHaveLength(1);
  });

  it('stops on 400 with WorkerRejectedError, without retrying (also when the PUT is refused)', async () => {
    const first = scripted([() => result(400, '{"error":"obsolete_process_key","message":"m"}')]);
    await expect(runWorker(() => 'x', { env: ENV, transport: () => first.transport })).rejects.toBeInstanceOf(
      WorkerRejectedError,
    );
    expect(first.calls).toHaveLength(1);
    const second = scripted([() => result(200, 'p', { 'x-task-id': 't' }), () => result(400, '{}')]);
    await expect(
      runWorker(() => 'x', { env: ENV, transport: () => second.transport }),
    ).rejects.toBeInstanceOf(WorkerRejectedError);
    expect(second.calls).toHaveLength(2);
  });

  it('retries any other failure after the 100 ms floor, without backoff', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const { transport, calls } = scripted([
      () => {
        throw new Error('ECONNREFUSED');
      },
      () => result(503, '{"error":"unavailable","message":"m"}'),
    ]);
    const controller = new AbortController();
    const retried: unknown[] = [];
    const done = runWorker(() => 'x', {
      env: ENV,
      transport: () => transport,
      signal: controller.signal,
      onRetry: (e) => retried.push(e),
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(WORKER_RETRY_FLOOR_MS - 1);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(WORKER_RETRY_FLOOR_MS - 1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3); // the third fetch long-polls forever
    expect(retried).toHaveLength(2);
    controller.abort();
    await expect(done).resolves.toBeNull();
  });

  it.each([
    ['tcp', ['GET', 'PUT', 'GET']],
    ['wss', ['GET', 'PUT', 'GET']],
    ['rest', ['GET', 'PUT']],
  ] as const)(
    'over %s sends the next fetch with the result only on a persistent connection',
    async (kind, before) => {
      const controller = new AbortController();
      let answerPut!: (r: WireResult) => void;
      const { transport, calls } = scripted(
        [
          () => result(200, 'job', { 'x-task-id': 't1' }),
          () => new Promise<WireResult>((resolve) => (answerPut = resolve)),
        ],
        kind,
      );
      const done = runWorker((task) => task.text(), {
        env: ENV,
        transport: () => transport,
        signal: controller.signal,
      });
      await vi.waitFor(() => expect(calls.map((c) => c.method)).toEqual(before));
      // The handler ran once: only one result, and the prefetch is a plain fetch.
      answerPut(result(200));
      await vi.waitFor(() => expect(calls.map((c) => c.method)).toEqual(['GET', 'PUT', 'GET']));
      expect(calls[2]!.query).toEqual({ timeout: '30' });
      controller.abort();
      await expect(done).resolves.toBeNull();
    },
  );
});
