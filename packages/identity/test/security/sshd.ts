// A throw-away OpenSSH server on an ephemeral loopback port, for tests of what an operator reaches
// through `ssh -L` (Debian's openssh-server, installed by script/test-deps.sh). Its host key, the
// authorized keys and the client key live in a temp directory; only the given users may log in,
// by key. Needs root (sshd's privilege separation), which these test machines have.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from '@svc/testkit';

export const SSHD = '/usr/sbin/sshd';

export interface TestSshd {
  readonly port: number;
  /**
   * `ssh -N -L 127.0.0.1:<local port>:<socketPath>` logged in as `user`; resolves once the local
   * port accepts connections (the channel itself opens per connection, as the remote user).
   */
  forward(user: string, socketPath: string): Promise<{ port: number; close(): Promise<void> }>;
  /** What sshd wrote to stderr (its log with -e). */
  log(): string;
  close(): Promise<void>;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export async function startSshd(users: readonly string[]): Promise<TestSshd> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-sshd-'));
  const children: ChildProcess[] = [];
  try {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'client_key')]);
    const publicKey = await readFile(join(dir, 'client_key.pub'), 'utf8');
    // sshd reads a user's authorized keys as that user: the directory path must be traversable.
    await chmod(dir, 0o755);
    await mkdir(join(dir, 'keys'), { mode: 0o755 });
    for (const user of users) await writeFile(join(dir, 'keys', user), publicKey, { mode: 0o644 });
    // sshd's privilege separation directory (the Debian unit creates it at boot).
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
    const port = await freePort();
    await writeFile(
      join(dir, 'sshd_config'),
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${join(dir, 'host_key')}`,
        `PidFile ${join(dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${join(dir, 'keys', '%u')}`,
        // The temp directory sits in /tmp, which StrictModes would refuse as a parent.
        'StrictModes no',
        'UsePAM no',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        `AllowUsers ${users.join(' ')}`,
        'AllowTcpForwarding yes',
        'AllowStreamLocalForwarding yes',
        'LogLevel VERBOSE',
        '',
      ].join('\n'),
    );
    const sshd = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(sshd);
    let log = '';
    sshd.stderr.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
    await waitFor(async () => (await accepts(port)) || undefined, {
      timeoutMs: 15_000,
      intervalMs: 50,
      what: `sshd listening on ${port}`,
    });
    return {
      port,
      log: () => log,
      async forward(user, socketPath) {
        const local = await freePort();
        const ssh = spawn(
          'ssh',
          [
            '-F',
            'none',
            '-i',
            join(dir, 'client_key'),
            '-p',
            String(port),
            '-o',
            'BatchMode=yes',
            '-o',
            'StrictHostKeyChecking=no',
            '-o',
            'UserKnownHostsFile=/dev/null',
            '-o',
            'ExitOnForwardFailure=yes',
            '-N',
            '-L',
            `127.0.0.1:${local}:${socketPath}`,
            `${user}@127.0.0.1`,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
        children.push(ssh);
        let stderr = '';
        ssh.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        await waitFor(
          async () => {
            if (ssh.exitCode !== null) throw new Error(`ssh exited ${ssh.exitCode}: ${stderr}\n${log}`);
            return (await accepts(local)) || undefined;
          },
          { timeoutMs: 15_000, intervalMs: 50, what: `ssh -L ${local} as ${user}` },
        );
        return { port: local, close: () => stopChild(ssh) };
      },
      async close() {
        await Promise.all(children.map(stopChild));
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(children.map(stopChild));
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
