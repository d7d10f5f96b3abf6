// The worker task loop (spec: Worker task loop; CONTRACT §5): clients POST a task to an app and
// wait for its result; the app's managed process fetches tasks (GET) and returns results (PUT),
// authenticated only by its process key. Queue semantics live in tasks/task-queues.ts.
import { SvcError } from '@svc/protocol';
import * as z from 'zod';
import type { Fetch, TaskBody } from '../../tasks/task-queues.ts';
import { json } from '../responses.ts';
import { TaskDelivered, TasksCancelled } from '../schemas.ts';
import type { Services } from '../services.ts';
import {
  defineOperation,
  type ApiRequest,
  type ApiResponse,
  type Operation,
  type PersistentConnection,
} from '../types.ts';
import { durationParam, patternParam } from './query.ts';

export const DEFAULT_TASK_TIMEOUT_MS = 60_000;
const MAX_TASK_TIMEOUT_MS = 24 * 3600 * 1000;
export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
const MAX_FETCH_TIMEOUT_MS = 300_000;
const TASK_ID = /^[A-Za-z0-9_.-]{1,128}$/;
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** A task payload or result: the `raw` body the dispatcher read (`input.body`), with its type. */
function bodyOf(request: ApiRequest, raw: unknown): TaskBody {
  const type = request.headers['content-type'];
  return {
    body: raw as Uint8Array,
    contentType: type === undefined || type === '' ? DEFAULT_CONTENT_TYPE : type.slice(0, 256),
  };
}

const taskId = (description: string) => patternParam('task_id', description, TASK_ID);

/** A duration query parameter `timeout` in ms, `fallback` when absent, within [min, max]. */
function boundedTimeout(description: string, fallback: number, max: number, min: number) {
  return durationParam('timeout', description, max).transform((ms) => {
    if (ms !== undefined && ms < min) throw new SvcError('invalid_query', `timeout: at least ${min} ms`);
    return ms ?? fallback;
  });
}

const submitQuery = z.object({
  timeout: boundedTimeout(
    'wait this long for the result (default 60 s); 408 after it',
    DEFAULT_TASK_TIMEOUT_MS,
    MAX_TASK_TIMEOUT_MS,
    1,
  ),
  task_id: taskId('caller-chosen task id so that DELETE ?task_id= can cancel it'),
});
const cancelQuery = z.object({ task_id: taskId('cancel only this task') });
const fetchQuery = z.object({
  timeout: boundedTimeout(
    'long poll: wait this long for a task (default 30 s, 0 = do not wait)',
    DEFAULT_FETCH_TIMEOUT_MS,
    MAX_FETCH_TIMEOUT_MS,
    0,
  ),
});

/**
 * Waiting fetches of one persistent connection, cancelled together when it closes. One onClose
 * registration per connection (PersistentConnection has no way to unregister a callback).
 */
const fetchesOf = new WeakMap<PersistentConnection, Set<Fetch>>();

function cancelOnClose(connection: PersistentConnection | undefined, fetch: Fetch): () => void {
  if (connection === undefined) return () => undefined;
  let set = fetchesOf.get(connection);
  if (set === undefined) {
    const created = new Set<Fetch>();
    set = created;
    fetchesOf.set(connection, created);
    connection.onClose(() => {
      for (const pending of created) pending.cancel();
      created.clear();
    });
  }
  set.add(fetch);
  return () => set.delete(fetch);
}

function noContent(): ApiResponse {
  return { status: 204, headers: {}, contentType: DEFAULT_CONTENT_TYPE, body: new Uint8Array(0) };
}

export const taskOperations: Operation<Services>[] = [
  defineOperation<Services, typeof submitQuery>({
    id: 'runTask',
    method: 'POST',
    path: '/svc/app/{name}/task',
    access: {
      kind: 'app',
      permission: 'app-run-task',
      app: { from: 'path' },
      missing: 'not-found',
      changes: false,
    },
    summary:
      "Send a task payload (any content type) to the app's worker and wait for its result (200, the worker's content type)",
    query: submitQuery,
    body: { kind: 'raw', description: 'the task payload, any content type' },
    responses: [
      {
        status: 200,
        description: "the worker's result, in the worker's content type",
        media: '*/*',
        headers: { 'X-Task-Id': 'the task id' },
      },
    ],
    async handle({ request, params, input, principal, services }) {
      const { task, result } = services.tasks.submit(params['name']!, {
        payload: bodyOf(request, input.body),
        submittedBy: principal!.id,
        timeoutMs: input.query.timeout,
        id: input.query.task_id,
      });
      const answer = await result;
      return {
        status: 200,
        headers: { 'x-task-id': task.id },
        contentType: answer.contentType,
        body: answer.body,
      };
    },
  }),
  defineOperation<Services, typeof cancelQuery>({
    id: 'cancelTasks',
    method: 'DELETE',
    path: '/svc/app/{name}/task',
    access: {
      kind: 'app',
      permission: 'app-run-task',
      app: { from: 'path' },
      missing: 'not-found',
      changes: false,
    },
    summary:
      "Cancel the caller's outstanding tasks of the app (or one with task_id); their POSTs get 409 task_cancelled",
    query: cancelQuery,
    responses: [{ status: 200, description: 'how many were cancelled', json: TasksCancelled }],
    async handle({ params, input, principal, services }) {
      const name = params['name']!;
      const cancelled = services.tasks.cancel(name, principal!.id, input.query.task_id);
      return json({ app_name: name, cancelled });
    },
  }),
  defineOperation<Services, typeof fetchQuery>({
    id: 'fetchTask',
    method: 'GET',
    path: '/svc/app/{name}/task',
    access: { kind: 'process-key', app: 'path' },
    summary:
      'Worker: take the next task (header X-Svc-Process-Key); 200 with the payload and X-Task-Id, or 204 after the long poll',
    query: fetchQuery,
    responses: [
      {
        status: 200,
        description: 'the task payload, in the submitter content type',
        media: '*/*',
        headers: {
          'X-Task-Id': 'the task id',
          'X-Task-Deadline': 'ISO 8601 time the submitter stops waiting',
        },
      },
      { status: 204, description: 'no task within the long poll', media: 'none' },
    ],
    async handle({ request, params, input, services }) {
      const fetch = services.tasks.fetch(params['name']!, input.query.timeout);
      const forget = cancelOnClose(request.connection, fetch);
      try {
        const task = await fetch.task;
        if (task === undefined) return noContent();
        return {
          status: 200,
          headers: { 'x-task-id': task.id, 'x-task-deadline': new Date(task.deadline).toISOString() },
          contentType: task.payload.contentType,
          body: task.payload.body,
        };
      } finally {
        forget();
      }
    },
  }),
  defineOperation<Services>({
    id: 'returnTaskResult',
    method: 'PUT',
    path: '/svc/app/{name}/task',
    access: { kind: 'process-key', app: 'path' },
    summary:
      'Worker: return a task result (header X-Svc-Process-Key only); it answers the task this process fetched last, or task X-Task-Id when that optional header is sent; the body and content type reach the submitter',
    body: { kind: 'raw', description: 'the result, any content type' },
    responses: [{ status: 200, description: 'delivered to the submitter', json: TaskDelivered }],
    async handle({ request, params, input, services }) {
      const name = params['name']!;
      const id = request.headers['x-task-id'];
      if (id === undefined || id === '') {
        const answered = services.tasks.completeFetched(name, bodyOf(request, input.body));
        return json({ app_name: name, task_id: answered, delivered: true });
      }
      if (!TASK_ID.test(id)) throw new SvcError('bad_request', 'X-Task-Id: not a task id');
      services.tasks.complete(name, id, bodyOf(request, input.body));
      return json({ app_name: name, task_id: id, delivered: true });
    },
  }),
];
