// `svc daemon stop [--all]`: stops the svcd of the local SVC_HOME (the pid in work/svcd.pid) and, with
// --all, every process it supervises (the process groups recorded in work/.snapshot, system
// applications included): pm2-kill behaviour for people who want it. Local only: whoever can read
// that home's work/ and signal its processes may stop them; no API call, no token.
//
// A pid is signalled only while /proc/<pid>/stat still shows the recorded start time, so a pid that
// the kernel reused for another process is never touched.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError, EXIT } from './errors.ts';

export interface StopReport {
  daemon: { pid: number; stopped: boolean } | undefined;
  /** Applications whose process (group) was stopped. */
  apps: string[];
}

interface Recorded {
  pid: number;
  startTicks: number;
}

interface RecordedProcess extends Recorded {
  app: string;
  signalPidOnly: boolean;
}

/** Field 22 (start time) and field 3 (state) of /proc/<pid>/stat, or undefined when gone. */
function procStat(pid: number): { startTicks: number; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, startTicks: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

function isAlive(process: Recorded): boolean {
  const stat = procStat(process.pid);
  return stat !== undefined && stat.startTicks === process.startTicks && stat.state !== 'Z';
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`, EXIT.error);
  }
}

const validPid = (pid: unknown): pid is number => Number.isSafeInteger(pid) && (pid as number) > 1;

function readDaemonPid(workDir: string): Recorded | undefined {
  const data = readJson(join(workDir, 'svcd.pid')) as { pid?: unknown; start_ticks?: unknown } | undefined;
  if (data === undefined) return undefined;
  if (!validPid(data.pid) || !Number.isSafeInteger(data.start_ticks))
    throw new CliError(`${join(workDir, 'svcd.pid')}: not a pid record`, EXIT.error);
  return { pid: data.pid, startTicks: data.start_ticks as number };
}

function readSupervised(workDir: string): RecordedProcess[] {
  const data = readJson(join(workDir, '.snapshot')) as { processes?: unknown } | undefined;
  if (data === undefined || !Array.isArray(data.processes)) return [];
  const out: RecordedProcess[] = [];
  for (const entry of data.processes as Record<string, unknown>[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    if (!validPid(entry['pid']) || !Number.isSafeInteger(entry['startTicks'])) continue;
    out.push({
      app: typeof entry['app'] === 'string' ? entry['app'].slice(0, 128) : '?',
      pid: entry['pid'],
      startTicks: entry['startTicks'] as number,
      signalPidOnly: entry['signalPidOnly'] === true,
    });
  }
  return out;
}

function signal(target: RecordedProcess | Recorded, sig: NodeJS.Signals, group: boolean): void {
  if (!isAlive(target)) return;
  try {
    process.kill(group ? -target.pid : target.pid, sig);
  } catch {
    // gone meanwhile, or the group has no leader any more: try the pid alone
    try {
      process.kill(target.pid, sig);
    } catch {
      // gone
    }
  }
}

async function waitGone(targets: Recorded[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (targets.every((t) => !isAlive(t))) return true;
    if (Date.now() > deadline) return false;
    // Bounded condition poll on /proc: a signalled process ends on its own schedule.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Stop svcd (SIGTERM, then SIGKILL after `graceMs`) and with `all` every supervised process group
 * recorded in the snapshot svcd writes as it detaches (SIGTERM, then SIGKILL after `graceMs`).
 */
export async function stopDaemon(
  home: string,
  options: { all: boolean; graceMs: number },
): Promise<StopReport> {
  const workDir = join(home, 'work');
  const daemon = readDaemonPid(workDir);
  let report: StopReport['daemon'];
  if (daemon !== undefined && isAlive(daemon)) {
    signal(daemon, 'SIGTERM', false);
    if (!(await waitGone([daemon], options.graceMs))) {
      signal(daemon, 'SIGKILL', false);
      await waitGone([daemon], 5000);
    }
    report = { pid: daemon.pid, stopped: !isAlive(daemon) };
  }
  if (!options.all) return { daemon: report, apps: [] };

  // Read after svcd is gone: its last act is writing the final snapshot.
  const supervised = readSupervised(workDir).filter(isAlive);
  for (const target of supervised) signal(target, 'SIGTERM', !target.signalPidOnly);
  if (!(await waitGone(supervised, options.graceMs)))
    for (const target of supervised) signal(target, 'SIGKILL', !target.signalPidOnly);
  await waitGone(supervised, 5000);
  const left = supervised.filter(isAlive);
  if (left.length > 0)
    throw new CliError(`could not stop ${left.map((t) => `${t.app} (pid ${t.pid})`).join(', ')}`, EXIT.error);
  return { daemon: report, apps: [...new Set(supervised.map((t) => t.app))].sort() };
}
