// Reading /proc (Linux). Every function returns undefined when the process is gone or /proc is
// unreadable; none throws.
import { readFileSync } from 'node:fs';

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
  return { startTicks, cpuTicks: field(14) + field(15), pgid: field(5), state: rest[0] ?? '?' };
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
