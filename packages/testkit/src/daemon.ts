// Starts a real svcd process on ephemeral ports in a temp SVC_HOME, trusting a throw-away issuer,
// with principals for every built-in role written to work/auth/policy.yaml before the first start.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Permission } from '@svc/protocol';
import { startTestIssuer, type TestIssuer } from './issuer.ts';
import { restClient, tcpClient, wsClient, type ApiClient, type PersistentClient } from './clients.ts';

const REPO_ROOT = resolve(import.meta.dirname, '../../..');
/** svcd's launcher: runs the bundle (packages/platform/dist/svcd.mjs), rebuilt first when stale. */
const SVCD = join(REPO_ROOT, 'packages/daemon/bin/svcd.js');
/** The Node flags of the launcher's `#!/usr/bin/env -S node <flags>` line, as `npx svcd` runs it. */
const SVCD_NODE_FLAGS = ((): string[] => {
  const words = readFileSync(SVCD, 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  return words.slice(words.indexOf('node') + 1);
})();

/** The command line that runs svcd as `npx svcd` does (this Node, the launcher's flags). */
export function svcdCommand(): string[] {
  return [process.execPath, ...SVCD_NODE_FLAGS, SVCD];
}

/** Test principals, one per built-in role, plus one with no record and one tombstoned. */
export const TEST_PRINCIPALS = {
  admin: { sub: 'test-admin', roles: ['svc-admin'] },
  viewer: { sub: 'test-viewer', roles: ['svc-viewer'] },
  maintenance: { sub: 'client:svc-automation', roles: ['svc-maintenance'] },
  /** Authenticated but without any role. */
  nobody: { sub: 'test-nobody', roles: [] as string[] },
  /** A second admin-less user who owns apps (app-reg + own-app rights via a custom role). */
  developer: { sub: 'test-developer', roles: ['developer'] },
} as const;

export type TestRole = keyof typeof TEST_PRINCIPALS;

/** Permissions of the custom `developer` role held by the `developer` test principal. */
export const DEVELOPER_ROLE: readonly Permission[] = [
  'app-view',
  'app-reg',
  'app-control',
  'app-delete',
  'app-output-view',
  'app-subscribe',
  'app-run-async',
  'app-run-sync',
];

export interface TestDaemonOptions {
  /** Extra environment for svcd. */
  env?: Record<string, string>;
  /** Reuse an existing SVC_HOME (restart tests); default a new temp dir. */
  home?: string;
  /** Reuse an issuer (restart tests); default a new one, closed with the daemon. */
  issuer?: TestIssuer;
  /** Files to write under SVC_HOME before the first start, e.g. `{'config/config.yaml': '...'}`. */
  files?: Record<string, string>;
  /**
   * Share TLS with another test daemon: its `work/ssl` (CA, server certificate and key) is copied
   * into this SVC_HOME before the first start, so each trusts the other's certificate (forwarding).
   */
  tlsFrom?: { workDir: string };
  /**
   * Run svc-agent (the system app apps/agent.yaml) on an ephemeral port; see `agent()`. Off by
   * default: a test daemon runs only the system apps its test asks for.
   */
  agent?: boolean;
  /** More principals for work/auth/policy.yaml (id -> roles), besides TEST_PRINCIPALS. */
  principals?: Record<string, readonly string[]>;
}

export interface TestDaemon extends AsyncDisposable {
  readonly home: string;
  readonly workDir: string;
  readonly issuer: TestIssuer;
  readonly restUrl: string;
  readonly restPort: number;
  readonly tcpPort: number;
  readonly ca: string;
  readonly pid: number;
  /** Settles with svcd's exit code (null after a signal) when the daemon process ends, for whatever reason. */
  readonly exited: Promise<number | null>;
  /** work/ports.json as it is now (every bound listener by name, CONTRACT §3). */
  ports(): Promise<Record<string, number>>;
  /**
   * The agent's port once svc-agent (a system app) reported it in work/ports.json, and its base URL
   * (https, the daemon's certificate). Waits up to 30 s; a new port after the agent restarted too
   * when `notPort` names the old one.
   */
  agent(notPort?: number): Promise<{ agentPort: number; agentUrl: string; metricsPort: number | undefined }>;
  /** A fresh access token for one of the test principals. */
  token(role: TestRole): Promise<string>;
  rest(): ApiClient;
  tcp(): Promise<PersistentClient>;
  /** `headers` go in the upgrade request (for example X-Target-Host). */
  wss(token?: string, headers?: Record<string, string>): Promise<PersistentClient>;
  /** Everything svcd wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM and wait (apps keep running). */
  stop(): Promise<void>;
  /** SIGKILL the daemon (crash simulation; apps keep running). */
  kill(): Promise<void>;
  /** stop() and remove the temp home unless it was given; kills leftover app process groups. */
  close(): Promise<void>;
}

function policyYaml(extra: Record<string, readonly string[]> = {}): string {
  const lines = ['principals:'];
  const principals = [
    ...Object.values(TEST_PRINCIPALS),
    ...Object.entries(extra).map(([sub, roles]) => ({ sub, roles })),
  ];
  for (const { sub, roles } of principals) {
    lines.push(
      `  ${JSON.stringify(sub)}:`,
      `    roles: [${roles.map((r) => JSON.stringify(r)).join(', ')}]`,
      '    status: active',
    );
  }
  lines.push('roles:', `  developer: [${DEVELOPER_ROLE.join(', ')}]`);
  return lines.join('\n') + '\n';
}

export async function startTestDaemon(options: TestDaemonOptions = {}): Promise<TestDaemon> {
  const ownHome = options.home === undefined;
  const home = options.home ?? (await mkdtemp(join(tmpdir(), 'svc-test-')));
  const workDir = join(home, 'work');
  const ownIssuer = options.issuer === undefined;
  const issuer = options.issuer ?? (await startTestIssuer());
  if (ownHome) {
    await mkdir(join(workDir, 'auth'), { recursive: true, mode: 0o700 });
    await writeFile(join(workDir, 'auth', 'policy.yaml'), policyYaml(options.principals), { mode: 0o600 });
  }
  if (options.tlsFrom !== undefined)
    await cp(join(options.tlsFrom.workDir, 'ssl'), join(workDir, 'ssl'), { recursive: true });
  const files = { ...options.files };
  if (options.agent === true)
    files['apps/agent.yaml'] ??= await readFile(join(REPO_ROOT, 'apps', 'agent.yaml'), 'utf8');
  for (const [file, content] of Object.entries(files)) {
    await mkdir(dirname(join(home, file)), { recursive: true, mode: 0o700 });
    await writeFile(join(home, file), content, { mode: 0o600 });
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    SVC_HOME: home,
    ...EPHEMERAL_PORTS_ENV,
    SVC_AUTH_MODE: 'external',
    SVC_OIDC_ISSUER: issuer.issuer,
    SVC_LOG_STDERR: '1',
    // Only the system apps the test put under <home>/apps run, not every one of the install root.
    SVC_SYSTEM_APPS_DIR: join(home, 'apps'),
    // The spawn path under test (the *-inprocess.test.ts files run suites with SVC_SPAWNER=inprocess).
    ...(process.env['SVC_SPAWNER'] === undefined ? {} : { SVC_SPAWNER: process.env['SVC_SPAWNER'] }),
    ...options.env,
  };
  const child: ChildProcess = spawn(process.execPath, [...SVCD_NODE_FLAGS, SVCD], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const cleanupAfterFailedStart = async (): Promise<void> => {
    if (ownIssuer) await issuer.close();
    if (ownHome) await rm(home, { recursive: true, force: true });
  };
  const started = await new Promise<{ rest: number; tcp: number }>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const match = /svcd listening: REST\/WSS https:\/\/[^:]+:(\d+) {2}TCP [^:]+:(\d+)/.exec(stdout);
      if (match !== null) resolve({ rest: Number(match[1]), tcp: Number(match[2]) });
    });
    void exited.then((code) => reject(new Error(`svcd exited with ${code} before listening:\n${stderr}`)));
  }).catch(async (error: unknown) => {
    await cleanupAfterFailedStart();
    throw error;
  });
  const ca = await readFile(join(workDir, 'ssl', 'ca.pem'), 'utf8');
  const restUrl = `https://127.0.0.1:${started.rest}`;
  const clients: PersistentClient[] = [];

  let stopped: Promise<void> | undefined;
  const terminate = (signal: NodeJS.Signals): Promise<void> => {
    stopped ??=
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : (child.kill(signal), exited.then(() => undefined));
    return stopped;
  };

  const daemon: TestDaemon = {
    home,
    workDir,
    issuer,
    restUrl,
    restPort: started.rest,
    tcpPort: started.tcp,
    ca,
    pid: child.pid!,
    exited,
    token: (role) =>
      role === 'maintenance'
        ? issuer.mint({ clientCredentials: 'svc-automation' })
        : issuer.mint({ sub: TEST_PRINCIPALS[role].sub }),
    rest: () => restClient(restUrl, ca),
    async tcp() {
      const client = await tcpClient('127.0.0.1', started.tcp, ca);
      clients.push(client);
      return client;
    },
    async wss(token, headers) {
      const client = await wsClient(restUrl, ca, token, headers);
      clients.push(client);
      return client;
    },
    ports: () => readPorts(workDir),
    async agent(notPort) {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const ports: Record<string, number> = await readPorts(workDir).catch(() => ({}));
        // svcd merges the keys of the agent's own file one by one: wait until all of them are in.
        const own: Record<string, number> = await readFile(join(workDir, 'ports.agent.json'), 'utf8')
          .then((text) => JSON.parse(text) as Record<string, number>)
          .catch(() => ({}));
        const port = ports['agent'];
        const merged = Object.entries(own).every(([key, value]) => ports[key] === value);
        if (port !== undefined && port !== notPort && merged)
          return { agentPort: port, agentUrl: `https://127.0.0.1:${port}`, metricsPort: ports['metrics'] };
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`svc-agent did not report its port in work/ports.json:\n${stderr}`);
        // Bounded condition poll (the file is rewritten atomically by svcd).
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stderr: () => stderr,
    stop: () => terminate('SIGTERM'),
    kill: () => terminate('SIGKILL'),
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await terminate('SIGTERM');
      await killManagedProcesses(workDir);
      if (ownIssuer) await issuer.close();
      if (ownHome) await rm(home, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]: () => daemon.close(),
  };
  return daemon;
}

async function readPorts(workDir: string): Promise<Record<string, number>> {
  return JSON.parse(await readFile(join(workDir, 'ports.json'), 'utf8')) as Record<string, number>;
}

/**
 * Kill the process groups recorded in work/.snapshot and the home's svc-spawner, so no test leaves
 * processes behind.
 */
export async function killManagedProcesses(workDir: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(join(workDir, '.snapshot'), 'utf8');
  } catch {
    await killSpawner(workDir);
    return;
  }
  const pids = new Set<number>();
  for (const match of text.matchAll(/"pid":\s*(\d+)/g)) pids.add(Number(match[1]));
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await killSpawner(workDir);
}

/** The pid of the home's svc-spawner from work/run/spawner.pid; undefined without one (in-process spawns). */
export function spawnerPid(workDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(join(workDir, 'run', 'spawner.pid'), 'utf8').trim());
  } catch {
    return undefined;
  }
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}

/** SIGKILL the home's svc-spawner (work/run/spawner.pid), which outlives svcd by design. */
export async function killSpawner(workDir: string): Promise<void> {
  const pid = spawnerPid(workDir);
  if (pid === undefined) return;
  try {
    // Only the spawner of this home: its command line names the run directory.
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    if (cmdline.includes(join(workDir, 'run'))) process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Every listener svcd and its system apps may open, on an ephemeral port: a test never binds a
 * default port (another svc instance on the machine may hold it). Bound ports are recorded in
 * work/ports.json.
 */
export const EPHEMERAL_PORTS_ENV: Readonly<Record<string, string>> = {
  SVC_REST_PORT: '0',
  SVC_TCP_PORT: '0',
  SVC_AGENT_PORT: '0',
  SVC_ISSUER_PORT: '0',
  SVC_AUTH_TELEMETRY_PORT: '0',
  SVC_AUTH_GRPC_LISTEN: '127.0.0.1:0',
  SVC_AUTH_ADMIN_LISTEN: '127.0.0.1:0',
};

/**
 * Environment of a test daemon in builtin mode (with `apps/identity.yaml` among its files): the
 * built-in issuer and its telemetry and admin gRPC listeners on ephemeral ports, the issuer URL
 * learned from work/ports.identity.json.
 */
export const BUILTIN_MODE_ENV: Readonly<Record<string, string>> = {
  SVC_AUTH_MODE: 'builtin',
  SVC_OIDC_ISSUER: '',
  SVC_ISSUER_PORT: '0',
  SVC_AUTH_TELEMETRY_PORT: '0',
  SVC_AUTH_GRPC_LISTEN: '127.0.0.1:0',
};
