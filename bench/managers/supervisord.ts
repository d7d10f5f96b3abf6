// supervisord 4.2 (Debian) as a Manager: a temp config with an inet_http_server on 127.0.0.1 and an
// include directory. A new program is an include file + reloadConfig + addProcessGroup (untimed
// `prepare`, autostart=false); the timed start is startProcess(name, wait=true) with startsecs=0,
// which answers once the process is RUNNING.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@svc/testkit';
import { xmlRpcClient, type XmlRpcClient } from '../lib/xmlrpc.ts';
import { killGroup, log, onCleanup, sleep, waitFor } from '../lib/util.ts';
import { commandLine, type AppSpec, type Manager, type Timed } from './types.ts';

function which(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/** Installs Debian's supervisor when `supervisord` is missing; throws with a clear message if it cannot. */
export function ensureSupervisord(): string {
  if (!which('supervisord')) {
    if (!which('apt-get'))
      throw new Error(
        'supervisord is not installed and apt-get is unavailable: install supervisor 4.2.x yourself',
      );
    if (process.getuid?.() !== 0)
      throw new Error('supervisord is not installed; run `apt-get install -y supervisor` as root');
    log('bench: installing supervisor with apt-get (supervisord is missing)…');
    const install = (): number | null =>
      spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'supervisor'], {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      }).status;
    if (install() !== 0) {
      spawnSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'] });
      if (install() !== 0)
        throw new Error('apt-get install -y supervisor failed: install supervisor 4.2.x yourself');
    }
    // Debian's package may start a system instance; the benchmark never uses it, stop it if it did.
    spawnSync('sh', ['-c', 'command -v service >/dev/null && service supervisor stop'], { stdio: 'ignore' });
  }
  return execFileSync('supervisord', ['--version'], { encoding: 'utf8' }).trim();
}

interface ProcessInfo {
  pid: number;
  statename: string;
}

/**
 * Writes `<dir>/supervisord.conf` (foreground, logs in `dir` and `<dir>/logs`, XML-RPC on
 * 127.0.0.1:`port`), with `supervisord` lines added to its [supervisord] section and `sections`
 * (programs, an include) after it; returns the file's path.
 */
export async function writeSupervisordConfig(
  dir: string,
  port: number,
  extra: { supervisord?: readonly string[]; sections: readonly string[] },
): Promise<string> {
  const conf = join(dir, 'supervisord.conf');
  await writeFile(
    conf,
    [
      '[supervisord]',
      'nodaemon=true',
      `logfile=${join(dir, 'supervisord.log')}`,
      `pidfile=${join(dir, 'supervisord.pid')}`,
      `childlogdir=${join(dir, 'logs')}`,
      'loglevel=warn',
      ...(extra.supervisord ?? []),
      '[inet_http_server]',
      `port=127.0.0.1:${port}`,
      '[rpcinterface:supervisor]',
      'supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface',
      ...extra.sections,
      '',
    ].join('\n'),
  );
  return conf;
}

/** Resolves once supervisord answers XML-RPC (10 s at most). */
export function waitForXmlRpc(rpc: XmlRpcClient): Promise<boolean> {
  return waitFor(
    'supervisord XML-RPC',
    () =>
      rpc.call('supervisor.getState').then(
        () => true,
        () => false,
      ),
    10_000,
    20,
  );
}

export interface SupervisordManager extends Manager {
  /** The XML-RPC client (events benchmark: tailProcessStdoutLog). */
  readonly rpc: XmlRpcClient;
}

export async function startSupervisord(): Promise<SupervisordManager> {
  const version = ensureSupervisord();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-supervisord-'));
  await mkdir(join(dir, 'programs'));
  await mkdir(join(dir, 'logs'));
  const port = await freePort();
  const conf = await writeSupervisordConfig(dir, port, {
    supervisord: ['minfds=4096'],
    sections: ['[include]', `files = ${join(dir, 'programs')}/*.conf`],
  });
  const child = spawn('supervisord', ['-n', '-c', conf], {
    detached: true,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const rpc = xmlRpcClient('127.0.0.1', port);
  const seen = new Set<number>();
  const cleanup = onCleanup('supervisord', async () => {
    try {
      await rpc.call('supervisor.stopAllProcesses', true).catch(() => undefined);
      await rpc.call('supervisor.shutdown').catch(() => undefined);
      await Promise.race([exited, sleep(5000)]);
    } finally {
      rpc.close();
      killGroup(child.pid!);
      for (const pid of seen) killGroup(pid);
      await rm(dir, { recursive: true, force: true });
    }
  });
  await waitForXmlRpc(rpc);
  const info = async (name: string): Promise<ProcessInfo> =>
    (await rpc.call('supervisor.getProcessInfo', name)) as unknown as ProcessInfo;
  return {
    kind: 'supervisord',
    rpc,
    version: `supervisord ${version}`,
    pid: child.pid!,
    async prepare(specs: readonly AppSpec[]) {
      for (const spec of specs) {
        await writeFile(
          join(dir, 'programs', `${spec.name}.conf`),
          [
            `[program:${spec.name}]`,
            `command=${commandLine(spec.argv)}`,
            'autostart=false',
            `autorestart=${spec.restart ? 'true' : 'false'}`,
            'startsecs=0',
            'startretries=0',
            'stopsignal=TERM',
            'stopwaitsecs=10',
            'stopasgroup=true',
            'killasgroup=true',
            'redirect_stderr=true',
            '',
          ].join('\n'),
        );
      }
      const [[added = []] = []] = (await rpc.call('supervisor.reloadConfig')) as string[][][];
      for (const group of added) await rpc.call('supervisor.addProcessGroup', group);
    },
    async start(spec: AppSpec): Promise<Timed<void>> {
      await rpc.call('supervisor.startProcess', spec.name, true);
      return { value: undefined };
    },
    async pidOf(name) {
      const pid = (await info(name)).pid;
      if (pid > 0) seen.add(pid);
      return pid;
    },
    async stop(name): Promise<Timed<void>> {
      await rpc.call('supervisor.stopProcess', name, true);
      return { value: undefined };
    },
    async remove(name) {
      // Not stopProcess: a SIGTERM that lands between supervisord's fork and the exec is lost
      // (the child still runs supervisord's handler), and stopProcess then waits stopwaitsecs.
      const state = await info(name).catch(() => undefined);
      if (state !== undefined && state.pid > 0) {
        killGroup(state.pid);
        await waitFor(`supervisord to reap ${name}`, () => info(name).then((i) => i.pid === 0), 10_000, 1);
      }
      await rpc.call('supervisor.removeProcessGroup', name).catch(() => undefined);
      await unlink(join(dir, 'programs', `${name}.conf`)).catch(() => undefined);
    },
    close: cleanup,
  };
}
