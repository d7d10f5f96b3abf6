// The worker task loop (spec: Worker task loop; CONTRACT §5): clients POST a task to an app and
// wait for its result; the app's managed process fetches tasks (GET) and returns results (PUT),
// authenticated only by its process key. Queue semantics live in tasks/task-queues.ts.
import { SvcError } from '@svc/protocol';
import { authenticateWorker } from '../../tasks/worker-auth.ts';
import type { Fetch, TaskBody } from '../../tasks/task-queues.ts';
import { json } from '../responses.ts';
import type { Services } from '../services.ts';
import type { ApiResponse, Operation, OperationContext, PersistentConnection } from '../types.ts';
import { requireAppPermission } from './apps.ts';
import { optionalDurationMs } from './query.ts';

type Ctx = OperationContext<Services>;

export const DEFAULT_TASK_TIMEOUT_MS = 60_000;
const MAX_TASK_TIMEOUT_MS = 24 * 3600 * 1000;
export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
const MAX_FETCH_TIMEOUT_MS = 300_000;
const TASK_ID = /^[A-Za-z0-9_.-]{1,128}$/;
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

function bodyOf(context: Ctx): TaskBody {
  const type = context.request.headers['content-type'];
  return {
    body: context.request.body,
    contentType: type === undefined || type === '' ? DEFAULT_CONTENT_TYPE : type.slice(0, 256),
  };
}

function taskIdQuery(context: Ctx): string | undefined {
  const id = context.request.query['task_id'];
  if (id === undefined || id === '') return undefined;
  if (!TASK_ID.test(id)) throw new SvcError('invalid_query', 'task_id: must match ^[A-Za-z0-9_.-]{1,128}$');
  return id;
}

function boundedTimeout(context: Ctx, fallback: number, max: number, min: number): number {
  const ms = optionalDurationMs(context.request.query, 'timeout') ?? fallback;
  if (ms > max) throw new SvcError('invalid_query', `timeout: at most ${max / 1000} seconds`);
  if (ms < min) throw new SvcError('invalid_query', `timeout: at least ${min} ms`);
  return ms;
}

function worker(context: Ctx): string {
  const name = context.params['name']!;
  const services = context.services;
  authenticateWorker(context.request, name, (app, key) => services.verifyProcessKey(app, key));
  return name;
}

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
  {
    id: 'runTask',
    method: 'POST',
    path: '/svc/app/{name}/task',
    access: { kind: 'permission', permission: 'app-run-task' },
    summary:
      "Send a task payload (any content type) to the app's worker and wait for its result (200, the worker's content type)",
    query: [
      {
        name: 'timeout',
        description: 'seconds or ISO 8601 duration to wait for the result (default 60 s); 408 after it',
      },
      {
        name: 'task_id',
        description: 'caller-chosen task id (^[A-Za-z0-9_.-]{1,128}$) so that DELETE ?task_id= can cancel it',
      },
    ],
    async handle(context) {
      const name = context.params['name']!;
      requireAppPermission(context, name, 'app-run-task');
      const timeoutMs = boundedTimeout(context, DEFAULT_TASK_TIMEOUT_MS, MAX_TASK_TIMEOUT_MS, 1);
      const { task, result } = context.services.tasks.submit(name, {
        payload: bodyOf(context),
        submittedBy: context.principal!.id,
        timeoutMs,
        id: taskIdQuery(context),
      });
      const answer = await result;
      return {
        status: 200,
        headers: { 'x-task-id': task.id },
        contentType: answer.contentType,
        body: answer.body,
      };
    },
  },
  {
    id: 'cancelTasks',
    method: 'DELETE',
    path: '/svc/app/{name}/task',
    access: { kind: 'permission', permission: 'app-run-task' },
    summary:
      "Cancel the caller's outstanding tasks of the app (or one with task_id); their POSTs get 409 task_cancelled",
    query: [{ name: 'task_id', description: 'cancel only this task' }],
    async handle(context) {
      const name = context.params['name']!;
      requireAppPermission(context, name, 'app-run-task');
      const cancelled = context.services.tasks.cancel(name, context.principal!.id, taskIdQuery(context));
      return json({ app_name: name, cancelled });
    },
  },
  {
    id: 'fetchTask',
    method: 'GET',
    path: '/svc/app/{name}/task',
    access: { kind: 'process-key' },
    summary:
      'Worker: take the next task (header X-Svc-Process-Key); 200 with the payload and X-Task-Id, or 204 after the long poll',
    query: [
      {
        name: 'timeout',
        description:
          'long poll: seconds or ISO 8601 duration to wait for a task (default 30 s, 0 = do not wait)',
      },
    ],
    async handle(context) {
      const name = worker(context);
      const timeoutMs = boundedTimeout(context, DEFAULT_FETCH_TIMEOUT_MS, MAX_FETCH_TIMEOUT_MS, 0);
      const fetch = context.services.tasks.fetch(name, timeoutMs);
      const forget = cancelOnClose(context.request.connection, fetch);
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
  },
  {
    id: 'returnTaskResult',
    method: 'PUT',
    path: '/svc/app/{name}/task',
    access: { kind: 'process-key' },
    summary:
      'Worker: return a task result (header X-Svc-Process-Key only); it answers the task this process fetched last, or task X-Task-Id when that optional header is sent; the body and content type reach the submitter',
    async handle(context) {
      const name = worker(context);
      const id = context.request.headers['x-task-id'];
      if (id === undefined || id === '') {
        const answered = context.services.tasks.completeFetched(name, bodyOf(context));
        return json({ app_name: name, task_id: answered, delivered: true });
      }
      if (!TASK_ID.test(id)) throw new SvcError('bad_request', 'X-Task-Id: not a task id');
      context.services.tasks.complete(name, id, bodyOf(context));
      return json({ app_name: name, task_id: id, delivered: true });
    },
  },
];
