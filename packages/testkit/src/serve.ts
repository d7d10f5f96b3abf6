// `svc-testkit serve`: a real svcd for test suites in any language (spec/testkit.md). Starts the
// daemon on ephemeral ports in a temp SVC_HOME trusting a throw-away issuer, prints one line that
// says where everything is and which tokens to use, and runs until its standard input closes or it
// gets SIGTERM/SIGINT/SIGHUP; then it stops the daemon, kills every process the daemon started and
// removes the temp home.
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from './daemon.ts';

/** Version of the line's shape (spec/testkit.schema.json); raised on an incompatible change. */
export const SERVE_INFO_VERSION = 1;

/** The user principal that holds svc-maintenance (the machine identity holds it too). */
const MAINTAINER = 'test-maintainer';

export interface ServeOptions {
  /** Also run svc-agent (the front door) on an ephemeral port. */
  agent: boolean;
  /** Lifetime of the printed tokens, seconds. */
  tokenTtlSeconds: number;
}

/** What `serve` prints, one JSON line (spec/testkit.md). */
export interface ServeInfo {
  version: number;
  pid: number;
  home: string;
  rest: string;
  wss: string;
  tcp: string;
  ports: { rest: number; tcp: number; agent?: number };
  agent?: string;
  ca: string;
  issuer: string;
  audience: string;
  tokens: { 'svc-admin': string; 'svc-maintenance': string; 'svc-viewer': string; machine: string };
  principals: { 'svc-admin': string; 'svc-maintenance': string; 'svc-viewer': string; machine: string };
  tokens_expire_at: number;
}

export const DEFAULT_TOKEN_TTL_SECONDS = 24 * 3600;
const MAX_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

export class UsageError extends Error {}

export function parseServeArgs(args: readonly string[]): ServeOptions & { json: boolean } {
  const options = { json: false, agent: false, tokenTtlSeconds: DEFAULT_TOKEN_TTL_SECONDS };
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--json') options.json = true;
    else if (arg === '--agent') options.agent = true;
    else if (arg === '--token-ttl') {
      const value = args[++i];
      const seconds = Number(value);
      if (value === undefined || !/^\d{1,9}$/.test(value) || seconds < 60 || seconds > MAX_TOKEN_TTL_SECONDS)
        throw new UsageError(`--token-ttl: seconds from 60 to ${MAX_TOKEN_TTL_SECONDS}`);
      options.tokenTtlSeconds = seconds;
    } else throw new UsageError(`unknown argument ${JSON.stringify(arg.slice(0, 64))}`);
  }
  return options;
}

export async function startServedDaemon(
  options: ServeOptions,
): Promise<{ daemon: TestDaemon; info: ServeInfo }> {
  const daemon = await startTestDaemon({
    agent: options.agent,
    principals: { [MAINTAINER]: ['svc-maintenance'] },
  });
  try {
    const expiresIn = options.tokenTtlSeconds;
    const { issuer } = daemon;
    const [admin, maintenance, viewer, machine] = await Promise.all([
      issuer.mint({ sub: 'test-admin', expiresIn }),
      issuer.mint({ sub: MAINTAINER, expiresIn }),
      issuer.mint({ sub: 'test-viewer', expiresIn }),
      issuer.mint({ clientCredentials: 'svc-automation', expiresIn }),
    ]);
    const agent = options.agent ? await daemon.agent() : undefined;
    const info: ServeInfo = {
      version: SERVE_INFO_VERSION,
      pid: daemon.pid,
      home: daemon.home,
      rest: daemon.restUrl,
      wss: daemon.restUrl.replace(/^https:/, 'wss:'),
      tcp: `127.0.0.1:${daemon.tcpPort}`,
      ports: {
        rest: daemon.restPort,
        tcp: daemon.tcpPort,
        ...(agent === undefined ? {} : { agent: agent.agentPort }),
      },
      ...(agent === undefined ? {} : { agent: agent.agentUrl }),
      ca: join(daemon.workDir, 'ssl', 'ca.pem'),
      issuer: issuer.issuer,
      audience: 'svc-api',
      tokens: { 'svc-admin': admin, 'svc-maintenance': maintenance, 'svc-viewer': viewer, machine },
      principals: {
        'svc-admin': 'test-admin',
        'svc-maintenance': MAINTAINER,
        'svc-viewer': 'test-viewer',
        machine: 'client:svc-automation',
      },
      tokens_expire_at: Math.floor(Date.now() / 1000) + expiresIn - 5,
    };
    return { daemon, info };
  } catch (error) {
    await daemon.close();
    throw error;
  }
}

function humanLines(info: ServeInfo): string {
  return [
    `svc test daemon (pid ${info.pid}) in ${info.home}`,
    `  REST/WSS ${info.rest}   TCP ${info.tcp}${info.agent === undefined ? '' : `   agent ${info.agent}`}`,
    `  CA ${info.ca}`,
    `  issuer ${info.issuer}`,
    ...Object.entries(info.tokens).map(([role, token]) => `  ${role} token: ${token}`),
    'Close standard input (Ctrl-D) or send SIGTERM to stop and remove everything.',
  ].join('\n');
}

/** The `serve` command: returns the exit code once everything it started is gone. */
export async function serve(args: readonly string[]): Promise<number> {
  let options: ReturnType<typeof parseServeArgs>;
  try {
    options = parseServeArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(
      `svc-testkit serve: ${error.message}\nusage: svc-testkit serve [--json] [--agent] [--token-ttl SECONDS]\n`,
    );
    return 2;
  }
  let started: Awaited<ReturnType<typeof startServedDaemon>>;
  try {
    started = await startServedDaemon(options);
  } catch (error) {
    process.stderr.write(`svc-testkit serve: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const { daemon, info } = started;
  const stopRequested = new Promise<string>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
      process.once(signal, () => resolve(signal));
    process.stdin.once('end', () => resolve('stdin closed'));
    process.stdin.once('close', () => resolve('stdin closed'));
    process.stdin.once('error', () => resolve('stdin closed'));
    process.stdin.resume();
  });
  process.stdout.write(`${options.json ? JSON.stringify(info) : humanLines(info)}\n`);
  const daemonExited = daemon.exited.then(() => 'svcd exited');
  const reason = await Promise.race([stopRequested, daemonExited]);
  await daemon.close();
  process.stdin.pause();
  process.stdin.destroy();
  if (reason === 'svcd exited') {
    process.stderr.write(`svc-testkit serve: svcd exited unexpectedly\n${daemon.stderr().slice(-4000)}\n`);
    return 1;
  }
  return 0;
}
