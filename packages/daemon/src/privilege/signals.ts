// Every signal svcd sends to a process or a process group goes through here. kill(2) with pid -1
// signals every process the sender may signal (as root: all of them), 0 and -0 the sender's own
// group, and pid 1 is init: none of these can be reached by construction, whatever a caller,
// a snapshot or a bug hands in. Neither can svcd itself or its own group.
import { pid as daemonPid } from 'node:process';

/** Whether `pid` may ever be signalled (as a process, or as the id of a group svc created). */
export function signallable(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 1 && pid !== daemonPid;
}

/** Signal the process group led by `pid` (one svc created); false when refused or gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals | number): boolean {
  if (!signallable(pid)) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Signal the one process `pid`; false when refused or gone. */
export function signalProcess(pid: number, signal: NodeJS.Signals | number): boolean {
  if (!signallable(pid)) return false;
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}
