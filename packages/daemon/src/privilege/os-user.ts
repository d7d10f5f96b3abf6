// OS users that applications, runs and file transfers execute as (a principal's `execution_user`,
// BaseConfig.DefaultExecUser). Lookups go through the system's user database (`getent`, `id`), so
// NSS users (LDAP, sssd) work as well as /etc/passwd ones; results are cached briefly because a
// restart loop would otherwise look the same user up on every start.
//
// Switching to one of them is privilege/user-switch.ts, the one place that does it.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';

export interface OsIdentity {
  readonly user: string;
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups (the primary group included), as `id -G` lists them. */
  readonly groups: readonly number[];
  readonly home: string;
}

const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;
const CACHE_MS = 5_000;
const cache = new Map<string, { at: number; identity: OsIdentity | undefined }>();

function run(file: string, args: string[]): string | undefined {
  try {
    return execFileSync(file, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
    });
  } catch {
    return undefined; // getent exits 2 for an unknown name
  }
}

/** The user `name` from the user database, or undefined when there is none. */
export function lookupOsUser(name: string): OsIdentity | undefined {
  if (!USER_NAME.test(name)) return undefined;
  const cached = cache.get(name);
  if (cached !== undefined && Date.now() - cached.at < CACHE_MS) return cached.identity;
  let identity: OsIdentity | undefined;
  const entry = run('getent', ['passwd', name])?.split('\n')[0]?.split(':');
  if (entry !== undefined && entry.length >= 7 && entry[0] === name) {
    const uid = Number(entry[2]);
    const gid = Number(entry[3]);
    const groups = (run('id', ['-G', '--', name]) ?? String(gid))
      .trim()
      .split(/\s+/)
      .map(Number)
      .filter((g) => Number.isInteger(g) && g >= 0);
    if (Number.isInteger(uid) && Number.isInteger(gid))
      identity = { user: name, uid, gid, groups: groups.length > 0 ? groups : [gid], home: entry[5] || '/' };
  }
  cache.set(name, { at: Date.now(), identity });
  return identity;
}

/** The daemon's own user name. */
export function daemonUser(): string {
  return userInfo().username;
}

/** Whether running as `identity` needs a switch away from the daemon's own uid and gid. */
export function needsSwitch(identity: OsIdentity | undefined): identity is OsIdentity {
  return identity !== undefined && (identity.uid !== process.getuid?.() || identity.gid !== process.getgid?.());
}

/** HOME, USER and LOGNAME of `identity`, to overlay on a child's environment. */
export function userEnv(identity: OsIdentity): Record<string, string> {
  return { HOME: identity.home, USER: identity.user, LOGNAME: identity.user };
}

/** The working directory of a child of `identity` that names none: its home, or `/`. */
export function defaultCwd(identity: OsIdentity): string {
  return existsSync(identity.home) ? identity.home : '/';
}
