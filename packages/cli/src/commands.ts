// The application commands. Each takes the parsed command line and an Api and returns an exit code.
import { readFileSync } from 'node:fs';
import { NAME_PATTERN } from '@svc/protocol';
import { parse as parseYaml } from 'yaml';
import { ApiError, CliError, EXIT } from './errors.ts';
import { cell, outputFormat, relative, shellQuote, structured, table } from './format.ts';
import type { Credentials } from './auth.ts';
import { EventsUnavailable, followEvents } from './follow.ts';
import type { Api } from './api.ts';
import { readStdin, type Ui } from './ui.ts';

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Context {
  api: Api;
  ui: Ui;
  values: Values;
  args: string[];
  /** Words after `--`. */
  rest: string[];
  signal: AbortSignal;
  creds: Credentials;
  /** `-F` forward target. */
  target: string | undefined;
}

type App = Record<string, unknown>;

function str(values: Values, key: string): string | undefined {
  const v = values[key];
  return typeof v === 'string' ? v : undefined;
}
function list(values: Values, key: string): string[] {
  const v = values[key];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

export function appName(args: string[], what = '<app>'): string {
  const name = args[0];
  if (name === undefined) throw new CliError(`missing ${what}`, EXIT.usage);
  if (!NAME_PATTERN.test(name))
    throw new CliError(
      `invalid application name "${name}"`,
      EXIT.usage,
      `names match ${NAME_PATTERN.source}`,
    );
  if (args.length > 1) throw new CliError(`unexpected argument "${args[1]}"`, EXIT.usage);
  return name;
}

const enc = encodeURIComponent;

function print(ctx: Context, value: unknown, fallback: 'json' | 'yaml' = 'yaml'): void {
  const format = outputFormat(str(ctx.values, 'output'), fallback);
  ctx.ui.out(structured(value, format === 'json' ? 'json' : 'yaml'));
}

function state(app: App): string {
  if (app['pid'] !== undefined && app['pid'] !== null && app['pid'] !== 0) return 'running';
  return app['enabled'] === false ? 'disabled' : 'stopped';
}

export async function ls(ctx: Context): Promise<number> {
  if (ctx.args.length > 0) throw new CliError(`unexpected argument "${ctx.args[0]}"`, EXIT.usage);
  const format = outputFormat(str(ctx.values, 'output'));
  const apps = (await ctx.ui.spin('Listing', () => ctx.api.call('GET', '/svc/applications'))).json<App[]>();
  if (format === 'json' || format === 'yaml') {
    ctx.ui.out(structured(apps, format));
    return EXIT.ok;
  }
  const headers = ['NAME', 'STATE', 'PID', 'RC', 'STARTS', 'AGE'];
  if (format === 'wide') headers.push('OWNER', 'HEALTH', 'MEMORY', 'CPU', 'COMMAND');
  const rows = apps
    .sort((a, b) => String(a['name']).localeCompare(String(b['name'])))
    .map((app) => {
      const row = [
        cell(app['name']),
        state(app),
        cell(app['pid']),
        cell(app['return_code']),
        cell(app['starts']),
        app['last_start_time'] === undefined ? '-' : relative(app['last_start_time']).replace(' ago', ''),
      ];
      if (format === 'wide')
        row.push(
          cell(app['owner_display_name'] ?? app['owner_principal_id']),
          app['health'] === 0 ? 'ok' : app['health'] === 1 ? 'failing' : cell(app['health']),
          cell(app['memory']),
          cell(app['cpu']),
          cell(app['command']),
        );
      return row;
    });
  if (rows.length === 0) ctx.ui.info('No applications.');
  else ctx.ui.out(table(headers, rows));
  return EXIT.ok;
}

export async function view(ctx: Context): Promise<number> {
  const name = appName(ctx.args);
  print(ctx, (await ctx.api.call('GET', `/svc/app/${enc(name)}`)).json());
  return EXIT.ok;
}

/** A YAML or JSON file's one mapping (JSON is YAML too); `what` names it in the refusal. */
export function parseMapping(text: string, file: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new CliError(`${file} is not valid YAML or JSON: ${(error as Error).message}`, EXIT.usage);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new CliError(`${file} must hold ${what} (a mapping)`, EXIT.usage);
  return parsed as Record<string, unknown>;
}

/** The definition of `svc add`: `-f file` (YAML or JSON, `-` for stdin) overlaid by the flags. */
export async function definition(ctx: Context): Promise<App> {
  let app: App = {};
  const file = str(ctx.values, 'file');
  if (file !== undefined) {
    let text: string;
    try {
      text = file === '-' ? await readStdin() : readFileSync(file, 'utf8');
    } catch (error) {
      throw new CliError(`cannot read ${file}: ${(error as Error).message}`, EXIT.usage);
    }
    app = parseMapping(text, file, 'one application definition');
  }
  const v = ctx.values;
  const set = (key: string, value: unknown): void => {
    if (value !== undefined) app[key] = value;
  };
  set('command', str(v, 'cmd'));
  if (v['shell'] === true) app['shell'] = true;
  set('working_dir', str(v, 'workdir'));
  set('description', str(v, 'description'));
  set('health_check_cmd', str(v, 'health-check'));
  set('metadata', str(v, 'metadata'));
  // --interval takes a duration or a cron expression (which has spaces, or is like @daily).
  const interval = str(v, 'interval');
  if (interval !== undefined)
    app[/\s|^@/.test(interval.trim()) ? 'cron_schedule' : 'interval'] = interval.trim();
  if (v['disabled'] === true) app['enabled'] = false;
  const exit = str(v, 'exit');
  if (exit !== undefined) app['behavior'] = { ...(app['behavior'] as object | undefined), exit };
  const env = list(v, 'env');
  if (env.length > 0) {
    const merged = { ...(app['env'] as Record<string, string> | undefined) };
    for (const pair of env) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new CliError(`--env ${pair}: expected KEY=VALUE`, EXIT.usage);
      merged[pair.slice(0, at)] = pair.slice(at + 1);
    }
    app['env'] = merged;
  }
  return app;
}

export async function add(ctx: Context): Promise<number> {
  const app = await definition(ctx);
  const fromFile = typeof app['name'] === 'string' ? app['name'] : undefined;
  const name = ctx.args.length > 0 ? appName(ctx.args) : fromFile;
  if (name === undefined) throw new CliError('missing <app> (or `name:` in the -f file)', EXIT.usage);
  if (fromFile !== undefined && fromFile !== name)
    throw new CliError(`the name "${name}" differs from name "${fromFile}" in the file`, EXIT.usage);
  if (!NAME_PATTERN.test(name)) throw new CliError(`invalid application name "${name}"`, EXIT.usage);
  app['name'] = name;
  if (app['command'] === undefined)
    throw new CliError('an application needs a command', EXIT.usage, 'pass --cmd "<command>" or -f app.yaml');
  const saved = (await ctx.api.call('PUT', `/svc/app/${enc(name)}`, { json: app })).json<App>();
  if (str(ctx.values, 'output') !== undefined) print(ctx, saved);
  else ctx.ui.out(`application/${name} registered`);
  return EXIT.ok;
}

export async function rm(ctx: Context): Promise<number> {
  const name = appName(ctx.args);
  await ctx.ui.spin(`Removing ${name}`, () => ctx.api.call('DELETE', `/svc/app/${enc(name)}`));
  ctx.ui.out(`application/${name} removed`);
  return EXIT.ok;
}

export async function control(ctx: Context, action: 'enable' | 'disable' | 'restart'): Promise<number> {
  const name = appName(ctx.args);
  const steps = action === 'restart' ? (['disable', 'enable'] as const) : ([action] as const);
  for (const step of steps)
    await ctx.ui.spin(`${step} ${name}`, () => ctx.api.call('POST', `/svc/app/${enc(name)}/${step}`));
  ctx.ui.out(`application/${name} ${action === 'restart' ? 'restarted' : `${action}d`}`);
  return EXIT.ok;
}

/** Long-poll window of one output request (the daemon allows up to 300 s). */
const POLL_SECONDS = 30;
const RECONNECT_MAX_MS = 10_000;
/** How long the daemon keeps an exited run app for svc to collect (svc deletes it sooner). */
const RUN_LIFECYCLE_S = 300;

interface OutputChunk {
  data: Buffer;
  position: number;
  exited: boolean;
  exitCode: number | undefined;
  processUuid: string | undefined;
}

async function readOutput(
  ctx: Context,
  name: string,
  query: Record<string, string | number | undefined>,
): Promise<OutputChunk> {
  const reply = await ctx.api.call('GET', `/svc/app/${enc(name)}/output`, { query, signal: ctx.signal });
  const exitHeader = reply.header('x-exit-code');
  return {
    data: reply.body,
    position: Number(reply.header('x-output-position') ?? '0'),
    exited: exitHeader !== undefined || reply.header('x-exited') === 'true',
    exitCode: exitHeader === undefined ? undefined : Number(exitHeader),
    processUuid: reply.header('x-process-uuid'),
  };
}

function aborted(ctx: Context): boolean {
  return ctx.signal.aborted;
}

/** Retries `work` after transport failures (resuming is the caller's position), with backoff. */
async function withReconnect<T>(ctx: Context, work: () => Promise<T>): Promise<T> {
  let delay = 250;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (aborted(ctx) || !(error instanceof CliError) || error.code !== EXIT.unreachable) throw error;
      ctx.ui.info(`svc: ${error.message}; reconnecting…`);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  }
}

export async function logs(ctx: Context): Promise<number> {
  const name = appName(ctx.args);
  const follow = ctx.values['follow'] === true;
  const index = str(ctx.values, 'index');
  if (follow && index === undefined && ctx.values['poll'] !== true) {
    try {
      return await followEvents({
        api: ctx.api,
        ui: ctx.ui,
        creds: ctx.creds,
        target: ctx.target,
        name,
        signal: ctx.signal,
        write: (data) => process.stdout.write(data),
      });
    } catch (error) {
      if (!(error instanceof EventsUnavailable)) throw error;
      ctx.ui.info(`svc: STDOUT events unavailable (${error.message}); following by polling`);
    }
  }
  let position = 0;
  let processUuid: string | undefined;
  for (;;) {
    const chunk = await withReconnect(ctx, () =>
      readOutput(ctx, name, {
        stdout_position: position,
        stdout_index: index,
        process_uuid: processUuid,
        timeout: follow ? POLL_SECONDS : undefined,
      }),
    );
    if (chunk.data.length > 0) process.stdout.write(chunk.data);
    position = chunk.position;
    processUuid ??= chunk.processUuid;
    if (!follow) {
      if (chunk.data.length === 0 || chunk.exited) return EXIT.ok;
      continue;
    }
    if (chunk.exited && chunk.data.length === 0) {
      // This process is done: wait for the app's next process (restart, schedule) and follow it.
      const next = await waitForNextProcess(ctx, name, processUuid);
      if (next === undefined) return EXIT.ok;
      processUuid = next;
      position = 0;
    }
  }
}

/** Polls the app (once a second) until it has a process other than `current`; undefined once removed. */
async function waitForNextProcess(
  ctx: Context,
  name: string,
  current: string | undefined,
): Promise<string | undefined> {
  for (;;) {
    const reply = await withReconnect(ctx, () =>
      ctx.api.call('GET', `/svc/app/${enc(name)}`, { accept: [404], signal: ctx.signal }),
    );
    if (reply.status === 404) return undefined;
    const uuid = reply.json<App>()['process_uuid'];
    if (typeof uuid === 'string' && uuid !== '' && uuid !== current) return uuid;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** A shell-like exit status: negative (killed by signal N) maps to 128 + N. */
export function exitStatus(code: number): number {
  if (code < 0) return 128 + Math.min(-code, 127);
  return code & 0xff;
}

export async function run(ctx: Context): Promise<number> {
  if (ctx.rest.length === 0)
    throw new CliError(
      'missing the command',
      EXIT.usage,
      'usage: svc run [--timeout 60] -- <command> [args…]',
    );
  const body: App = { command: shellQuote(ctx.rest) };
  const workdir = str(ctx.values, 'workdir');
  if (workdir !== undefined) body['working_dir'] = workdir;
  const env = list(ctx.values, 'env');
  if (env.length > 0)
    body['env'] = Object.fromEntries(
      env.map((pair) => {
        const at = pair.indexOf('=');
        if (at <= 0) throw new CliError(`--env ${pair}: expected KEY=VALUE`, EXIT.usage);
        return [pair.slice(0, at), pair.slice(at + 1)];
      }),
    );
  const started = (
    await ctx.api.call('POST', '/svc/app/run', {
      json: body,
      // The daemon removes a run app `lifecycle` after its exit (at once by default): keep it long
      // enough to read the rest of the output and the exit code; svc deletes it after that.
      query: { timeout: str(ctx.values, 'timeout'), lifecycle: RUN_LIFECYCLE_S },
    })
  ).json<{ name: string; process_uuid: string }>();
  const name = started.name;
  let position = 0;
  const stop = async (): Promise<void> => {
    await ctx.api.call('DELETE', `/svc/app/${enc(name)}`, { accept: [404] }).catch(() => undefined);
  };
  try {
    for (;;) {
      let chunk: OutputChunk;
      try {
        chunk = await withReconnect(ctx, () =>
          readOutput(ctx, name, {
            stdout_position: position,
            process_uuid: started.process_uuid === '' ? undefined : started.process_uuid,
            timeout: POLL_SECONDS,
          }),
        );
      } catch (error) {
        if (error instanceof ApiError && error.status === 404)
          throw new CliError(`the run app ${name} was removed before its process exited`, EXIT.error);
        throw error;
      }
      if (chunk.data.length > 0) process.stdout.write(chunk.data);
      position = chunk.position;
      if (chunk.exited && chunk.data.length === 0) {
        await stop(); // an exit was observed: the transient app can go
        if (chunk.exitCode === undefined) {
          ctx.ui.info('svc: the run was stopped by its --timeout');
          return EXIT.timeout;
        }
        return exitStatus(chunk.exitCode);
      }
    }
  } catch (error) {
    if (ctx.signal.aborted) {
      await stop(); // Ctrl-C stops the remote process too
      return EXIT.interrupted;
    }
    throw error;
  }
}

export async function task(ctx: Context): Promise<number> {
  const [nameArg, payloadArg, extra] = ctx.args;
  if (extra !== undefined) throw new CliError(`unexpected argument "${extra}"`, EXIT.usage);
  const name = appName(nameArg === undefined ? [] : [nameArg]);
  if (payloadArg === undefined) throw new CliError('missing <payload> (use - for stdin)', EXIT.usage);
  const payload = payloadArg === '-' ? await readStdin() : payloadArg;
  const contentType = ctx.values['json'] === true ? 'application/json' : 'text/plain; charset=utf-8';
  const reply = await ctx.ui.spin(`Waiting for ${name}`, () =>
    ctx.api.call('POST', `/svc/app/${enc(name)}/task`, {
      raw: { body: payload, contentType },
      query: { timeout: str(ctx.values, 'timeout') },
    }),
  );
  process.stdout.write(reply.body);
  if (reply.body.length > 0 && reply.body[reply.body.length - 1] !== 0x0a && process.stdout.isTTY)
    ctx.ui.out('');
  return EXIT.ok;
}

export async function labels(ctx: Context): Promise<number> {
  const [sub, ...rest] = ctx.args;
  if (sub === undefined || sub === 'ls') {
    const all = (await ctx.api.call('GET', '/svc/labels')).json<Record<string, string>>();
    const format = outputFormat(str(ctx.values, 'output'));
    if (format === 'json' || format === 'yaml') ctx.ui.out(structured(all, format));
    else
      ctx.ui.out(
        table(
          ['KEY', 'VALUE'],
          Object.entries(all).map(([k, v]) => [k, cell(v)]),
        ),
      );
    return EXIT.ok;
  }
  if (sub === 'set') {
    if (rest.length === 0) throw new CliError('usage: svc labels set KEY=VALUE…', EXIT.usage);
    for (const pair of rest) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new CliError(`${pair}: expected KEY=VALUE`, EXIT.usage);
      await ctx.api.call('PUT', `/svc/label/${enc(pair.slice(0, at))}`, {
        query: { value: pair.slice(at + 1) },
      });
    }
    return EXIT.ok;
  }
  if (sub === 'rm') {
    if (rest.length === 0) throw new CliError('usage: svc labels rm KEY…', EXIT.usage);
    for (const key of rest) await ctx.api.call('DELETE', `/svc/label/${enc(key)}`);
    return EXIT.ok;
  }
  throw new CliError(
    `unknown labels command "${sub}"`,
    EXIT.usage,
    'use: svc labels [ls | set K=V… | rm K…]',
  );
}

export async function config(ctx: Context): Promise<number> {
  const [sub, ...rest] = ctx.args;
  if (sub === undefined) {
    print(ctx, (await ctx.api.call('GET', '/svc/config')).json());
    return EXIT.ok;
  }
  if (sub === 'set') {
    const file = str(ctx.values, 'file');
    const text =
      file !== undefined ? (file === '-' ? await readStdin() : readFileSync(file, 'utf8')) : rest.join(' ');
    if (text.trim() === '')
      throw new CliError("usage: svc config set '<yaml or json>' | -f file", EXIT.usage);
    let patch: unknown;
    try {
      patch = parseYaml(text);
    } catch (error) {
      throw new CliError(`not valid YAML or JSON: ${(error as Error).message}`, EXIT.usage);
    }
    print(ctx, (await ctx.api.call('POST', '/svc/config', { json: patch })).json());
    return EXIT.ok;
  }
  throw new CliError(`unknown config command "${sub}"`, EXIT.usage, 'use: svc config [set …]');
}

export async function resources(ctx: Context): Promise<number> {
  print(ctx, (await ctx.api.call('GET', '/svc/resources')).json());
  return EXIT.ok;
}

export async function principal(ctx: Context): Promise<number> {
  const [sub, id, ...roles] = ctx.args;
  if (sub === undefined) {
    print(ctx, (await ctx.api.call('GET', '/svc/self')).json());
    return EXIT.ok;
  }
  if (sub === 'ls') {
    print(ctx, (await ctx.api.call('GET', '/svc/principals')).json());
    return EXIT.ok;
  }
  if (sub === 'set' && id !== undefined && roles.length > 0) {
    print(ctx, (await ctx.api.call('POST', `/svc/principal/${enc(id)}`, { json: { roles } })).json());
    return EXIT.ok;
  }
  if (sub === 'rm' && id !== undefined) {
    await ctx.api.call('DELETE', `/svc/principal/${enc(id)}`);
    ctx.ui.out(`principal/${id} tombstoned`);
    return EXIT.ok;
  }
  throw new CliError('usage: svc principal [ls | set <id> <role>… | rm <id>]', EXIT.usage);
}
