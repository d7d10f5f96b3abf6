import { describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { TaskQueues, type TaskBody, type TaskClock } from './task-queues.ts';

/** A manual clock: timers fire only when the test advances time. */
function manualClock(): TaskClock & { advance(ms: number): void; pending(): number } {
  let now = 1_000_000;
  let seq = 0;
  const timers = new Map<number, { at: number; callback: () => void }>();
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const id = ++seq;
      timers.set(id, { at: now + ms, callback });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      now += ms;
      for (const [id, timer] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (timer.at <= now && timers.delete(id)) timer.callback();
      }
    },
    pending: () => timers.size,
  };
}

const body = (text: string, contentType = 'text/plain'): TaskBody => ({
  body: new TextEncoder().encode(text),
  contentType,
});
const textOf = (b: TaskBody): string => new TextDecoder().decode(b.body);

async function rejection(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SvcError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('TaskQueues', () => {
  it('hands tasks to fetches in FIFO order and resolves the submitter with the result', async () => {
    const clock = manualClock();
    const queues = new TaskQueues({ clock });
    const a = queues.submit('app', { payload: body('a'), submittedBy: 'u', timeoutMs: 1000 });
    const b = queues.submit('app', { payload: body('b'), submittedBy: 'u', timeoutMs: 1000 });
    const first = await queues.fetch('app', 0).task;
    const second = await queues.fetch('app', 0).task;
    expect([first?.id, second?.id]).toEqual([a.task.id, b.task.id]);
    expect(textOf(first!.payload)).toBe('a');
    queues.complete('app', second!.id, body('result:b', 'application/json'));
    queues.complete('app', first!.id, body('result:a'));
    expect(textOf(await a.result)).toBe('result:a');
    const resultB = await b.result;
    expect([textOf(resultB), resultB.contentType]).toEqual(['result:b', 'application/json']);
    expect(queues.stats('app')).toEqual({ queued: 0, inFlight: 0, fetchers: 0 });
    expect(clock.pending()).toBe(0);
  });

  it('current(): the oldest outstanding task as the app view shows it (task_id 1, 2 … and queued/fetched)', async () => {
    const queues = new TaskQueues({ clock: manualClock() });
    expect(queues.current('app')).toBeUndefined();
    const a = queues.submit('app', { payload: body('a'), submittedBy: 'u', timeoutMs: 1000 });
    queues.submit('app', { payload: body('b'), submittedBy: 'u', timeoutMs: 1000 });
    expect(queues.current('app')).toEqual({ task_id: 1, task_status: 'queued' });
    const first = await queues.fetch('app', 0).task;
    expect(first?.number).toBe(1);
    expect(queues.current('app')).toEqual({ task_id: 1, task_status: 'fetched' });
    queues.complete('app', a.task.id, body('done'));
    expect(queues.current('app')).toEqual({ task_id: 2, task_status: 'queued' });
    expect(queues.current('other')).toBeUndefined();
  });

  it('a result without a task id answers the task fetched last (also one handed to a waiting fetch)', async () => {
    const clock = manualClock();
    const queues = new TaskQueues({ clock });
    expect(() => queues.completeFetched('app', body('nothing'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
    const a = queues.submit('app', { payload: body('a'), submittedBy: 'u', timeoutMs: 1000 });
    expect(() => queues.completeFetched('app', body('queued only'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
    await queues.fetch('app', 0).task;
    const waiting = queues.fetch('app', 30_000);
    const b = queues.submit('app', { payload: body('b'), submittedBy: 'u', timeoutMs: 1000 });
    expect((await waiting.task)?.id).toBe(b.task.id);
    expect(queues.completeFetched('app', body('result:b'))).toBe(b.task.id);
    expect(textOf(await b.result)).toBe('result:b');
    expect(queues.completeFetched('app', body('result:a'))).toBe(a.task.id);
    expect(textOf(await a.result)).toBe('result:a');
    expect(() => queues.completeFetched('app', body('again'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
    expect(queues.stats('app')).toEqual({ queued: 0, inFlight: 0, fetchers: 0 });
  });

  it('a waiting fetch gets the next submitted task at once; an idle one resolves undefined at its timeout', async () => {
    const clock = manualClock();
    const queues = new TaskQueues({ clock });
    const waiting = queues.fetch('app', 30_000);
    const idle = queues.fetch('other', 30_000);
    const { task } = queues.submit('app', { payload: body('x'), submittedBy: 'u', timeoutMs: 60_000 });
    expect((await waiting.task)?.id).toBe(task.id);
    clock.advance(30_000);
    expect(await idle.task).toBeUndefined();
    expect(queues.stats('other').fetchers).toBe(0);
  });

  it('never delivers a task twice, even to many fetchers', async () => {
    const queues = new TaskQueues({ clock: manualClock(), capacity: 100 });
    const fetches = Array.from({ length: 60 }, () => queues.fetch('app', 10_000));
    const ids = Array.from(
      { length: 50 },
      (_, i) => queues.submit('app', { payload: body(String(i)), submittedBy: 'u', timeoutMs: 1000 }).task.id,
    );
    for (const f of fetches.slice(50)) f.cancel();
    const got = (await Promise.all(fetches.map((f) => f.task)))
      .filter((t) => t !== undefined)
      .map((t) => t.id);
    expect(got).toEqual(ids);
    expect(await queues.fetch('app', 0).task).toBeUndefined();
  });

  it('refuses with queue_full above capacity (queued and in flight count)', async () => {
    const queues = new TaskQueues({ clock: manualClock(), capacity: 2 });
    queues.submit('app', { payload: body('1'), submittedBy: 'u', timeoutMs: 1000 });
    queues.submit('app', { payload: body('2'), submittedBy: 'u', timeoutMs: 1000 });
    await queues.fetch('app', 0).task;
    expect(() => queues.submit('app', { payload: body('3'), submittedBy: 'u', timeoutMs: 1000 })).toThrow(
      expect.objectContaining({ code: 'queue_full', status: 503 }),
    );
    // Another app has its own queue.
    expect(() => queues.submit('b', { payload: body('1'), submittedBy: 'u', timeoutMs: 1000 })).not.toThrow();
  });

  it('withdraws a task at its deadline: 408 for the submitter, 409 for a late result, not fetched any more', async () => {
    const clock = manualClock();
    const queues = new TaskQueues({ clock });
    const inFlight = queues.submit('app', { payload: body('a'), submittedBy: 'u', timeoutMs: 1000 });
    const queued = queues.submit('app', { payload: body('b'), submittedBy: 'u', timeoutMs: 500 });
    const taken = await queues.fetch('app', 0).task;
    expect(taken?.id).toBe(inFlight.task.id);
    clock.advance(1000);
    expect((await rejection(inFlight.result)).code).toBe('timeout');
    expect((await rejection(queued.result)).status).toBe(408);
    expect(await queues.fetch('app', 0).task).toBeUndefined();
    expect(() => queues.complete('app', inFlight.task.id, body('late'))).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
    expect(() => queues.complete('app', 'never-seen', body('x'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
  });

  it('refuses a result for a task that was not fetched, and a second result', async () => {
    const queues = new TaskQueues({ clock: manualClock() });
    const { task, result } = queues.submit('app', { payload: body('a'), submittedBy: 'u', timeoutMs: 1000 });
    expect(() => queues.complete('app', task.id, body('r'))).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
    await queues.fetch('app', 0).task;
    queues.complete('app', task.id, body('r'));
    expect(() => queues.complete('app', task.id, body('r'))).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
    expect(textOf(await result)).toBe('r');
  });

  it("cancels only the caller's tasks (all, or one by id) with task_cancelled", async () => {
    const queues = new TaskQueues({ clock: manualClock() });
    const mine1 = queues.submit('app', { payload: body('1'), submittedBy: 'me', timeoutMs: 1000, id: 't1' });
    const mine2 = queues.submit('app', { payload: body('2'), submittedBy: 'me', timeoutMs: 1000 });
    const theirs = queues.submit('app', {
      payload: body('3'),
      submittedBy: 'them',
      timeoutMs: 1000,
      id: 't3',
    });
    await queues.fetch('app', 0).task; // t1 is in flight
    expect(() => queues.cancel('app', 'me', 't3')).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect(queues.cancel('app', 'me', 't1')).toEqual(['t1']);
    const cancelled = await rejection(mine1.result);
    expect([cancelled.code, cancelled.status]).toEqual(['task_cancelled', 409]);
    expect(queues.cancel('app', 'me')).toEqual([mine2.task.id]);
    expect((await rejection(mine2.result)).code).toBe('task_cancelled');
    expect(queues.stats('app')).toEqual({ queued: 1, inFlight: 0, fetchers: 0 });
    expect((await queues.fetch('app', 0).task)?.id).toBe(theirs.task.id);
    expect(() => queues.complete('app', 't1', body('late'))).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
  });

  it('refuses a caller-chosen id that is already outstanding', () => {
    const queues = new TaskQueues({ clock: manualClock() });
    queues.submit('app', { payload: body('1'), submittedBy: 'me', timeoutMs: 1000, id: 'same' });
    expect(() =>
      queues.submit('app', { payload: body('2'), submittedBy: 'me', timeoutMs: 1000, id: 'same' }),
    ).toThrow(expect.objectContaining({ code: 'conflict' }));
  });

  it('failInFlight fails held tasks but keeps queued ones; rejectFetchers answers waiting fetches', async () => {
    const queues = new TaskQueues({ clock: manualClock() });
    const held = queues.submit('app', { payload: body('1'), submittedBy: 'u', timeoutMs: 1000 });
    const queued = queues.submit('app', { payload: body('2'), submittedBy: 'u', timeoutMs: 1000 });
    await queues.fetch('app', 0).task;
    expect(queues.failInFlight('app', new SvcError('task_cancelled', 'worker exited'))).toEqual([
      held.task.id,
    ]);
    expect((await rejection(held.result)).message).toBe('worker exited');
    expect((await queues.fetch('app', 0).task)?.id).toBe(queued.task.id);
    const waiting = queues.fetch('app', 10_000);
    expect(queues.rejectFetchers('app', new SvcError('process_superseded', 'old'))).toBe(1);
    expect((await rejection(waiting.task)).status).toBe(412);
  });

  it('failApp fails queued, in-flight and waiting fetches and forgets the app', async () => {
    const clock = manualClock();
    const queues = new TaskQueues({ clock });
    const a = queues.submit('app', { payload: body('1'), submittedBy: 'u', timeoutMs: 1000 });
    const b = queues.submit('app', { payload: body('2'), submittedBy: 'u', timeoutMs: 1000 });
    await queues.fetch('app', 0).task;
    queues.failApp('app', new SvcError('app_not_found', 'removed'));
    expect((await rejection(a.result)).code).toBe('app_not_found');
    expect((await rejection(b.result)).code).toBe('app_not_found');
    expect(clock.pending()).toBe(0);
    expect(() => queues.complete('app', a.task.id, body('x'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
  });

  it('remembers a bounded number of finished ids', async () => {
    const queues = new TaskQueues({ clock: manualClock(), finishedMemory: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { task } = queues.submit('app', { payload: body(String(i)), submittedBy: 'u', timeoutMs: 1000 });
      await queues.fetch('app', 0).task;
      queues.complete('app', task.id, body('r'));
      ids.push(task.id);
    }
    expect(() => queues.complete('app', ids[0]!, body('r'))).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
    expect(() => queues.complete('app', ids[2]!, body('r'))).toThrow(
      expect.objectContaining({ code: 'conflict' }),
    );
  });

  it('a cancelled fetch gives nothing back and takes nothing', async () => {
    const queues = new TaskQueues({ clock: manualClock() });
    const fetch = queues.fetch('app', 10_000);
    fetch.cancel();
    expect(await fetch.task).toBeUndefined();
    const { task } = queues.submit('app', { payload: body('1'), submittedBy: 'u', timeoutMs: 1000 });
    expect(queues.stats('app')).toEqual({ queued: 1, inFlight: 0, fetchers: 0 });
    expect((await queues.fetch('app', 0).task)?.id).toBe(task.id);
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new TaskQueues({ capacity: 0 })).toThrow(RangeError);
  });
});
