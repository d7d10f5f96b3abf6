// A real unprivileged OS user (and a supplementary group) for execution-user tests, created with
// useradd/groupadd and removed again. Needs root, which these test machines have.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface TestOsUser {
  readonly name: string;
  readonly uid: number;
  readonly group: string;
  readonly groupId: number;
  readonly home: string;
  remove(): void;
}

export const IS_ROOT = process.getuid?.() === 0;

export function createOsUser(): TestOsUser {
  const suffix = randomBytes(3).toString('hex');
  const name = `svct${suffix}`;
  const group = `svctg${suffix}`;
  const home = `/tmp/${name}-home`;
  execFileSync('groupadd', [group]);
  execFileSync('useradd', ['-m', '-d', home, '-s', '/bin/sh', '-G', group, name]);
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
  const groupId = Number(execFileSync('getent', ['group', group], { encoding: 'utf8' }).split(':')[2]);
  return {
    name,
    uid,
    group,
    groupId,
    home,
    remove() {
      // -f: even if a process of the user were left (the daemon's close() kills managed groups).
      execFileSync('userdel', ['-r', '-f', name], { stdio: 'ignore' });
      try {
        execFileSync('groupdel', [group], { stdio: 'ignore' });
      } catch {
        // removed with the user
      }
    },
  };
}
