import { describe, expect, it } from 'vitest';
import type { SvcError } from '@svc/protocol';
import type { SupervisorEvent } from '../supervisor/types.ts';
import { linkTasksToSupervisor } from './supervisor-link.ts';
import { TaskQueues } from './task-queues.ts';

function fakeSupervisor() {
  const listeners = new Set<(event: SupervisorEvent) => void>();
  return {
    onEvent(listener: (event: SupervisorEvent) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit: (event: SupervisorEvent) => listeners.forEach((listener) => listener(event)),
  };
}

const payload = { body: new Uint8Array([1]), contentType: 'application/octet-stream' };
const codeOf = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'resolved',
    (error: SvcError) => error.code,
  );

describe('linkTasksToSupervisor', () => {
  it('EXIT fails in-flight tasks (task_cancelled) and waiting fetches (412); queued tasks stay', async () => {
    const tasks = new TaskQueues();
    const supervisor = fakeSupervisor();
    linkTasksToSupervisor(tasks, supervisor);
    const held = tasks.submit('app', { payload, submittedBy: 'u', timeoutMs: 10_000 });
    await tasks.fetch('app', 0).task;
    const queued = tasks.submit('app', { payload, submittedBy: 'u', timeoutMs: 10_000 });
    const other = tasks.fetch('other', 10_000);
    supervisor.emit({
      type: 'EXIT',
      app: 'app',
      pid: 1,
      exitCode: 3,
      lastError: undefined,
      processUuid: 'p',
    });
    expect(await codeOf(held.result)).toBe('task_cancelled');
    expect(tasks.stats('app')).toEqual({ queued: 1, inFlight: 0, fetchers: 0 });
    const waiting = tasks.fetch('app', 10_000);
    expect((await waiting.task)?.id).toBe(queued.task.id);
    const idle = tasks.fetch('app', 10_000);
    supervisor.emit({ type: 'START', app: 'app', pid: 2, processUuid: 'q' });
    expect(await codeOf(idle.task)).toBe('process_superseded');
    expect(await codeOf(queued.result)).toBe('task_cancelled'); // it was in flight at START
    other.cancel();
    tasks.close();
  });

  it('REMOVED fails queued tasks with app_not_found; unsubscribing stops the link', async () => {
    const tasks = new TaskQueues();
    const supervisor = fakeSupervisor();
    const unlink = linkTasksToSupervisor(tasks, supervisor);
    const queued = tasks.submit('app', { payload, submittedBy: 'u', timeoutMs: 10_000 });
    supervisor.emit({ type: 'REMOVED', app: 'app' });
    expect(await codeOf(queued.result)).toBe('app_not_found');
    unlink();
    const later = tasks.submit('app', { payload, submittedBy: 'u', timeoutMs: 10_000 });
    supervisor.emit({ type: 'REMOVED', app: 'app' });
    expect(tasks.stats('app').queued).toBe(1);
    tasks.close();
    expect(await codeOf(later.result)).toBe('unavailable');
  });
});
