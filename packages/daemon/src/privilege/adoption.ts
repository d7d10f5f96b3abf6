// Which running processes a caller may adopt with the definition's `pid` (CONTRACT §7), and may
// therefore later signal through svc: docs/security.md, "Process adoption, signals and process
// groups". Pure rules over facts read from /proc (readProcessFacts), so that they are tested
// without processes.
//
// - Only a process every uid of which (real, effective, saved, file system) is the caller's
//   execution user: a principal acts on what its user could signal with kill(1) itself, and only
//   one that runs as root may adopt root's processes.
// - Never pid 1 or a kernel thread, never svcd, svc-spawner, a system app's process, or any process
//   in svcd's or the spawner's process group, whoever asks.
// - An adopted process is signalled alone, never its group (svc did not create that group), and
//   only while it is still the process adopted (start time) and adoptionRefusal still allows it
//   (a process that exec'd something setuid is let go, not signalled: supervisor/hooks/adopted.ts).
import { readFileSync } from 'node:fs';

export interface ProcessFacts {
  /** Real, effective, saved and file-system uid (the Uid: line of /proc/<pid>/status). */
  readonly uids: readonly number[];
  readonly pgid: number;
  /** Kernel threads (PF_KTHREAD) cannot be adopted. */
  readonly kernelThread: boolean;
}

export interface AdoptionRules {
  /** The uid of the caller's execution user (0 when it runs as root). */
  readonly callerUid: number;
  /** svcd, svc-spawner and every running system app: never adopted, whoever asks. */
  readonly protectedPids: ReadonlySet<number>;
  /** Process groups of svcd and svc-spawner. */
  readonly protectedGroups: ReadonlySet<number>;
}

const PF_KTHREAD = 0x00200000;

/** The facts of `pid`, or undefined when it does not exist (or is a zombie). */
export function readProcessFacts(pid: number, procRoot = '/proc'): ProcessFacts | undefined {
  try {
    const stat = readFileSync(`${procRoot}/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    const pgid = Number(fields[2]);
    const flags = Number(fields[6]);
    const match = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readFileSync(`${procRoot}/${pid}/status`, 'latin1'));
    if (match === null || !Number.isInteger(pgid)) return undefined;
    return {
      uids: match.slice(1, 5).map(Number),
      pgid,
      kernelThread: (flags & PF_KTHREAD) !== 0,
    };
  } catch {
    return undefined;
  }
}

/** Why `pid` may not be adopted under `rules`, or undefined when it may. */
export function adoptionRefusal(pid: number, facts: ProcessFacts, rules: AdoptionRules): string | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 1) return 'pid: process 1 (init) cannot be adopted';
  if (facts.kernelThread) return `pid: process ${pid} is a kernel thread`;
  if (rules.protectedPids.has(pid) || rules.protectedGroups.has(facts.pgid))
    return `pid: process ${pid} belongs to svc itself (the daemon, svc-spawner or a system application)`;
  return ownerRefusal(pid, facts, rules.callerUid);
}

function ownerRefusal(pid: number, facts: ProcessFacts, callerUid: number): string | undefined {
  if (callerUid === 0) return undefined;
  if (facts.uids.every((uid) => uid === callerUid)) return undefined;
  return `pid: process ${pid} does not belong to the caller's execution user (only its own processes can be adopted)`;
}
