// Shared helpers of the robustness tests: real processes, real files, bounded waits only.
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import { startTestDaemon, type CallResult, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';

export { waitFor };

/** Resolves with `value`, or rejects naming `what` after `ms` (a bound, not a synchronisation). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** The daemon's log as text ('' before it exists). */
export async function serverLog(daemon: { workDir: string }): Promise<string> {
  try {
    return await readFile(join(daemon.workDir, 'server.log'), 'utf8');
  } catch {
    return '';
  }
}

/** Live (non-zombie) members of a process group, from /proc. */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp ... — comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && Number(fields[2]) === pgid) members.push(Number(entry));
  }
  return members;
}

/** True while the process exists and is not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** SIGKILL a process group we are responsible for; a gone group is fine. */
export function killGroup(pgid: number | undefined): void {
  if (pgid === undefined || pgid <= 1) return;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export async function waitGroupGone(pgid: number, what: string): Promise<void> {
  await waitFor(() => groupMembers(pgid).length === 0, { timeoutMs: 15_000, what, intervalMs: 20 });
}

export interface AppView {
  name: string;
  pid?: number;
  process_uuid?: string;
  starts: number;
  state: string;
  command: string;
  [key: string]: unknown;
}

export function ok<T = unknown>(result: CallResult, what: string): T {
  expect(result.status, `${what}: ${result.text()}`).toBe(200);
  return result.json<T>();
}

/** GET /svc/app/{name} as admin. */
export async function getApp(daemon: TestDaemon, name: string): Promise<AppView> {
  const token = await daemon.token('admin');
  return ok<AppView>(await daemon.rest().call('GET', `/svc/app/${name}`, { token }), `GET ${name}`);
}

/** Wait until the app has a running process and return its view. */
export async function waitRunning(daemon: TestDaemon, name: string): Promise<AppView> {
  return waitFor(
    async () => {
      const app = await getApp(daemon, name);
      return app.pid !== undefined && app.pid > 0 && processAlive(app.pid) ? app : undefined;
    },
    { timeoutMs: 10_000, what: `${name} to be running`, intervalMs: 20 },
  );
}

/**
 * Read output by position (long poll) until `enough(text)` holds; returns the text read from
 * `from` and the next position.
 */
export async function readOutputUntil(
  daemon: TestDaemon,
  name: string,
  from: number,
  enough: (text: string) => boolean,
): Promise<{ text: string; position: number }> {
  const token = await daemon.token('admin');
  const rest = daemon.rest();
  let position = from;
  const chunks: Buffer[] = [];
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await rest.call('GET', `/svc/app/${name}/output`, {
      token,
      query: { stdout_position: String(position), timeout: '2' },
    });
    expect(r.status, r.text()).toBe(200);
    const next = Number(r.headers['x-output-position']);
    expect(next, 'X-Output-Position is the position after the bytes returned').toBe(position + r.body.length);
    chunks.push(r.body);
    position = next;
    const text = Buffer.concat(chunks).toString('utf8');
    if (enough(text)) return { text, position };
    if (Date.now() > deadline)
      throw new Error(`timed out reading output of ${name}; got ${JSON.stringify(text)}`);
  }
}

/**
 * Close daemons newest first (the first one owns the temp home), then SIGKILL the process group of
 * every app they listed just before closing: the testkit's own clean-up relies on work/.snapshot,
 * and a test must not leave a process behind even if the daemon never recorded it.
 */
export async function closeDaemons(daemons: TestDaemon[]): Promise<void> {
  const pids = new Set<number>();
  for (const daemon of daemons) {
    try {
      const token = await daemon.token('admin');
      const r = await daemon.rest().call('GET', '/svc/applications', { token });
      if (r.status === 200)
        for (const app of r.json<AppView[]>()) if (app.pid !== undefined) pids.add(app.pid);
    } catch {
      // that daemon is not running any more
    }
  }
  for (const daemon of [...daemons].reverse()) await daemon.close();
  for (const pid of pids) killGroup(pid);
}

/** Prints 1, 2, 3, … one per line, every ~20 ms, forever. */
export const COUNTER = 'i=0; while :; do i=$((i+1)); echo "$i"; sleep 0.02; done';

/**
 * Daemons a test starts (closed after each test) and process groups it leaves behind on purpose
 * (push their pgid to `orphans`; killed after each test).
 */
export function trackDaemons(): {
  start: (options?: Parameters<typeof startTestDaemon>[0]) => Promise<TestDaemon>;
  orphans: number[];
} {
  const daemons: TestDaemon[] = [];
  const orphans: number[] = [];
  afterEach(async () => {
    await closeDaemons(daemons.splice(0));
    for (const pgid of orphans.splice(0)) killGroup(pgid);
  });
  return {
    start: async (options) => {
      const daemon = await startTestDaemon(options);
      daemons.push(daemon);
      return daemon;
    },
    orphans,
  };
}
