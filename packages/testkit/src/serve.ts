// `svc-testkit serve`: a real svcd for test suites in any language (spec/testkit.md). Starts the
// daemon on ephemeral ports in a temp SVC_HOME trusting a throw-away issuer, prints one line that
// says where everything is and which tokens to use, and runs until its standard input closes or it
// gets SIGTERM/SIGINT/SIGHUP; then it stops the daemon, kills every process the daemon started and
// removes the temp home.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import bcrypt from 'bcryptjs';
import { restClient, type ApiClient } from './clients.ts';
import { BUILTIN_MODE_ENV, startTestDaemon, type TestDaemon } from './daemon.ts';
import { waitFor } from './wait-for.ts';

/** Version of the line's shape (spec/testkit.schema.json); raised on an incompatible change. */
export const SERVE_INFO_VERSION = 1;

/** The user principal that holds svc-maintenance (the machine identity holds it too). */
const MAINTAINER = 'test-maintainer';

export interface ServeOptions {
  /** Also run svc-agent (the front door) on an ephemeral port. */
  agent: boolean;
  /**
   * Builtin mode: svcd's own identity provider (svc-identity) and the agent, tokens from the real
   * issuer, and the credentials to get more (`auth` in the line). Implies `agent`.
   */
  builtin: boolean;
  /** Lifetime of the printed tokens, seconds. */
  tokenTtlSeconds: number;
  /**
   * Builtin mode only (library use, no command-line flag): more password users of the built-in
   * identity, created before the first start (work/auth/users.yaml) with these roles bound to their
   * principal (work/auth/policy.yaml). Returned by `startServedDaemon` as `users`, not in the line.
   */
  users?: readonly ExtraUserRequest[];
  /** Library use only: more environment for svcd (for example cluster settings). */
  env?: Record<string, string>;
  /** Library use only: more files under SVC_HOME before the first start (as `startTestDaemon`'s). */
  files?: Record<string, string>;
}

/** A password user to create in builtin mode: its email (sign-in name) and roles. */
export interface ExtraUserRequest {
  email: string;
  roles: readonly string[];
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
  auth?: BuiltinAuthInfo;
}

/** With `--builtin`: what a client needs to sign in at the real built-in issuer (spec/testkit.md). */
export interface BuiltinAuthInfo {
  mode: 'builtin';
  /** The agent's base URL: `{base_url}/auth/...` is the issuer's route (token endpoint, device page). */
  base_url: string;
  token_endpoint: string;
  /** The scope every user token request names. */
  scope: string;
  clients: { cli: 'svc-cli'; web: 'svc-web'; mcp: 'svc-mcp-user'; automation: 'svc-automation' };
  /** The confidential svc-automation client's secret (client credentials grant). */
  automation_secret: string;
  /** Sign-in names and passwords: admin (svc-admin) and guest (svc-viewer). */
  users: { 'svc-admin': BuiltinUser; 'svc-viewer': BuiltinUser };
}

export interface BuiltinUser {
  username: string;
  password: string;
  principal: string;
}

export const DEFAULT_TOKEN_TTL_SECONDS = 24 * 3600;
const MAX_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

export class UsageError extends Error {}

export function parseServeArgs(args: readonly string[]): ServeOptions & { json: boolean } {
  const options = { json: false, agent: false, builtin: false, tokenTtlSeconds: DEFAULT_TOKEN_TTL_SECONDS };
  let ttlGiven = false;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--json') options.json = true;
    else if (arg === '--agent') options.agent = true;
    else if (arg === '--builtin') options.builtin = options.agent = true;
    else if (arg === '--token-ttl') {
      const value = args[++i];
      const seconds = Number(value);
      if (value === undefined || !/^\d{1,9}$/.test(value) || seconds < 60 || seconds > MAX_TOKEN_TTL_SECONDS)
        throw new UsageError(`--token-ttl: seconds from 60 to ${MAX_TOKEN_TTL_SECONDS}`);
      options.tokenTtlSeconds = seconds;
      ttlGiven = true;
    } else throw new UsageError(`unknown argument ${JSON.stringify(arg.slice(0, 64))}`);
  }
  if (options.builtin && ttlGiven)
    throw new UsageError('--token-ttl does not apply to --builtin (the issuer gives 15-minute tokens)');
  return options;
}

/** The fields of the line that say where the daemon (and the agent, when it runs) listens. */
function whereItListens(
  daemon: TestDaemon,
  agent: { agentPort: number; agentUrl: string } | undefined,
): Pick<ServeInfo, 'version' | 'pid' | 'home' | 'rest' | 'wss' | 'tcp' | 'ports' | 'agent' | 'ca'> {
  return {
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
  };
}

export async function startServedDaemon(
  options: ServeOptions,
): Promise<{ daemon: TestDaemon; info: ServeInfo; users: BuiltinUser[] }> {
  if (options.builtin) return startBuiltinDaemon(options.users ?? [], options.env ?? {}, options.files ?? {});
  if (options.users !== undefined && options.users.length > 0)
    throw new UsageError('extra users need the built-in identity (builtin mode)');
  const daemon = await startTestDaemon({
    agent: options.agent,
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.files === undefined ? {} : { files: options.files }),
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
      ...whereItListens(daemon, agent),
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
    return { daemon, info, users: [] };
  } catch (error) {
    await daemon.close();
    throw error;
  }
}

const REPO_ROOT = resolve(import.meta.dirname, '../../..');
const USER_SCOPE = 'openid audience:server:client_id:svc-api';
const MACHINE_SCOPE = 'audience:server:client_id:svc-api';
/** The identity provider and the agent are system apps: their first start takes a few seconds. */
const BUILTIN_START_TIMEOUT_MS = 60_000;

/** A secret file of work/auth/secrets: its whole text, or the value of one `key=value` line. */
async function secret(daemon: TestDaemon, file: string, key?: string): Promise<string> {
  const text = await readFile(join(daemon.workDir, 'auth', 'secrets', file), 'utf8');
  if (key === undefined) return text.trim();
  const line = text.split('\n').find((l) => l.startsWith(`${key}=`));
  if (line === undefined) throw new Error(`${file} has no ${key}`);
  return line.slice(key.length + 1);
}

async function tokenRequest(
  agent: ApiClient,
  basic: string,
  form: Record<string, string>,
): Promise<{ token: string; expiresAt: number }> {
  const answer = await agent.call('POST', '/auth/token', {
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(basic).toString('base64')}`,
    },
    rawBody: new URLSearchParams(form).toString(),
  });
  if (answer.status !== 200)
    throw new Error(`token request (${form['grant_type']}) answered ${answer.status}`);
  const body = answer.json<{ access_token: string; expires_in: number }>();
  return { token: body.access_token, expiresAt: Math.floor(Date.now() / 1000) + body.expires_in - 5 };
}

/** Password users for work/auth/users.yaml (the identity's format) and their principals' roles. */
function extraUsers(requests: readonly ExtraUserRequest[]): {
  users: BuiltinUser[];
  usersYaml: string;
  principals: Record<string, readonly string[]>;
} {
  const users: BuiltinUser[] = [];
  const principals: Record<string, readonly string[]> = {};
  const records = requests.map(({ email, roles }) => {
    if (!/^[A-Za-z0-9._+-]{1,64}@[A-Za-z0-9.-]{1,64}$/.test(email))
      throw new UsageError(`extra user email ${JSON.stringify(email.slice(0, 80))} is not a plain address`);
    const userId = randomUUID();
    const password = randomBytes(18).toString('base64url');
    users.push({ username: email, password, principal: userId });
    principals[userId] = roles;
    return [
      `  - user_id: ${JSON.stringify(userId)}`,
      `    username: ${JSON.stringify(email)}`,
      `    email: ${JSON.stringify(email)}`,
      `    password_hash: ${JSON.stringify(bcrypt.hashSync(password, 10))}`,
      `    created_at: ${JSON.stringify(new Date().toISOString())}`,
      '    mfa_enabled: false',
    ].join('\n');
  });
  return { users, usersYaml: `users:\n${records.join('\n')}\n`, principals };
}

/** `--builtin`: svcd with svc-identity and the agent; tokens from the real issuer. */
async function startBuiltinDaemon(
  requests: readonly ExtraUserRequest[],
  env: Record<string, string>,
  files: Record<string, string>,
): Promise<{ daemon: TestDaemon; info: ServeInfo; users: BuiltinUser[] }> {
  const extra = extraUsers(requests);
  const daemon = await startTestDaemon({
    agent: true,
    env: { ...BUILTIN_MODE_ENV, ...env },
    principals: extra.principals,
    files: {
      ...files,
      'apps/identity.yaml': await readFile(join(REPO_ROOT, 'apps', 'identity.yaml'), 'utf8'),
      ...(requests.length === 0 ? {} : { 'work/auth/users.yaml': extra.usersYaml }),
    },
  });
  try {
    const { agentUrl, agentPort } = await daemon.agent();
    const agent = restClient(agentUrl, daemon.ca);
    const issuer = await waitFor(
      async () => {
        const doc = (await daemon.rest().call('GET', '/svc/auth/config')).json<{ issuer: string }>();
        return /:0\/auth$/.test(doc.issuer) ? undefined : doc.issuer;
      },
      { what: 'the issuer port in /svc/auth/config', timeoutMs: BUILTIN_START_TIMEOUT_MS, intervalMs: 50 },
    );
    await waitFor(
      async () => (await agent.call('GET', '/auth/.well-known/openid-configuration')).status === 200,
      { what: 'issuer discovery through the agent', timeoutMs: BUILTIN_START_TIMEOUT_MS, intervalMs: 50 },
    );
    const users = {
      'svc-admin': {
        username: 'admin@svc.local',
        password: await secret(daemon, 'initial-admin-credentials', 'password'),
        principal: 'admin',
      },
      'svc-viewer': {
        username: 'guest@svc.local',
        password: await secret(daemon, 'initial-viewer-credentials', 'password'),
        principal: 'guest',
      },
    };
    const automationSecret = await secret(daemon, 'automation-client');
    const passwordGrant = (user: BuiltinUser): ReturnType<typeof tokenRequest> =>
      tokenRequest(agent, 'svc-cli:', {
        grant_type: 'password',
        username: user.username,
        password: user.password,
        scope: USER_SCOPE,
      });
    const [admin, viewer, machine] = await Promise.all([
      passwordGrant(users['svc-admin']),
      passwordGrant(users['svc-viewer']),
      tokenRequest(agent, `svc-automation:${automationSecret}`, {
        grant_type: 'client_credentials',
        scope: MACHINE_SCOPE,
      }),
    ]);
    const info: ServeInfo = {
      ...whereItListens(daemon, { agentPort, agentUrl }),
      issuer,
      audience: 'svc-api',
      // The machine identity holds svc-maintenance; no built-in user does.
      tokens: {
        'svc-admin': admin.token,
        'svc-maintenance': machine.token,
        'svc-viewer': viewer.token,
        machine: machine.token,
      },
      principals: {
        'svc-admin': 'admin',
        'svc-maintenance': 'client:svc-automation',
        'svc-viewer': 'guest',
        machine: 'client:svc-automation',
      },
      tokens_expire_at: Math.min(admin.expiresAt, viewer.expiresAt, machine.expiresAt),
      auth: {
        mode: 'builtin',
        base_url: agentUrl,
        token_endpoint: `${agentUrl}/auth/token`,
        scope: USER_SCOPE,
        clients: { cli: 'svc-cli', web: 'svc-web', mcp: 'svc-mcp-user', automation: 'svc-automation' },
        automation_secret: automationSecret,
        users,
      },
    };
    return { daemon, info, users: extra.users };
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
    ...(info.auth === undefined
      ? []
      : [
          `  token endpoint ${info.auth.token_endpoint}  automation secret ${info.auth.automation_secret}`,
          ...Object.values(info.auth.users).map((u) => `  user ${u.username} password ${u.password}`),
        ]),
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
      `svc-testkit serve: ${error.message}\nusage: svc-testkit serve [--json] [--agent] [--builtin] [--token-ttl SECONDS]\n`,
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
