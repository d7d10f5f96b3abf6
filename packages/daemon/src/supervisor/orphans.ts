// Orphan recovery, the /proc half: find processes that claim to be managed apps of svc.
//
// The snapshot is written without fsync and at most every 50 ms, so a daemon crash right after a
// start can lose that process's entry. Such a process keeps running (its own process group,
// detached) with the injected SVC_APPLICATION_NAME, SVC_PROCESS_UUID and SVC_PROCESS_KEY; the
// supervisor scans /proc once at start-up and adopts the ones whose key verifies (orphan-recovery.ts).
//
// Cost and bounds: one readdir of /proc (at most ORPHAN_SCAN_MAX_ENTRIES entries), one read of
// /proc/<pid>/stat per process (threads are not listed; kernel threads and every process that
// does not lead its process group stop there), and one read of /proc/<pid>/environ per group
// leader (other users' processes fail with EACCES and are skipped). Nothing here throws.
import { closeSync, opendirSync, openSync, readlinkSync, readSync } from 'node:fs';
import { readProcStat } from './proc-stats.ts';

/** At most this many /proc entries are looked at (the scan reports `truncated` beyond). */
export const ORPHAN_SCAN_MAX_ENTRIES = 65_536;
/**
 * Bytes of /proc/<pid>/environ read at most. The injected variables come last in the block, so the
 * cap is far above what exec accepts by default (ARG_MAX: 2 MiB for argv + environment).
 */
const ENVIRON_MAX_BYTES = 8 * 1024 * 1024;

/** A process-group leader whose environment names an svc app. Nothing about it is verified yet. */
export interface ClaimingProcess {
  pid: number;
  /** Parent pid when scanned (field 4). */
  ppid: number;
  /** Field 22 of /proc/<pid>/stat. */
  startTicks: number;
  app: string;
  processUuid: string;
  processKey: string;
  /** SVC_LAUNCH_TIME as epoch ms (undefined when absent or unparsable). */
  launchedAt: number | undefined;
}

export interface OrphanScan {
  claims: ClaimingProcess[];
  /** Numeric /proc entries looked at. */
  entries: number;
  /** Process-group leaders whose environ was read (or tried). */
  leaders: number;
  /** Stopped at ORPHAN_SCAN_MAX_ENTRIES. */
  truncated: boolean;
  /** Wall time of the scan. */
  ms: number;
}

export interface OrphanScanOptions {
  /** Processes not to look at (the daemon, processes already adopted). */
  skip: (pid: number) => boolean;
  procRoot?: string;
  maxEntries?: number;
}

/** Scan /proc once for group leaders whose environment carries SVC_APPLICATION_NAME + key + uuid. */
export function scanClaimingProcesses(options: OrphanScanOptions): OrphanScan {
  const started = performance.now();
  const procRoot = options.procRoot ?? '/proc';
  const max = options.maxEntries ?? ORPHAN_SCAN_MAX_ENTRIES;
  const result: OrphanScan = { claims: [], entries: 0, leaders: 0, truncated: false, ms: 0 };
  let dir;
  try {
    dir = opendirSync(procRoot, { bufferSize: 128 });
  } catch {
    result.ms = performance.now() - started;
    return result;
  }
  const buffer = Buffer.allocUnsafe(64 * 1024);
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      const name = entry.name;
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue; // not a pid: self, sys, meminfo…
      if (result.entries >= max) {
        result.truncated = true;
        break;
      }
      result.entries++;
      const pid = Number(name);
      if (options.skip(pid)) continue;
      // Kernel threads have pgrp 0; svc spawns every app as the leader of its own group.
      const ppid = leaderParent(`${procRoot}/${name}/stat`, pid, buffer);
      if (ppid === undefined) continue;
      result.leaders++;
      const env = readEnviron(`${procRoot}/${name}/environ`, buffer);
      if (env === undefined) continue;
      const claim = claimOf(env);
      if (claim === undefined) continue;
      const stat = readProcStat(pid, procRoot);
      if (stat === undefined || stat.pgid !== pid || stat.state === 'Z') continue;
      result.claims.push({ pid, ppid, startTicks: stat.startTicks, ...claim });
    }
  } catch {
    // /proc vanished mid-scan: what was found so far stands.
  } finally {
    dir.closeSync();
  }
  result.ms = performance.now() - started;
  return result;
}

/**
 * The parent pid when /proc/<pid>/stat says the process leads its group and is not a zombie, else
 * undefined: one open + read into the shared buffer, fields parsed from the last ')' (comm may
 * hold spaces and parentheses).
 */
function leaderParent(path: string, pid: number, buffer: Buffer): number | undefined {
  let text: string;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    text = buffer.toString('latin1', 0, readSync(fd, buffer, 0, 1024, 0));
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
  // After ')': "S ppid pgrp …"
  const rest = text.slice(text.lastIndexOf(')') + 2);
  if (rest.startsWith('Z')) return undefined;
  const a = rest.indexOf(' ');
  const b = rest.indexOf(' ', a + 1);
  const c = rest.indexOf(' ', b + 1);
  if (a <= 0 || b <= a || c <= b || Number(rest.slice(b + 1, c)) !== pid) return undefined;
  return Number(rest.slice(a + 1, b));
}

/**
 * Whether `pid`'s environment carries SVC_PROCESS_UUID=`uuid`: a claim whose parent does is a
 * descendant of that process (it called setsid), not the process svc spawned (whose parent is
 * the daemon, or init / a subreaper once the daemon is gone).
 */
export function environHasUuid(pid: number, uuid: string, procRoot = '/proc'): boolean {
  if (pid <= 1) return false;
  const env = readEnviron(`${procRoot}/${pid}/environ`, Buffer.allocUnsafe(64 * 1024));
  return env !== undefined && `\0${env}`.includes(`\0SVC_PROCESS_UUID=${uuid}\0`);
}

const UUID_VARIABLE = Buffer.from('SVC_PROCESS_UUID=');

/**
 * The environment block (NUL-separated), undefined when unreadable (gone, other user) or when it
 * has no SVC_PROCESS_UUID (searched in the bytes: almost no process is decoded).
 */
function readEnviron(path: string, buffer: Buffer): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    let n = readSync(fd, buffer, 0, buffer.length, null);
    if (n < buffer.length) {
      const block = buffer.subarray(0, n);
      return block.includes(UUID_VARIABLE) ? block.toString('utf8') : undefined;
    }
    const parts: Buffer[] = [Buffer.from(buffer)];
    let total = n;
    while (total < ENVIRON_MAX_BYTES && (n = readSync(fd, buffer, 0, buffer.length, null)) > 0) {
      parts.push(Buffer.from(buffer.subarray(0, n)));
      total += n;
    }
    const all = Buffer.concat(parts);
    return all.includes(UUID_VARIABLE) ? all.toString('utf8') : undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

const VARS = {
  app: 'SVC_APPLICATION_NAME=',
  processUuid: 'SVC_PROCESS_UUID=',
  processKey: 'SVC_PROCESS_KEY=',
  launch: 'SVC_LAUNCH_TIME=',
} as const;

function claimOf(env: string): Omit<ClaimingProcess, 'pid' | 'ppid' | 'startTicks'> | undefined {
  // Cheap reject: almost no process on a host carries the uuid variable.
  if (!env.includes(VARS.processUuid)) return undefined;
  let app: string | undefined;
  let processUuid: string | undefined;
  let processKey: string | undefined;
  let launch: string | undefined;
  for (const item of env.split('\0')) {
    if (!item.startsWith('SVC_')) continue;
    if (item.startsWith(VARS.app)) app = item.slice(VARS.app.length);
    else if (item.startsWith(VARS.processUuid)) processUuid = item.slice(VARS.processUuid.length);
    else if (item.startsWith(VARS.processKey)) processKey = item.slice(VARS.processKey.length);
    else if (item.startsWith(VARS.launch)) launch = item.slice(VARS.launch.length);
  }
  if (app === undefined || processUuid === undefined || processKey === undefined) return undefined;
  const launchedAt = launch === undefined ? NaN : Date.parse(launch);
  return { app, processUuid, processKey, launchedAt: Number.isFinite(launchedAt) ? launchedAt : undefined };
}

/** Where the process's stdout / stderr point now (readlink of fd 1 and 2), for diagnostics. */
export function outputTargets(pid: number, procRoot = '/proc'): (string | undefined)[] {
  return [1, 2].map((fd) => {
    try {
      return readlinkSync(`${procRoot}/${pid}/fd/${fd}`);
    } catch {
      return undefined;
    }
  });
}
