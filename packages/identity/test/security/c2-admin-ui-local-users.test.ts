// Issue 25 C2: the administration UI has no login of its own, so whoever can connect to it acts as
// an administrator (sets an svc-admin user's password, adds users, regenerates the automation
// secret). Before: `npm start` bound it on 127.0.0.1:6064, reachable by every local user.
// Must be: in every default setup only root and svc's own user can use it, and SSH port forwarding
// by them keeps working.
//
// A real svcd in builtin mode with its bundled svc-identity and svc-auth-admin, SVC_AUTH_ADMIN_LISTEN
// left unset (the default every setup now shares), a real unprivileged OS user created here, and a
// real OpenSSH server for `ssh -L <port>:<socket>` as root and as that user.
import { execFile } from 'node:child_process';
import { lstat, readFile, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOsUser, IS_ROOT, type TestOsUser } from '@svc/testkit';
import { getOverSocket, startAuthStack, systemAppPid, type AuthStack } from '../full-stack/stack.ts';
import { SSHD, startSshd, type TestSshd } from './sshd.ts';

const run = promisify(execFile);

let stack: AuthStack;
let user: TestOsUser;
let sshd: TestSshd;
let socketPath: string;
let userGid: number;

beforeAll(async () => {
  if (!IS_ROOT) throw new Error('this test creates an OS user and runs sshd: it needs root');
  await lstat(SSHD).catch(() => {
    throw new Error(`${SSHD} is missing: script/test-deps.sh installs openssh-server`);
  });
  // '' = unset: the program's default listener.
  stack = await startAuthStack({ env: { SVC_AUTH_ADMIN_LISTEN: '' } });
  socketPath = join(stack.workDir, 'auth', 'admin-ui.sock');
  user = createOsUser();
  // useradd leaves the account locked ('!'), which sshd refuses without PAM: no password, unlocked.
  await run('usermod', ['-p', '*', user.name]);
  userGid = Number((await run('id', ['-g', user.name])).stdout.trim());
  sshd = await startSshd(['root', user.name]);
}, 120_000);
afterAll(async () => {
  await sshd?.close();
  user?.remove();
  await stack?.close();
});

/** curl as `who` (root or the test user, by setpriv with its uid/gid and no supplementary groups). */
async function curl(
  who: 'root' | 'user',
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const command =
    who === 'root'
      ? ['curl', ...args]
      : ['setpriv', `--reuid=${user.uid}`, `--regid=${userGid}`, '--clear-groups', '--', 'curl', ...args];
  try {
    const { stdout, stderr } = await run(command[0]!, command.slice(1));
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? -1, stdout: failure.stdout ?? '', stderr: failure.stderr ?? '' };
  }
}

/** The pid of this stack's svc-auth-admin. */
async function adminUiPid(): Promise<number> {
  const pid = await systemAppPid(stack.home, 'packages/identity/bin/svc-auth-admin.js');
  if (pid === undefined) throw new Error('svc-auth-admin of this stack is not running');
  return pid;
}

/** Local ports of TCP sockets in LISTEN state that process `pid` holds (by socket inode). */
async function tcpListenPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match !== null) inodes.add(match[1]!);
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    const lines = (await readFile(`/proc/${pid}/net/${table}`, 'utf8')).split('\n').slice(1);
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      // local_address rem_address st ... inode (field 9); st 0A = LISTEN
      if (fields.length > 9 && fields[3] === '0A' && inodes.has(fields[9]!))
        ports.push(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

const PASSWORDS = ['-sS', '-o', '/dev/null', '-w', '%{http_code}'];

describe('C2: who can use the administration UI of a default setup', () => {
  it('listens on a Unix socket of mode 0600 inside the 0700 work directory, on no TCP port', async () => {
    const info = await lstat(socketPath);
    expect(info.isSocket()).toBe(true);
    expect(info.mode & 0o777).toBe(0o600);
    expect(info.uid).toBe(process.getuid!());
    expect((await lstat(stack.workDir)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(join(stack.workDir, 'ports.authadmin.json'), 'utf8'))).toEqual({
      admin_ui_socket: socketPath,
    });
    expect((await stack.ports())['admin_ui']).toBeUndefined();
    expect(await tcpListenPorts(await adminUiPid())).toEqual([]);
  });

  it("svc's own user (here root) uses it: the passwords page answers 200", async () => {
    const answer = await curl('root', [
      ...PASSWORDS,
      '--unix-socket',
      socketPath,
      'http://localhost/passwords',
    ]);
    expect(answer.stdout, answer.stderr).toBe('200');
    expect(await getOverSocket(socketPath, '/healthz')).toBe(200);
  });

  it('another local user cannot connect to it (Permission denied), not even to read a page', async () => {
    const answer = await curl('user', [
      ...PASSWORDS,
      '--unix-socket',
      socketPath,
      'http://localhost/passwords',
    ]);
    expect(answer.code).not.toBe(0);
    expect(answer.stdout).not.toBe('200');
    expect(answer.stderr).toMatch(/Permission denied|Couldn't connect/i);
    // The form post of the attack (set an svc-admin user's password) fails the same way.
    const post = await curl('user', [
      ...PASSWORDS,
      '--unix-socket',
      socketPath,
      '-H',
      'origin: http://localhost',
      '--data',
      'csrf=x&email=admin%40svc.local&password=attacker-chosen-password',
      'http://localhost/passwords/set',
    ]);
    expect(post.code).not.toBe(0);
    expect(post.stdout).not.toBe('303');
  });

  it('ssh -L to the socket works for root and fails for the other user', async () => {
    const asRoot = await sshd.forward('root', socketPath);
    try {
      const answer = await curl('root', [...PASSWORDS, `http://127.0.0.1:${asRoot.port}/passwords`]);
      expect(answer.stdout, `${answer.stderr}\n${sshd.log()}`).toBe('200');
    } finally {
      await asRoot.close();
    }
    const asUser = await sshd.forward(user.name, socketPath);
    try {
      // The user's session connects to the socket as the user: the channel is refused, curl gets
      // no HTTP answer at all.
      const answer = await curl('root', [...PASSWORDS, `http://127.0.0.1:${asUser.port}/passwords`]);
      expect(answer.code).not.toBe(0);
      expect(answer.stdout).toBe('000');
    } finally {
      await asUser.close();
    }
    expect(sshd.log()).toMatch(/Permission denied/);
  });
});
