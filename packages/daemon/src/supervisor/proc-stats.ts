// Reading /proc (Linux). Every function returns undefined when the process is gone or /proc is
// unreadable; none throws.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcStat {
  /** Field 22: start time in clock ticks since boot; with the pid it identifies a process. */
  startTicks: number;
  /** utime + stime (fields 14 + 15) in clock ticks. */
  cpuTicks: number;
  /** Field 5. */
  pgid: number;
  /** Field 3, for example 'Z' for a zombie. */
  state: string;
}

export function readProcStat(pid: number, procRoot = '/proc'): ProcStat | undefined {
  const full = readProcStatFull(pid, procRoot);
  return full === undefined
    ? undefined
    : { startTicks: full.startTicks, cpuTicks: full.cpuTicks, pgid: full.pgid, state: full.state };
}

/** Resident set size in bytes (VmRSS of /proc/<pid>/status). */
export function readRssBytes(pid: number, procRoot = '/proc'): number | undefined {
  try {
    const text = readFileSync(`${procRoot}/${pid}/status`, 'latin1');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** Whether `pid` is still the process that started at `startTicks` (a reused pid is not). */
export function isSameProcess(pid: number, startTicks: number, procRoot = '/proc'): boolean {
  const stat = readProcStat(pid, procRoot);
  return stat !== undefined && stat.startTicks === startTicks && stat.state !== 'Z';
}

/** Clock ticks per second; 100 on every Linux platform Node supports (USER_HZ). */
export const CLOCK_TICKS = 100;

/** Bytes per page (for RSS in pages): derived once from /proc/self (VmRSS kB vs statm pages). */
let pageSizeCache: number | undefined;
export function pageSize(procRoot = '/proc'): number {
  if (pageSizeCache !== undefined) return pageSizeCache;
  let size = 4096;
  try {
    const pages = Number(readFileSync(`${procRoot}/self/statm`, 'latin1').split(' ')[1]);
    const rss = readRssBytes(process.pid, procRoot);
    if (rss !== undefined && pages > 0) size = 2 ** Math.round(Math.log2(rss / pages));
  } catch {
    // keep 4096
  }
  if (!(size >= 4096 && size <= 65536)) size = 4096;
  pageSizeCache = size;
  return size;
}

export interface GroupUsage {
  /** Sum of the resident set sizes (field 24 x page size). */
  rssBytes: number;
  /** Sum of utime + stime + cutime + cstime (fields 14-17): reaped children count too. */
  cpuTicks: number;
  /** Processes counted. */
  processes: number;
  /** The walk stopped at its bound; the sums cover part of the group. */
  truncated: boolean;
  /** The processes counted as a tree: one line per process, its pid indented two spaces per level. */
  tree: string;
}

/** Upper bounds of one group walk: processes visited and /proc files read. */
export const GROUP_WALK_MAX_PROCESSES = 256;
const GROUP_WALK_MAX_READS = 1024;

/**
 * Resource usage of a process and its descendants that are in the same process group (what a stop
 * signals), found through /proc/<pid>/task/<tid>/children: cost proportional to the group, never
 * to the number of processes on the host, and bounded. A group member that was re-parented away
 * from the tree (its parent exited) is not found. Undefined when `root` is gone.
 */
export function readGroupUsage(root: number, procRoot = '/proc'): GroupUsage | undefined {
  const first = readProcStatFull(root, procRoot);
  if (first === undefined) return undefined;
  const pgid = first.pgid;
  const usage: GroupUsage = { rssBytes: 0, cpuTicks: 0, processes: 0, truncated: false, tree: '' };
  const lines: string[] = [];
  const depths: number[] = [0];
  const page = pageSize(procRoot);
  const queue: number[] = [root];
  const seen = new Set<number>();
  let reads = 1;
  for (let i = 0; i < queue.length; i++) {
    const pid = queue[i] as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const stat = i === 0 ? first : readProcStatFull(pid, procRoot);
    if (i > 0) reads++;
    if (stat === undefined || stat.pgid !== pgid) continue;
    if (stat.state !== 'Z') usage.rssBytes += stat.rssPages * page;
    usage.cpuTicks += stat.cpuTicks + stat.childTicks;
    usage.processes++;
    lines.push(`${'  '.repeat(depths[i] ?? 0)}${pid}`);
    if (usage.processes >= GROUP_WALK_MAX_PROCESSES || reads >= GROUP_WALK_MAX_READS) {
      usage.truncated = true;
      break;
    }
    let tids: string[];
    try {
      tids = readdirSync(`${procRoot}/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      if (++reads > GROUP_WALK_MAX_READS) {
        usage.truncated = true;
        break;
      }
      try {
        const children = readFileSync(`${procRoot}/${pid}/task/${tid}/children`, 'latin1');
        for (const child of children.split(' ')) {
          if (child === '') continue;
          queue.push(Number(child));
          depths.push((depths[i] ?? 0) + 1);
        }
      } catch {
        // thread or process gone
      }
    }
    if (usage.truncated) break;
  }
  usage.tree = lines.join('\n');
  return usage;
}

/** Number of open file descriptors of `pid` (readable only for processes the daemon may inspect). */
export function countOpenFds(pid: number, procRoot = '/proc'): number | undefined {
  try {
    return readdirSync(`${procRoot}/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

/** The real user id of `pid` (the Uid line of /proc/<pid>/status). */
export function readProcessUid(pid: number, procRoot = '/proc'): number | undefined {
  try {
    const match = /^Uid:\s+(\d+)/m.exec(readFileSync(`${procRoot}/${pid}/status`, 'latin1'));
    return match === null ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

let passwdCache: { at: number; names: Map<number, string> } | undefined;

/** The user name of `uid` from /etc/passwd (re-read at most once a minute), else the number. */
export function userName(uid: number, now = Date.now()): string {
  if (passwdCache === undefined || now - passwdCache.at > 60_000) {
    const names = new Map<number, string>();
    try {
      for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
        const [name, , id] = line.split(':');
        if (
          name !== undefined &&
          name !== '' &&
          id !== undefined &&
          /^\d+$/.test(id) &&
          !names.has(Number(id))
        )
          names.set(Number(id), name);
      }
    } catch {
      // no /etc/passwd: numbers only
    }
    passwdCache = { at: now, names };
  }
  return passwdCache.names.get(uid) ?? String(uid);
}

interface ProcStatFull extends ProcStat {
  rssPages: number;
  childTicks: number;
}

function readProcStatFull(pid: number, procRoot: string): ProcStatFull | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  let text: string;
  try {
    text = readFileSync(`${procRoot}/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // comm (field 2) may contain spaces and parentheses: fields resume after the LAST ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3.
  const field = (n: number): number => Number(rest[n - 3]);
  const startTicks = field(22);
  if (!Number.isFinite(startTicks)) return undefined;
  return {
    startTicks,
    cpuTicks: field(14) + field(15),
    childTicks: field(16) + field(17),
    pgid: field(5),
    state: rest[0] ?? '?',
    rssPages: field(24),
  };
}
