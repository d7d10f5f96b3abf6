// Keeps the task queues in step with the supervisor: a worker process that exits or is replaced
// cannot answer the tasks it holds, and a removed application has no worker at all.
import { SvcError } from '@svc/protocol';
import type { SupervisorApi } from '../supervisor/types.ts';
import type { TaskQueues } from './task-queues.ts';

/** Subscribes to supervisor events; returns the unsubscribe function. */
export function linkTasksToSupervisor(
  tasks: TaskQueues,
  supervisor: Pick<SupervisorApi, 'onEvent'>,
): () => void {
  return supervisor.onEvent((event) => {
    switch (event.type) {
      case 'EXIT':
      case 'START': {
        // Every START and EXIT passes here, nearly always for apps without tasks: the errors (and
        // their stack captures) are built only when there is something to fail.
        const { inFlight, fetchers } = tasks.stats(event.app);
        if (inFlight === 0 && fetchers === 0) break;
        // The process that took the in-flight tasks is gone (EXIT) or replaced (START of a newer
        // one): they can never be answered. Queued tasks wait for the next process.
        const why =
          event.type === 'EXIT'
            ? `the worker process exited${event.exitCode === undefined ? '' : ` with ${event.exitCode}`}`
            : 'the worker process was replaced by a new one';
        if (inFlight > 0)
          tasks.failInFlight(
            event.app,
            new SvcError(
              'task_cancelled',
              `task of ${event.app} cancelled: ${why} before returning a result`,
            ),
          );
        // Fetches still waiting were made with the old process's key (a new process cannot have
        // fetched before its START): that key is no longer current.
        if (fetchers > 0)
          tasks.rejectFetchers(
            event.app,
            new SvcError('process_superseded', `the process of this key exited or was superseded (${why})`),
          );
        break;
      }
      case 'REMOVED':
        tasks.failApp(
          event.app,
          new SvcError('app_not_found', `application ${event.app} was removed before the task was answered`),
        );
        break;
      default:
        break;
    }
  });
}
