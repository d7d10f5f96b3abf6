// Helpers of the reliability suite (docs/reliability.md): what the daemon looks like from outside
// (/proc: managed processes, RSS, sockets), raw HTTP for input no client library would send, and the
// definition part of an app view for before/after comparisons.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:tls';
import { RUNTIME_FIELDS } from '../../src/model/app-definition.ts';
import type { TestDaemon } from '@svc/testkit';
import type { AppView } from '../robustness/helpers.ts';

/** Environment variable the reliability tests put in every app they register, to find its processes. */
export const MARK_VARIABLE = 'SVC_RELIABILITY_MARK';

export interface ManagedProcess {
  pid: number;
  app: string;
  processUuid: string;
  /** The process's environment (what it was started with). */
  env: ReadonlyMap<string, string>;
}

/**
 * Live process-group leaders carrying `SVC_RELIABILITY_MARK=<mark>` and the SVC_PROCESS_UUID the
 * daemon injects (supervisor/orphans.ts recognises its processes by the same environment): the
 * processes some daemon of this test started, whether or not a daemon still knows them.
 */
export function markedProcesses(mark: string): ManagedProcess[] {
  const found: ManagedProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    let environ: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
    } catch {
      continue; // exited meanwhile, or not ours
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || Number(fields[2]) !== Number(entry)) continue;
    const vars = new Map(
      environ.split('\0').flatMap((item) => {
        const eq = item.indexOf('=');
        return eq > 0 ? [[item.slice(0, eq), item.slice(eq + 1)] as const] : [];
      }),
    );
    const app = vars.get('SVC_APPLICATION_NAME');
    const processUuid = vars.get('SVC_PROCESS_UUID');
    if (vars.get(MARK_VARIABLE) === mark && app !== undefined && processUuid !== undefined)
      found.push({ pid: Number(entry), app, processUuid, env: vars });
  }
  return found;
}

/** VmRSS of a process in KiB (from /proc/<pid>/status). */
export function rssKiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

/** Inodes of the sockets a process holds open (links of /proc/<pid>/fd to `socket:[inode]`). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match !== null) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/**
 * Client connections the daemon holds open on its REST/WSS and TCP ports: its TCP sockets in any
 * state but LISTEN whose local port is one of them (from /proc/<pid>/net/tcp{,6}, matched by
 * inode to its fds). svcd has no API for its connection count; this is what the kernel says.
 */
export function daemonConnections(daemon: Pick<TestDaemon, 'pid' | 'restPort' | 'tcpPort'>): number {
  const inodes = socketInodes(daemon.pid);
  const ports = new Set([daemon.restPort, daemon.tcpPort]);
  let count = 0;
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${daemon.pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const localPort = parseInt(fields[1]!.split(':')[1]!, 16);
      const state = fields[3];
      if (state !== '0A' && ports.has(localPort) && inodes.has(fields[9]!)) count++;
    }
  }
  return count;
}

/** View fields that describe the app's processes, not its registered definition. */
const VIEW_RUNTIME_FIELDS = new Set([...RUNTIME_FIELDS, 'state', 'pid', 'processes', 'transient']);

/** The registered definition of an app view: everything but the runtime fields. */
export function definitionPart(view: AppView | Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(view)) {
    if (!VIEW_RUNTIME_FIELDS.has(key)) out[key] = value;
  }
  return out;
}

/**
 * Sends `bytes` as they are over TLS to the REST port and returns the HTTP status the server
 * answered with, or undefined when it closed without a status line. Bounded: the socket is
 * destroyed after `timeoutMs`.
 */
export function rawHttps(daemon: TestDaemon, bytes: Buffer, timeoutMs = 10_000): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: daemon.restPort, ca: daemon.ca });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`raw HTTPS request not answered nor closed within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('secureConnect', () => socket.end(bytes));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'));
      resolve(match === null ? undefined : Number(match[1]));
    });
  });
}
