// Figure 13: the exit code a manager reports for a process that ended while the manager was down.
// The app blocks reading a FIFO, then exits 7. The bench starts it, kills the manager with SIGKILL,
// releases the app (it exits 7 while nothing supervises it), restarts the manager on the same
// state and asks what it says the exit code is: "correct" (7), "wrong" (another code) or "unknown"
// (none reported, or the manager forgot the app). svc: the app view's `return_code` after the
// restarted daemon noticed the exit; supervisord: getProcessInfo after restart (an exit is only
// reported in state EXITED); pm2: its process description after a new God daemon started.
import { execFileSync, spawn } from 'node:child_process';
import { constants, closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startTestDaemon } from '@svc/testkit';
import type * as Pm2Module from 'pm2';
import { keepAliveRest } from './lib/rest.ts';
import type { Benchmark, BenchContext, Row } from './lib/report.ts';
import { alive, killGroup, log, onCleanup, sleep, waitFor } from './lib/util.ts';
import { xmlRpcClient } from './lib/xmlrpc.ts';
import { ensureSupervisord, waitForXmlRpc, writeSupervisordConfig } from './managers/supervisord.ts';
import { commandLine } from './managers/types.ts';

const EXIT_CODE = 7;
const APP = 'exitcode';

interface Verdict {
  verdict: 'correct' | 'wrong' | 'unknown';
  /** What the manager reported, in its own words. */
  detail: string;
}

function judge(code: unknown, detail: string): Verdict {
  if (typeof code !== 'number') return { verdict: 'unknown', detail };
  return { verdict: code === EXIT_CODE ? 'correct' : 'wrong', detail };
}

/** argv of the app: blocks until a line arrives on `fifo`, then exits 7. */
function appArgv(fifo: string): string[] {
  return ['sh', '-c', `read line < ${fifo}; exit ${EXIT_CODE}`];
}

/** Lets the app (blocked on the FIFO) go on and exit, once it has opened the FIFO to read. */
async function release(fifo: string, pid: number): Promise<void> {
  // ENXIO until a reader has the FIFO open: the app may not have reached its `read` yet.
  const fd = await waitFor(
    `the app (pid ${pid}) to open its FIFO`,
    () => {
      try {
        return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENXIO') return undefined;
        throw error;
      }
    },
    10_000,
    5,
  );
  try {
    writeSync(fd, 'go\n');
  } finally {
    closeSync(fd);
  }
  await waitFor(`the app (pid ${pid}) to exit`, () => !alive(pid), 10_000, 5);
}

interface AppView {
  pid?: number;
  state?: string;
  return_code?: unknown;
}

async function svcCase(ctx: BenchContext, fifo: string): Promise<Verdict> {
  const env = ctx.svcEnv();
  const first = await startTestDaemon(env === undefined ? {} : { env });
  let second: Awaited<ReturnType<typeof startTestDaemon>> | undefined;
  let pid = 0;
  const cleanup = onCleanup('svcd (exit code)', async () => {
    await second?.close();
    await first.close();
    if (pid > 0) killGroup(pid);
  });
  try {
    const path = `/svc/app/${APP}`;
    const rest = keepAliveRest(first.restUrl, first.ca, await first.token('admin'));
    const body = { name: APP, command: commandLine(appArgv(fifo)), behavior: { exit: 'standby' } };
    const put = await rest.call('PUT', path, body);
    rest.close();
    if (put.status !== 200) throw new Error(`svc: PUT ${APP}: ${put.status} ${put.body.toString()}`);
    pid = put.json<{ pid?: number }>().pid ?? 0;
    if (pid <= 0) throw new Error('svc: the app has no pid');
    await first.kill();
    await release(fifo, pid);
    second = await startTestDaemon({
      home: first.home,
      issuer: first.issuer,
      ...(env === undefined ? {} : { env }),
    });
    const again = keepAliveRest(second.restUrl, second.ca, await second.token('admin'));
    try {
      const view = await waitFor(
        'the restarted svcd to notice the exit',
        async () => {
          const v = (await again.call('GET', path)).json<AppView>();
          // Settled: the old process is no longer the app's (stopped, or a new one started).
          return v.pid !== pid && v.state !== 'stopping' ? v : undefined;
        },
        15_000,
        20,
      );
      const code = view.return_code ?? null;
      const restarted = view.pid === undefined ? '' : `, started again (pid ${view.pid})`;
      return judge(code, `return_code ${JSON.stringify(code)}, state ${view.state}${restarted}`);
    } finally {
      again.close();
    }
  } finally {
    await cleanup();
  }
}

async function supervisordCase(fifo: string): Promise<Verdict> {
  ensureSupervisord();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-exitcode-supervisord-'));
  await mkdir(join(dir, 'logs'));
  const port = await freePort();
  const conf = await writeSupervisordConfig(dir, port, {
    sections: [
      `[program:${APP}]`,
      `command=${commandLine(appArgv(fifo))}`,
      'autostart=false',
      'autorestart=false',
      'startsecs=0',
    ],
  });
  const rpc = xmlRpcClient('127.0.0.1', port);
  const daemons: number[] = [];
  let pid = 0;
  const launch = async (): Promise<number> => {
    const child = spawn('supervisord', ['-n', '-c', conf], {
      detached: true,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    daemons.push(child.pid!);
    await waitForXmlRpc(rpc);
    return child.pid!;
  };
  const cleanup = onCleanup('supervisord (exit code)', async () => {
    rpc.close();
    for (const d of daemons) killGroup(d);
    if (pid > 0) killGroup(pid);
    await rm(dir, { recursive: true, force: true });
  });
  try {
    const first = await launch();
    await rpc.call('supervisor.startProcess', APP, true);
    pid = ((await rpc.call('supervisor.getProcessInfo', APP)) as { pid: number }).pid;
    process.kill(first, 'SIGKILL'); // supervisord alone: its children lead their own groups
    await waitFor('supervisord to die', () => !alive(first), 5_000, 5);
    await release(fifo, pid);
    await launch();
    const info = (await rpc.call('supervisor.getProcessInfo', APP)) as {
      statename: string;
      exitstatus: number;
      description: string;
    };
    const detail = `${info.statename} "${info.description}", exitstatus ${info.exitstatus}`;
    return info.statename === 'EXITED' ? judge(info.exitstatus, detail) : { verdict: 'unknown', detail };
  } finally {
    await cleanup();
  }
}

type Pm2 = typeof Pm2Module;
interface Pm2Description {
  pm2_env?: { status?: string; exit_code?: unknown };
}

function promised<T>(fn: (cb: (err: Error | null | undefined, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));
}

async function pm2Case(fifo: string): Promise<Verdict> {
  const home = await mkdtemp(join(tmpdir(), 'svc-bench-exitcode-pm2-'));
  process.env['PM2_HOME'] = home;
  const require = createRequire(import.meta.url);
  const Api = (require('pm2') as { custom: new (options: { pm2_home: string; daemon_mode: boolean }) => Pm2 })
    .custom;
  const connect = async (): Promise<{ pm2: Pm2; god: number }> => {
    const pm2 = new Api({ pm2_home: home, daemon_mode: true });
    await promised<void>((cb) => pm2.connect((err) => cb(err, undefined)));
    const god = await waitFor(
      'pm2.pid',
      async () => Number((await readFile(join(home, 'pm2.pid'), 'utf8').catch(() => '')).trim()) || undefined,
      10_000,
      20,
    );
    return { pm2, god };
  };
  let pid = 0;
  const gods: number[] = [];
  let current: Pm2 | undefined;
  const cleanup = onCleanup('pm2 (exit code)', async () => {
    if (current !== undefined) {
      await promised<unknown>((cb) => current!.killDaemon(cb)).catch(() => undefined);
      current.disconnect();
    }
    for (const g of gods) killGroup(g);
    if (pid > 0) killGroup(pid);
    await rm(home, { recursive: true, force: true });
  });
  try {
    const first = await connect();
    current = first.pm2;
    gods.push(first.god);
    const argv = appArgv(fifo);
    const procs = await promised<{ process?: { pid?: number }; pm2_env?: { pid?: number } }[]>((cb) =>
      first.pm2.start(
        { name: APP, script: argv[0]!, args: argv.slice(1), interpreter: 'none', autorestart: false },
        cb as (err: Error, procs: unknown) => void,
      ),
    );
    pid = procs[0]?.process?.pid ?? procs[0]?.pm2_env?.pid ?? 0;
    if (pid <= 0) throw new Error('pm2: the app has no pid');
    process.kill(first.god, 'SIGKILL');
    await waitFor('the pm2 daemon to die', () => !alive(first.god), 5_000, 5);
    first.pm2.disconnect();
    current = undefined;
    await release(fifo, pid);
    await rm(join(home, 'pm2.pid'), { force: true });
    const second = await connect();
    current = second.pm2;
    gods.push(second.god);
    const described = await promised<Pm2Description[]>((cb) => second.pm2.describe(APP, cb));
    const env = described[0]?.pm2_env;
    if (env === undefined) return { verdict: 'unknown', detail: 'the new daemon does not know the app' };
    return judge(env.exit_code, `status ${env.status}, exit_code ${JSON.stringify(env.exit_code ?? null)}`);
  } finally {
    await cleanup();
  }
}

export const exitCodeBenchmark: Benchmark = {
  name: 'exitcode',
  description: 'exit code of a process that ended while its manager was down (kill -9, restart)',
  async run(ctx) {
    const rows: Row[] = [];
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-exitcode-'));
    try {
      for (const kind of ctx.managers) {
        if (kind === 'floor') continue; // a bare spawn has no restart to survive
        log(`exitcode: ${kind}`);
        const fifo = join(dir, `${kind}.fifo`);
        execFileSync('mkfifo', ['-m', '600', fifo]);
        const result =
          kind === 'svc'
            ? await svcCase(ctx, fifo)
            : kind === 'supervisord'
              ? await supervisordCase(fifo)
              : await pm2Case(fifo);
        log(`exitcode: ${kind}: ${result.verdict} (${result.detail})`);
        rows.push({ subject: kind, value: Number.NaN, text: result.verdict, note: result.detail });
        await sleep(0);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return [
      {
        id: '13',
        title: 'Exit code after a daemon restart (exit 7 while the manager was killed)',
        unit: 'verdict',
        better: 'higher',
        target: 'correct',
        rows,
      },
    ];
  },
};
