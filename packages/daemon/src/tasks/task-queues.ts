// Per-application task queues of the worker task loop (spec: Worker task loop; README.md beside
// this file). Pure logic: no sockets, no supervisor, an injected clock. The operations in
// api/operations/tasks.ts translate requests into calls here; tasks/supervisor-link.ts fails tasks
// when a worker process exits, is replaced or its application is removed.
//
// A task is `queued` until one fetch takes it, then `in flight` until the worker returns a result,
// the submitter's deadline passes, the submitter cancels it, or the worker process goes away.
// Delivery is at most once: a task handed to a fetch is never handed to another one, even when the
// fetch's response could not be written (the submitter then sees 408 at its deadline, or
// task_cancelled when the worker process exits).
import { randomUUID } from 'node:crypto';
import { SvcError } from '@svc/protocol';
import { realClock } from '../util/clock.ts';

export interface TaskClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** A body with its content type: the task payload, and the worker's result. */
export interface TaskBody {
  body: Uint8Array;
  contentType: string;
}

export interface Task {
  readonly id: string;
  /** 1, 2, 3 … per application in submission order: the integer `task_id` of the app view. */
  readonly number: number;
  readonly app: string;
  readonly payload: TaskBody;
  /** Principal id of the submitter (only it may cancel the task). */
  readonly submittedBy: string;
  readonly submittedAt: number;
  /** Epoch ms after which the submitter gets 408 and the task is withdrawn. */
  readonly deadline: number;
}

export interface SubmitInput {
  payload: TaskBody;
  submittedBy: string;
  timeoutMs: number;
  /** Caller-chosen id (so that it can cancel this one task); default a fresh uuid. */
  id?: string | undefined;
}

export interface Submitted {
  readonly task: Task;
  /** Resolves with the worker's result; rejects with an SvcError (timeout, task_cancelled, ...). */
  readonly result: Promise<TaskBody>;
}

export interface Fetch {
  /** The task taken by this fetch, or undefined when the fetch timed out with nothing to do. */
  readonly task: Promise<Task | undefined>;
  /** Stop waiting (the fetcher went away). A task already taken is not given back: at most once. */
  cancel(): void;
}

export interface TaskQueuesOptions {
  /** Maximum outstanding (queued + in flight) tasks per application; default 64. */
  capacity?: number;
  clock?: TaskClock;
  /** How many finished task ids per app are remembered to answer a late PUT with 409; default 1024. */
  finishedMemory?: number;
}

export const DEFAULT_TASK_CAPACITY = 64;
const DEFAULT_FINISHED_MEMORY = 1024;

interface Entry {
  readonly task: Task;
  state: 'queued' | 'in_flight';
  /** Order in which fetches took tasks (0 while queued): a result PUT without a task id answers the latest. */
  fetchedSeq: number;
  readonly resolve: (result: TaskBody) => void;
  readonly reject: (error: SvcError) => void;
  timer: unknown;
}

interface Fetcher {
  readonly resolve: (task: Task | undefined) => void;
  readonly reject: (error: SvcError) => void;
  timer: unknown;
}

interface AppQueue {
  /** FIFO of queued tasks (at most `capacity`, so shift() is cheap enough). */
  readonly queued: Entry[];
  /** Every outstanding task by id, queued or in flight. */
  readonly outstanding: Map<string, Entry>;
  /** FIFO of waiting fetches. */
  readonly fetchers: Fetcher[];
  /** Recently finished task ids and why they finished (bounded, oldest dropped first). */
  readonly finished: Map<string, string>;
  /** Tasks ever submitted for this app while its queue existed (Task.number of the latest). */
  submitted: number;
}

/** The app view's task fields (App Mesh 3.0 `task_id`, `task_status`): the oldest outstanding task. */
export interface CurrentTask {
  readonly task_id: number;
  /** `queued`: waiting for the worker; `fetched`: the worker took it and has not answered yet. */
  readonly task_status: 'queued' | 'fetched';
}

export const realTaskClock: TaskClock = realClock(() => Date.now());

export class TaskQueues {
  readonly capacity: number;
  readonly #clock: TaskClock;
  readonly #finishedMemory: number;
  readonly #apps = new Map<string, AppQueue>();
  #fetchSeq = 0;

  constructor(options: TaskQueuesOptions = {}) {
    this.capacity = options.capacity ?? DEFAULT_TASK_CAPACITY;
    if (!Number.isInteger(this.capacity) || this.capacity < 1)
      throw new RangeError('task queue capacity must be a positive integer');
    this.#clock = options.clock ?? realTaskClock;
    this.#finishedMemory = options.finishedMemory ?? DEFAULT_FINISHED_MEMORY;
  }

  /** Queue a task for `app` (or hand it straight to a waiting fetch). Throws queue_full / conflict. */
  submit(app: string, input: SubmitInput): Submitted {
    const queue = this.#queue(app);
    const id = input.id ?? randomUUID();
    if (queue.outstanding.has(id))
      throw new SvcError('conflict', `a task with id ${id} is already outstanding for ${app}`);
    if (queue.outstanding.size >= this.capacity)
      throw new SvcError(
        'queue_full',
        `the task queue of ${app} is full (${this.capacity} tasks outstanding); retry later`,
      );
    const now = this.#clock.now();
    const task: Task = {
      id,
      number: ++queue.submitted,
      app,
      payload: input.payload,
      submittedBy: input.submittedBy,
      submittedAt: now,
      deadline: now + input.timeoutMs,
    };
    let resolve!: (result: TaskBody) => void;
    let reject!: (error: SvcError) => void;
    const result = new Promise<TaskBody>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Marked handled here; the submitter still sees the rejection when it awaits `result`.
    result.catch(() => undefined);
    const entry: Entry = { task, state: 'queued', fetchedSeq: 0, resolve, reject, timer: undefined };
    entry.timer = this.#clock.setTimeout(() => {
      this.#finish(
        app,
        entry,
        'timed out',
        new SvcError(
          'timeout',
          `no result for task ${id} of ${app} within ${Math.round(input.timeoutMs / 100) / 10} s; the task was withdrawn`,
        ),
      );
    }, input.timeoutMs);
    queue.outstanding.set(id, entry);
    const fetcher = queue.fetchers.shift();
    if (fetcher !== undefined) this.#handOver(entry, fetcher);
    else queue.queued.push(entry);
    return { task, result };
  }

  /**
   * Take the next queued task of `app`, waiting up to `timeoutMs` for one (0 = do not wait).
   * Resolves undefined when nothing arrived in time.
   */
  fetch(app: string, timeoutMs: number): Fetch {
    const queue = this.#queue(app);
    const next = queue.queued.shift();
    if (next !== undefined) {
      this.#markFetched(next);
      return { task: Promise.resolve(next.task), cancel: () => undefined };
    }
    if (timeoutMs <= 0) {
      this.#prune(app, queue);
      return { task: Promise.resolve(undefined), cancel: () => undefined };
    }
    let fetcher!: Fetcher;
    const task = new Promise<Task | undefined>((resolve, reject) => {
      fetcher = { resolve, reject, timer: undefined };
    });
    task.catch(() => undefined);
    const drop = (): boolean => {
      const index = queue.fetchers.indexOf(fetcher);
      if (index === -1) return false;
      queue.fetchers.splice(index, 1);
      this.#clock.clearTimeout(fetcher.timer);
      this.#prune(app, queue);
      return true;
    };
    fetcher.timer = this.#clock.setTimeout(() => {
      if (drop()) fetcher.resolve(undefined);
    }, timeoutMs);
    queue.fetchers.push(fetcher);
    return {
      task,
      cancel() {
        if (drop()) fetcher.resolve(undefined);
      },
    };
  }

  /**
   * The worker's result for an in-flight task. Throws not_found for an id this app never had (or
   * forgot), conflict for one that is no longer waiting (timed out, cancelled, answered) or was
   * never fetched.
   */
  complete(app: string, id: string, result: TaskBody): void {
    const queue = this.#apps.get(app);
    const entry = queue?.outstanding.get(id);
    if (queue === undefined || entry === undefined) {
      const reason = queue?.finished.get(id);
      if (reason !== undefined)
        throw new SvcError('conflict', `task ${id} is no longer waiting for a result (${reason})`);
      throw new SvcError('not_found', `no task ${id} for ${app}`);
    }
    if (entry.state !== 'in_flight')
      throw new SvcError('conflict', `task ${id} has not been fetched by a worker`);
    this.#finish(app, entry, 'answered', undefined, result);
  }

  /**
   * The worker's result without a task id (spec: the result PUT carries only the process key): it
   * answers the in-flight task of `app` that a fetch took most recently, which for a worker that
   * fetches, computes and answers one task at a time is the task it fetched. Only the app's current
   * process can get here (its key was verified), and in-flight tasks of a replaced process are
   * failed when it exits. Returns the answered task id; throws not_found when no task is in flight.
   */
  completeFetched(app: string, result: TaskBody): string {
    const queue = this.#apps.get(app);
    let latest: Entry | undefined;
    for (const entry of queue?.outstanding.values() ?? [])
      if (entry.state === 'in_flight' && (latest === undefined || entry.fetchedSeq > latest.fetchedSeq))
        latest = entry;
    if (latest === undefined)
      throw new SvcError('not_found', `no fetched task of ${app} is waiting for a result`);
    this.#finish(app, latest, 'answered', undefined, result);
    return latest.task.id;
  }

  /**
   * Cancel the outstanding tasks of `app` submitted by `principal` (or only task `id`). The waiting
   * submitters get task_cancelled. Returns the cancelled ids; throws not_found for an `id` that is
   * not an outstanding task of this principal.
   */
  cancel(app: string, principal: string, id?: string): string[] {
    const queue = this.#apps.get(app);
    const entries = queue === undefined ? [] : [...queue.outstanding.values()];
    const selected = entries.filter(
      (entry) => entry.task.submittedBy === principal && (id === undefined || entry.task.id === id),
    );
    if (id !== undefined && selected.length === 0)
      throw new SvcError('not_found', `no outstanding task ${id} of yours for ${app}`);
    for (const entry of selected)
      this.#finish(
        app,
        entry,
        'cancelled',
        new SvcError('task_cancelled', `task ${entry.task.id} of ${app} was cancelled by its submitter`),
      );
    return selected.map((entry) => entry.task.id);
  }

  /** Fail the in-flight tasks of `app` (their worker process is gone). Queued tasks stay. */
  failInFlight(app: string, error: SvcError): string[] {
    const queue = this.#apps.get(app);
    if (queue === undefined) return [];
    const failed = [...queue.outstanding.values()].filter((entry) => entry.state === 'in_flight');
    for (const entry of failed) this.#finish(app, entry, error.message, error);
    return failed.map((entry) => entry.task.id);
  }

  /** Answer every waiting fetch of `app` with `error` (its process key stopped being current). */
  rejectFetchers(app: string, error: SvcError): number {
    const queue = this.#apps.get(app);
    if (queue === undefined) return 0;
    const fetchers = queue.fetchers.splice(0);
    for (const fetcher of fetchers) {
      this.#clock.clearTimeout(fetcher.timer);
      fetcher.reject(error);
    }
    this.#prune(app, queue);
    return fetchers.length;
  }

  /** Fail everything of `app` (removed): queued and in-flight tasks and waiting fetches; forget it. */
  failApp(app: string, error: SvcError): void {
    const queue = this.#apps.get(app);
    if (queue === undefined) return;
    this.rejectFetchers(app, error);
    for (const entry of [...queue.outstanding.values()]) this.#finish(app, entry, error.message, error);
    this.#apps.delete(app);
  }

  /** Fail everything of every app (daemon shutdown). */
  close(error = new SvcError('unavailable', 'the daemon is stopping; the task was not answered')): void {
    for (const app of [...this.#apps.keys()]) this.failApp(app, error);
  }

  /** The oldest outstanding task of `app` (Map order is submission order), if any. */
  current(app: string): CurrentTask | undefined {
    const queue = this.#apps.get(app);
    if (queue === undefined) return undefined;
    for (const entry of queue.outstanding.values())
      return { task_id: entry.task.number, task_status: entry.state === 'queued' ? 'queued' : 'fetched' };
    return undefined;
  }

  /** Counters of one app (tests, diagnostics). */
  stats(app: string): { queued: number; inFlight: number; fetchers: number } {
    const queue = this.#apps.get(app);
    if (queue === undefined) return { queued: 0, inFlight: 0, fetchers: 0 };
    return {
      queued: queue.queued.length,
      inFlight: queue.outstanding.size - queue.queued.length,
      fetchers: queue.fetchers.length,
    };
  }

  /** Counters summed over every app (the metrics' task queue figures). */
  totals(): { queued: number; inFlight: number; fetchers: number } {
    const totals = { queued: 0, inFlight: 0, fetchers: 0 };
    for (const app of this.#apps.keys()) {
      const one = this.stats(app);
      totals.queued += one.queued;
      totals.inFlight += one.inFlight;
      totals.fetchers += one.fetchers;
    }
    return totals;
  }

  #queue(app: string): AppQueue {
    let queue = this.#apps.get(app);
    if (queue === undefined) {
      queue = { queued: [], outstanding: new Map(), fetchers: [], finished: new Map(), submitted: 0 };
      this.#apps.set(app, queue);
    }
    return queue;
  }

  /** Forget an app's queue once nothing is outstanding or waiting and no finished id is kept. */
  #prune(app: string, queue: AppQueue): void {
    if (queue.outstanding.size === 0 && queue.fetchers.length === 0 && queue.finished.size === 0)
      this.#apps.delete(app);
  }

  #handOver(entry: Entry, fetcher: Fetcher): void {
    this.#clock.clearTimeout(fetcher.timer);
    this.#markFetched(entry);
    fetcher.resolve(entry.task);
  }

  #markFetched(entry: Entry): void {
    entry.state = 'in_flight';
    entry.fetchedSeq = ++this.#fetchSeq;
  }

  #finish(app: string, entry: Entry, reason: string, error: SvcError | undefined, result?: TaskBody): void {
    const queue = this.#apps.get(app);
    if (queue === undefined || queue.outstanding.get(entry.task.id) !== entry) return;
    queue.outstanding.delete(entry.task.id);
    if (entry.state === 'queued') {
      const index = queue.queued.indexOf(entry);
      if (index !== -1) queue.queued.splice(index, 1);
    }
    this.#clock.clearTimeout(entry.timer);
    queue.finished.set(entry.task.id, reason);
    if (queue.finished.size > this.#finishedMemory) {
      const oldest = queue.finished.keys().next().value;
      if (oldest !== undefined) queue.finished.delete(oldest);
    }
    if (error !== undefined) entry.reject(error);
    else entry.resolve(result!);
  }
}
