// One real svcd in builtin mode with its bundled system apps `identity` (svc-identity) and
// `authadmin` (svc-auth-admin) on ephemeral ports, and the real script/svc-auth.sh run against its
// SVC_HOME. Secrets go to the script on stdin only and never into assertion messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  BUILTIN_MODE_ENV,
  killManagedProcesses,
  startTestDaemon,
  waitFor,
  type TestDaemon,
} from '@svc/testkit';

export const ROOT = resolve(import.meta.dirname, '../../../..');
const SCRIPT = join(ROOT, 'script/svc-auth.sh');
export const ADMIN_EMAIL = 'admin@svc.local';
export const GUEST_EMAIL = 'guest@svc.local';

/** Bounded wait for the system apps: their first start may need a restart of authadmin (gRPC port). */
const APPS_TIMEOUT_MS = 30_000;

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface AuthStack {
  readonly home: string;
  readonly workDir: string;
  readonly daemon: TestDaemon;
  readonly issuer: string;
  /** svc-auth.sh with SVC_HOME set; `stdin` is the only way a password reaches it. */
  script(args: string[], options?: { stdin?: string; env?: Record<string, string> }): Promise<ScriptRun>;
  /** svc-auth.sh printing one token, which is returned (the run must succeed). */
  token(args: string[], stdin?: string): Promise<string>;
  /** REST call to svcd with a bearer. */
  call(
    method: string,
    path: string,
    token: string | undefined,
    body?: unknown,
  ): Promise<{ status: number; json: <T>() => T; text: () => string }>;
  /** `restart svc`: stop svcd and the app process groups it supervises, start it again on the same home. */
  restart(): Promise<void>;
  ports(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface StackOptions {
  /** Extra environment for svcd (and so for its system apps). */
  env?: Record<string, string>;
  /** Whether svc-auth-admin listens (default true): the start waits for its port then. */
  adminUi?: boolean;
  /** Whether svc-agent runs too (default false); its port is `ports().agent`. */
  agent?: boolean;
  /** More files under SVC_HOME before the first start (e.g. `config/oidc.yaml`). */
  files?: Record<string, string>;
}

/** GET over a Unix socket: the status, or the connection error's code. */
export function getOverSocket(socketPath: string, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path, headers: { host: 'localhost' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    req.end();
  });
}

/**
 * The pid of the system app started from `program` (e.g. `packages/identity/bin/svc-identity.js`)
 * for SVC_HOME `home`, found in /proc by its command line and environment.
 */
export async function systemAppPid(home: string, program: string): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmdline.includes(program)) continue;
      const environ = (await readFile(`/proc/${entry}/environ`, 'utf8')).split('\0');
      if (environ.includes(`SVC_HOME=${home}`)) return Number(entry);
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined;
}

async function readJson(file: string): Promise<Record<string, number>> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

export function runScript(
  home: string,
  args: string[],
  stdin: string,
  env: Record<string, string>,
): Promise<ScriptRun> {
  return new Promise((done, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: home, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined); // the script may exit before reading stdin
    child.stdin.end(stdin);
  });
}

/** Starts `svc-auth.sh admin-ui` as a long-running child (the action idles or serves). */
export function spawnScript(home: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawn('bash', [SCRIPT, ...args], {
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // own process group, so the test can end bash and node together
  });
}

export async function startAuthStack(options: StackOptions = {}): Promise<AuthStack> {
  const home = await mkdtemp(join(tmpdir(), 'svc-full-stack-'));
  const workDir = join(home, 'work');
  const adminUi = options.adminUi ?? true;
  const files = {
    'apps/identity.yaml': await readFile(join(ROOT, 'apps', 'identity.yaml'), 'utf8'),
    'apps/authadmin.yaml': await readFile(join(ROOT, 'apps', 'authadmin.yaml'), 'utf8'),
    ...options.files,
  };
  const env = {
    ...BUILTIN_MODE_ENV,
    SVC_AUTH_ADMIN_LISTEN: '127.0.0.1:0',
    ...options.env,
  };

  let daemon: TestDaemon | undefined;
  let issuer = '';
  const ports = (): Promise<Record<string, number>> => readJson(join(workDir, 'ports.json'));

  const start = async (first: boolean): Promise<void> => {
    daemon = await startTestDaemon({ home, env, files: first ? files : {}, agent: options.agent === true });
    const d = daemon;
    issuer = await waitFor(
      async () => {
        const doc = (await d.rest().call('GET', '/svc/auth/config')).json<{ issuer: string }>();
        return /:0\/auth$/.test(doc.issuer) ? undefined : doc.issuer;
      },
      { timeoutMs: APPS_TIMEOUT_MS, intervalMs: 50, what: 'the issuer port in /svc/auth/config' },
    );
    await waitFor(async () => (await fetch(`${issuer}/.well-known/openid-configuration`)).ok, {
      timeoutMs: APPS_TIMEOUT_MS,
      intervalMs: 50,
      what: 'issuer discovery',
    });
    // An empty SVC_AUTH_ADMIN_LISTEN is the default: the socket work/auth/admin-ui.sock.
    const socket = env.SVC_AUTH_ADMIN_LISTEN.startsWith('unix:')
      ? env.SVC_AUTH_ADMIN_LISTEN.slice('unix:'.length)
      : env.SVC_AUTH_ADMIN_LISTEN === ''
        ? join(workDir, 'auth', 'admin-ui.sock')
        : undefined;
    if (adminUi)
      await waitFor(
        async () => {
          if (socket !== undefined) return (await getOverSocket(socket, '/healthz')) === 200;
          const port = (await ports())['admin_ui'];
          return port !== undefined && (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
        },
        { timeoutMs: APPS_TIMEOUT_MS, intervalMs: 50, what: 'the administration UI port in work/ports.json' },
      );
  };

  const stopAll = async (): Promise<void> => {
    if (daemon === undefined) return;
    await daemon.close(); // SIGTERM svcd; the given home is kept (and the app groups are killed)
    await killManagedProcesses(workDir);
    daemon = undefined;
  };

  try {
    // startTestDaemon writes its test policy only into a home it creates; this one is ours, so the
    // first start goes through `home` too and svcd seeds admin/guest itself.
    await start(true);
  } catch (error) {
    await stopAll().catch(() => undefined);
    await rm(home, { recursive: true, force: true });
    throw error;
  }

  const stack: AuthStack = {
    home,
    workDir,
    get daemon() {
      return daemon!;
    },
    get issuer() {
      return issuer;
    },
    script: (args, o = {}) => runScript(home, args, o.stdin ?? '', o.env ?? {}),
    async token(args, stdin = '') {
      const run = await runScript(home, args, stdin, {});
      // The token itself is a secret: only the exit code and stderr go into the message.
      if (run.code !== 0) throw new Error(`svc-auth.sh ${args[0]} exited ${run.code}: ${run.stderr}`);
      const lines = run.stdout.trimEnd().split('\n');
      if (lines.length !== 1) throw new Error(`svc-auth.sh ${args[0]} printed ${lines.length} lines`);
      return lines[0]!;
    },
    async call(method, path, token, body) {
      const result = await daemon!.rest().call(method, path, {
        ...(token === undefined ? {} : { token }),
        ...(body === undefined ? {} : { body }),
      });
      return { status: result.status, json: <T>() => result.json<T>(), text: () => result.text() };
    },
    async restart() {
      await stopAll();
      // The killed apps' records would otherwise name dead ports until the new ones are written.
      await rm(join(workDir, 'ports.identity.json'), { force: true });
      await rm(join(workDir, 'ports.authadmin.json'), { force: true });
      await start(false);
    },
    ports,
    async close() {
      await stopAll();
      await rm(home, { recursive: true, force: true });
    },
  };
  return stack;
}

/** The `key=value` lines the helper prints (add-user, delete-user). */
export function keyValues(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}
