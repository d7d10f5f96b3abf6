// Worker loop (spec "Worker task loop", "Worker loop" states): a managed process fetches task
// payloads from the daemon and returns results.
//
//   fetching ── 200 ─▶ handler ─▶ PUT result (X-Task-Id) ─▶ fetching
//                                  (TCP/WSS: the next fetch is sent with the PUT, same write)
//      │  204 (long poll ended) ─▶ fetching
//      │  412 ─▶ throw ProcessSupersededError        (no retry)
//      │  400 ─▶ throw WorkerRejectedError           (no retry)
//      │  other failure ─▶ wait 100 ms (fixed floor, no backoff, unlimited) ─▶ fetching
//      └  signal aborted ─▶ resolve null
//
// The process key travels only in the X-Svc-Process-Key header, never in the URL.
import { PROCESS_KEY_HEADER } from '@svc/protocol';
import {
  apiErrorFrom,
  ProcessSupersededError,
  WorkerEnvironmentError,
  WorkerRejectedError,
} from './errors.ts';
import type { Transport, WireResult } from './transport.ts';

export const WORKER_RETRY_FLOOR_MS = 100;

export interface WorkerTask {
  id: string;
  contentType: string;
  body: Uint8Array;
  /** ISO 8601 deadline of the task (X-Task-Deadline), when the daemon sent one. */
  deadline: string | undefined;
  text(): string;
  json<T = unknown>(): T;
}

/** A handler's answer: bytes, text, or bytes with a content type. */
export type WorkerReply = Uint8Array | string | { body: Uint8Array | string; contentType: string };

export type TaskHandler = (task: WorkerTask, signal: AbortSignal) => WorkerReply | Promise<WorkerReply>;

export interface RunWorkerOptions {
  signal?: AbortSignal;
  /** Where SVC_PROCESS_KEY, SVC_APPLICATION_NAME and SVC_DAEMON_URL are read (default process.env). */
  env?: Record<string, string | undefined>;
  /** Makes the REST transport for SVC_DAEMON_URL; the Node entry supplies one that trusts `ca`. */
  transport?: (daemonUrl: string) => Transport;
  /** Long poll of one fetch, seconds (default 30). */
  pollSeconds?: number;
  /** Told about each failure that is retried (default: ignored). */
  onRetry?: (error: unknown) => void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function requireEnv(env: Record<string, string | undefined>, name: string): string {
  const value = env[name];
  if (value === undefined || value === '')
    throw new WorkerEnvironmentError(`${name} is not set: not a managed svc process`);
  return value;
}

/**
 * Runs the worker loop until the signal aborts (resolves null), the key is superseded (rejects
 * ProcessSupersededError) or the daemon rejects the request (rejects WorkerRejectedError).
 * A missing environment variable rejects WorkerEnvironmentError at once.
 */
export async function runWorker(handler: TaskHandler, options: RunWorkerOptions = {}): Promise<null> {
  const env =
    options.env ??
    (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ??
    {};
  const key = requireEnv(env, 'SVC_PROCESS_KEY');
  const name = requireEnv(env, 'SVC_APPLICATION_NAME');
  const daemonUrl = requireEnv(env, 'SVC_DAEMON_URL');
  if (options.transport === undefined)
    throw new WorkerEnvironmentError('runWorker: no transport factory given');
  const transport = options.transport(daemonUrl);
  const signal = options.signal ?? new AbortController().signal;
  const path = `/svc/app/${encodeURIComponent(name)}/task`;
  const poll = String(options.pollSeconds ?? 30);
  /** One call; a transport failure is reported, paced, and answered undefined (the caller moves on). */
  const attempt = async (request: Parameters<typeof transport.call>[0]): Promise<WireResult | undefined> => {
    try {
      return await transport.call(request);
    } catch (error) {
      if (!signal.aborted) {
        options.onRetry?.(error);
        await pause(WORKER_RETRY_FLOOR_MS, signal);
      }
      return undefined;
    }
  };
  const fetchTask = (): Promise<WireResult | undefined> =>
    attempt({
      method: 'GET',
      path,
      query: { timeout: poll },
      headers: { [PROCESS_KEY_HEADER]: key },
      signal,
    });
  // On a persistent connection (TCP, WSS) the next fetch leaves together with the result, in the
  // same write: the daemon then reads both at once and answers both at once (one write(2) and one
  // wake-up each way instead of two). A fetch is still made only once the handler has finished.
  const pipelined = transport.kind !== 'rest';
  let prefetched: Promise<WireResult | undefined> | undefined;
  try {
    while (!signal.aborted) {
      const result = await (prefetched ?? fetchTask());
      prefetched = undefined;
      if (result === undefined) continue; // the loop condition ends an aborted worker
      if (result.status === 204) continue;
      stopOnPermanent(result);
      if (result.status !== 200) {
        options.onRetry?.(apiErrorFrom(result.status, result.body, result.headers));
        await pause(WORKER_RETRY_FLOOR_MS, signal);
        continue;
      }
      const task = workerTask(result);
      const reply = await handler(task, signal);
      const { body, contentType } = replyParts(reply);
      const answered = attempt({
        method: 'PUT',
        path,
        headers: { [PROCESS_KEY_HEADER]: key, 'x-task-id': task.id, 'content-type': contentType },
        body,
        signal,
      });
      if (pipelined) prefetched = fetchTask();
      const put = await answered;
      if (put === undefined) continue;
      stopOnPermanent(put);
      // Any other PUT failure (task withdrawn: 409/404) loses only this result; fetch the next.
      if (put.status < 200 || put.status > 299)
        options.onRetry?.(apiErrorFrom(put.status, put.body, put.headers));
    }
    return null;
  } finally {
    await transport.close();
  }
}

function stopOnPermanent(result: WireResult): void {
  if (result.status === 412)
    throw new ProcessSupersededError('the process key belongs to a superseded process (412)', {
      cause: apiErrorFrom(result.status, result.body, result.headers),
    });
  if (result.status === 400)
    throw new WorkerRejectedError('the daemon rejected the worker request (400)', {
      cause: apiErrorFrom(result.status, result.body, result.headers),
    });
}

function workerTask(result: WireResult): WorkerTask {
  return {
    id: result.headers['x-task-id'] ?? '',
    contentType: result.contentType,
    body: result.body,
    deadline: result.headers['x-task-deadline'],
    text: () => decoder.decode(result.body),
    json: <T>() => JSON.parse(decoder.decode(result.body)) as T,
  };
}

function replyParts(reply: WorkerReply): { body: Uint8Array; contentType: string } {
  if (reply instanceof Uint8Array) return { body: reply, contentType: 'application/octet-stream' };
  if (typeof reply === 'string')
    return { body: encoder.encode(reply), contentType: 'text/plain; charset=utf-8' };
  return {
    body: typeof reply.body === 'string' ? encoder.encode(reply.body) : reply.body,
    contentType: reply.contentType,
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
