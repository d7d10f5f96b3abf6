// `svc`: the command-line client. Parses the command line (util.parseArgs), resolves the server,
// trust and credentials, runs one command and maps every failure to a message and an exit code.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { accessToken, credentials, isDesktop, login, type LoginMethod } from './auth.ts';
import * as commands from './commands.ts';
import * as clusterCommands from './cluster-commands.ts';
import { completion } from './completion.ts';
import { stopDaemon } from './daemon-control.ts';
import { CliError, EXIT } from './errors.ts';
import { relative, structured } from './format.ts';
import { Api } from './api.ts';
import { readSession, removeSession, sessionPath, type Session } from './session.ts';
import { promptLine, promptSecret, readStdin, Ui } from './ui.ts';

export const DEFAULT_SERVER = 'https://127.0.0.1:6058';

const GLOBAL: ParseArgsOptionsConfig = {
  host: { type: 'string', short: 'H' },
  forward: { type: 'string', short: 'F' },
  ca: { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
};
const VALUE_GLOBALS = new Set(['-H', '--host', '-F', '--forward', '--ca', '-o', '--output']);

interface CommandSpec {
  summary: string;
  usage: string;
  options?: ParseArgsOptionsConfig;
  /** Needs no credentials. */
  anonymous?: boolean;
}

export const COMMANDS: Record<string, CommandSpec> = {
  login: {
    summary: 'sign in (browser on a desktop, device code when headless, or --password)',
    usage:
      'svc login [--browser | --device | --username <email> [--password | --password-stdin]] [--no-browser]',
    options: {
      browser: { type: 'boolean' },
      device: { type: 'boolean' },
      'no-browser': { type: 'boolean' },
      username: { type: 'string', short: 'u' },
      password: { type: 'boolean' },
      'password-stdin': { type: 'boolean' },
    },
    anonymous: true,
  },
  logout: { summary: 'forget the stored session', usage: 'svc logout', anonymous: true },
  loginfo: {
    summary: 'show the signed-in principal and the session expiry',
    usage: 'svc loginfo',
    anonymous: true,
  },
  ls: { summary: 'list applications', usage: 'svc ls [-o json|yaml|wide]' },
  view: { summary: 'show one application', usage: 'svc view <app> [-o json|yaml]' },
  add: {
    summary: 'register or replace an application',
    usage:
      'svc add [<app>] [-f app.yaml] [--cmd <command>] [--shell] [--env K=V]… [--workdir <dir>] [--description <text>] [--health-check <cmd>] [--metadata <text>] [--interval <duration|cron>] [--exit standby|restart|keepalive|remove] [--disabled]',
    options: {
      file: { type: 'string', short: 'f' },
      cmd: { type: 'string' },
      shell: { type: 'boolean' },
      env: { type: 'string', short: 'e', multiple: true },
      workdir: { type: 'string' },
      description: { type: 'string' },
      'health-check': { type: 'string' },
      metadata: { type: 'string' },
      interval: { type: 'string' },
      exit: { type: 'string' },
      disabled: { type: 'boolean' },
    },
  },
  rm: { summary: 'remove an application', usage: 'svc rm <app>' },
  enable: { summary: 'enable (start) an application', usage: 'svc enable <app>' },
  disable: { summary: 'disable (stop) an application', usage: 'svc disable <app>' },
  restart: { summary: 'disable then enable an application', usage: 'svc restart <app>' },
  logs: {
    summary: 'print (and follow) the output of an application',
    usage: 'svc logs [-f [--poll]] [--index N] <app>',
    options: {
      follow: { type: 'boolean', short: 'f' },
      index: { type: 'string' },
      poll: { type: 'boolean' },
    },
  },
  run: {
    summary: 'run a command once, stream its output, exit with its exit code',
    usage: 'svc run [--timeout <duration>] [--env K=V]… [--workdir <dir>] -- <command> [args…]',
    options: {
      timeout: { type: 'string', short: 't' },
      env: { type: 'string', short: 'e', multiple: true },
      workdir: { type: 'string' },
    },
  },
  task: {
    summary: "send a task payload to an application's worker and print the result",
    usage: 'svc task [--timeout <duration>] [--json] <app> <payload | ->',
    options: { timeout: { type: 'string', short: 't' }, json: { type: 'boolean' } },
  },
  labels: { summary: 'list, set or remove host labels', usage: 'svc labels [ls | set K=V… | rm K…]' },
  config: {
    summary: 'show or change the daemon configuration',
    usage: "svc config [set '<yaml|json>' | set -f file]",
    options: { file: { type: 'string', short: 'f' } },
  },
  resources: { summary: 'show host resources', usage: 'svc resources [-o json|yaml]' },
  cluster: {
    summary: 'list, define or remove cluster applications (cluster mode)',
    usage: 'svc cluster [ls [-o json|yaml|wide] | add [<name>] -f <task.yaml> | rm <name>]',
    options: { file: { type: 'string', short: 'f' } },
  },
  nodes: { summary: 'list the registered cluster nodes', usage: 'svc nodes [-o json|yaml|wide]' },
  principal: {
    summary: 'show the caller (or list, set, remove principals)',
    usage: 'svc principal [ls | set <id> <role>… | rm <id>]',
  },
  daemon: {
    summary: 'stop the local svcd (with --all: and every process it supervises)',
    usage: 'svc daemon stop [--all]   (the svcd of $SVC_HOME; SVC_HOME defaults to the install root)',
    options: { all: { type: 'boolean' } },
    anonymous: true,
  },
  completion: {
    summary: 'print a shell completion script',
    usage: 'svc completion bash|zsh',
    anonymous: true,
  },
  help: { summary: 'show help', usage: 'svc help [<command>]', anonymous: true },
};

function usageText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const lines = [
    'svc: manage applications on an svc daemon',
    '',
    'Usage: svc [-H <url>] [-F <host[:port]>] [--ca <file>] <command> [options]',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, spec]) => `  ${name.padEnd(width)}  ${spec.summary}`),
    '',
    'Global options:',
    `  -H, --host <url>       server (default ${DEFAULT_SERVER}, or the server of the session)`,
    '  -F, --forward <host>   forward the request to another node (X-Target-Host)',
    '  --ca <file>            trust this CA (default $SVC_HOME/work/ssl/ca.pem if present; SVC_HOME defaults to the install root)',
    '  -o, --output <format>  json, yaml or wide (where it applies)',
    '',
    'Environment: SVC_BEARER_TOKEN (used as-is), SVC_CONFIG_DIR, SVC_HOME, NODE_EXTRA_CA_CERTS.',
    'Run `svc help <command>` for the options of a command.',
  ];
  return lines.join('\n') + '\n';
}

/** Finds the command word: the first argument that is not a global option or its value. */
function commandWord(argv: string[]): { name: string | undefined; index: number } {
  for (let i = 0; i < argv.length; i += 1) {
    const word = argv[i]!;
    if (word === '--') break;
    if (VALUE_GLOBALS.has(word)) {
      i += 1;
      continue;
    }
    if (word.startsWith('-')) continue;
    return { name: word, index: i };
  }
  return { name: undefined, index: -1 };
}

/** The install root this command belongs to (packages/cli/src → three levels up), SVC_HOME's default. */
const INSTALL_ROOT = resolve(import.meta.dirname, '../../..');

function caPem(file: string | undefined): string | undefined {
  const home = process.env['SVC_HOME'] || INSTALL_ROOT;
  const path = file ?? join(home, 'work', 'ssl', 'ca.pem');
  if (path === undefined) return undefined;
  if (file === undefined && !existsSync(path)) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read the CA file ${path}: ${(error as Error).message}`, EXIT.usage);
  }
}

export async function main(argv: string[]): Promise<number> {
  const ui = new Ui();
  const controller = new AbortController();
  const onSignal = (): void => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    controller.abort(new CliError('interrupted', EXIT.interrupted));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await dispatch(argv, ui, controller.signal);
  } catch (error) {
    const code = report(error);
    // Interrupted: exit now rather than when a library's pending timer (the device-code poll
    // interval) lets the event loop drain.
    if (controller.signal.aborted) process.exit(code);
    return code;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function report(error: unknown): number {
  if (error instanceof CliError) {
    process.stderr.write(`svc: ${error.message}\n`);
    if (error.hint !== undefined) process.stderr.write(`hint: ${error.hint}\n`);
    return error.code;
  }
  const code = (error as { code?: string }).code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`svc: ${(error as Error).message}\nhint: see \`svc help\`\n`);
    return EXIT.usage;
  }
  // A bug, not a user error: a one-line message, the stack only on request.
  process.stderr.write(`svc: unexpected error: ${(error as Error).message ?? String(error)}\n`);
  if (process.env['SVC_DEBUG']) process.stderr.write(`${(error as Error).stack ?? ''}\n`);
  else process.stderr.write('hint: set SVC_DEBUG=1 for details\n');
  return EXIT.error;
}

async function dispatch(argv: string[], ui: Ui, signal: AbortSignal): Promise<number> {
  const dash = argv.indexOf('--');
  const head = dash < 0 ? argv : argv.slice(0, dash);
  const rest = dash < 0 ? [] : argv.slice(dash + 1);
  const { name } = commandWord(head);
  if (name === undefined) {
    const parsed = parseArgs({ args: head, options: GLOBAL, allowPositionals: true, strict: true });
    process.stdout.write(usageText());
    return parsed.values['help'] === true ? EXIT.ok : EXIT.usage;
  }
  const spec = COMMANDS[name];
  if (spec === undefined)
    throw new CliError(`unknown command "${name}"`, EXIT.usage, 'run `svc help` for the list of commands');
  const parsed = parseArgs({
    args: head,
    options: { ...GLOBAL, ...spec.options },
    allowPositionals: true,
    strict: true,
  });
  const values = parsed.values as commands.Values;
  const args = parsed.positionals.filter((_, i) => i !== parsed.positionals.indexOf(name));
  if (values['help'] === true || name === 'help') {
    const topic = name === 'help' ? args[0] : name;
    const target = topic === undefined ? undefined : COMMANDS[topic];
    ui.out(target === undefined ? usageText() : `${target.summary}\n\nUsage: ${target.usage}\n`);
    return EXIT.ok;
  }
  if (rest.length > 0 && name !== 'run') throw new CliError(`"--" is only used by svc run`, EXIT.usage);
  if (name === 'completion') {
    ui.out(completion(args[0], COMMANDS));
    return EXIT.ok;
  }
  if (name === 'daemon') return daemonCommand(ui, values, args);

  const explicitServer = values['host'] as string | undefined;
  const creds = credentials(explicitServer);
  const server =
    explicitServer ??
    process.env['SVC_SERVER'] ??
    (creds.kind === 'session' ? creds.session.server : undefined) ??
    DEFAULT_SERVER;
  if (!/^https?:\/\//.test(server))
    throw new CliError(`-H ${server}: expected a URL such as ${DEFAULT_SERVER}`, EXIT.usage);
  const api: Api = new Api({
    server,
    ca: caPem(values['ca'] as string | undefined),
    target: values['forward'] as string | undefined,
    token: () => accessToken(creds, ui, api),
  });

  switch (name) {
    case 'login':
      return loginCommand(api, ui, values, signal);
    case 'logout': {
      const removed = removeSession();
      ui.info(removed ? `Signed out (removed ${sessionPath()}).` : 'Not signed in.');
      return EXIT.ok;
    }
    case 'loginfo':
      return loginfo(ui, values);
  }
  if (creds.kind === 'none')
    throw new CliError(
      `not signed in to ${server}`,
      EXIT.auth,
      'run `svc login` (or set SVC_BEARER_TOKEN to an access token)',
    );
  const ctx: commands.Context = {
    api,
    ui,
    values,
    args,
    rest,
    signal,
    creds,
    target: values['forward'] as string | undefined,
  };
  switch (name) {
    case 'ls':
      return commands.ls(ctx);
    case 'view':
      return commands.view(ctx);
    case 'add':
      return commands.add(ctx);
    case 'rm':
      return commands.rm(ctx);
    case 'enable':
    case 'disable':
    case 'restart':
      return commands.control(ctx, name);
    case 'logs':
      return commands.logs(ctx);
    case 'run':
      return commands.run(ctx);
    case 'task':
      return commands.task(ctx);
    case 'labels':
      return commands.labels(ctx);
    case 'config':
      return commands.config(ctx);
    case 'resources':
      return commands.resources(ctx);
    case 'cluster':
      return clusterCommands.cluster(ctx);
    case 'nodes':
      return clusterCommands.nodes(ctx);
    case 'principal':
      return commands.principal(ctx);
  }
  throw new CliError(`unknown command "${name}"`, EXIT.usage);
}

/** How long `svc daemon stop` waits after SIGTERM before SIGKILL, per step. */
const STOP_GRACE_MS = 10_000;

async function daemonCommand(ui: Ui, values: commands.Values, args: string[]): Promise<number> {
  if (args[0] !== 'stop' || args.length !== 1)
    throw new CliError('expected `svc daemon stop [--all]`', EXIT.usage);
  const home = resolve(process.env['SVC_HOME'] || INSTALL_ROOT);
  const all = values['all'] === true;
  const report = await stopDaemon(home, { all, graceMs: STOP_GRACE_MS });
  if (report.daemon === undefined) ui.info(`svcd is not running (home ${home}).`);
  else ui.info(`svcd (pid ${report.daemon.pid}) stopped.`);
  if (all)
    ui.info(
      report.apps.length === 0
        ? 'No supervised process was running.'
        : `Stopped ${report.apps.length} supervised application(s): ${report.apps.join(', ')}.`,
    );
  else ui.info('Managed processes keep running; `svc daemon stop --all` stops them too.');
  return EXIT.ok;
}

async function loginCommand(api: Api, ui: Ui, values: commands.Values, signal: AbortSignal): Promise<number> {
  const wantsPassword =
    values['password'] === true || values['password-stdin'] === true || values['username'] !== undefined;
  if (values['browser'] === true && values['device'] === true)
    throw new CliError('choose one of --browser and --device', EXIT.usage);
  if (wantsPassword && (values['browser'] === true || values['device'] === true))
    throw new CliError('--password/--username cannot be combined with --browser or --device', EXIT.usage);
  const method: LoginMethod = wantsPassword
    ? 'password'
    : values['device'] === true
      ? 'device'
      : values['browser'] === true || isDesktop()
        ? 'browser'
        : 'device';
  let username = values['username'] as string | undefined;
  if (
    method === 'password' &&
    username === undefined &&
    process.stdin.isTTY === true &&
    values['password-stdin'] !== true
  )
    username = await promptLine('Username (email): ');
  const password = async (): Promise<string> => {
    if (values['password-stdin'] === true) return (await readStdin()).replace(/\r?\n$/, '');
    if (process.stdin.isTTY !== true)
      throw new CliError('no terminal to ask for the password', EXIT.usage, 'pipe it with --password-stdin');
    return promptSecret('Password: ');
  };
  const session = await login(api, ui, {
    method,
    username,
    password,
    openBrowser: values['no-browser'] !== true,
    signal,
  });
  const self = await apiForSession(session, values, ui)
    .call('GET', '/svc/self')
    .then((r) => r.json<{ principal_id?: string }>())
    .catch(() => undefined);
  ui.info(
    `Signed in to ${session.server}${self?.principal_id !== undefined ? ` as ${self.principal_id}` : ''}; ` +
      `the session is stored in ${sessionPath()}.`,
  );
  return EXIT.ok;
}

/** An Api that authenticates with the stored session (not SVC_BEARER_TOKEN). */
function apiForSession(session: Session, values: commands.Values, ui: Ui): Api {
  const api: Api = new Api({
    server: session.server,
    ca: caPem(values['ca'] as string | undefined),
    target: values['forward'] as string | undefined,
    token: () => accessToken({ kind: 'session', session }, ui, api),
  });
  return api;
}

async function loginfo(ui: Ui, values: commands.Values): Promise<number> {
  const session = readSession();
  const bearer = process.env['SVC_BEARER_TOKEN'];
  if (session === undefined) {
    if (bearer !== undefined && bearer !== '')
      throw new CliError(
        'no stored session: SVC_BEARER_TOKEN is set and used as-is, but loginfo needs a session from `svc login`',
        EXIT.auth,
        'run `svc principal` to see who the token belongs to',
      );
    throw new CliError('not signed in', EXIT.auth, 'run `svc login`');
  }
  const self = (await apiForSession(session, values, ui).call('GET', '/svc/self')).json<{
    principal_id: string;
    roles?: string[];
    status?: string;
  }>();
  const fresh = readSession() ?? session; // a refresh rewrote it
  const info = {
    server: fresh.server,
    principal: self.principal_id,
    roles: self.roles ?? [],
    expires_at: new Date(fresh.expires_at * 1000).toISOString(),
    refreshable: fresh.refresh_token !== undefined,
    session_file: sessionPath(),
  };
  const format = values['output'] as string | undefined;
  if (format === 'json' || format === 'yaml') {
    ui.out(structured(info, format));
    return EXIT.ok;
  }
  ui.out(
    [
      `Server:     ${info.server}`,
      `Principal:  ${info.principal}`,
      `Roles:      ${info.roles.join(', ') || '-'}`,
      `Expires:    ${info.expires_at} (${relative(fresh.expires_at)})${info.refreshable ? ', refreshed automatically' : ''}`,
      `Session:    ${info.session_file}`,
    ].join('\n'),
  );
  return EXIT.ok;
}
