// Cluster commands: `svc cluster ls | add -f <file> | rm <name>` (cluster tasks, defined once for the
// whole cluster) and `svc nodes` (the node reports). They call /svc/cluster/* on the daemon named by
// -H; a stand-alone daemon answers that cluster mode is off.
import { readFileSync } from 'node:fs';
import { appName, parseMapping, type Context } from './commands.ts';
import { CliError, EXIT } from './errors.ts';
import { cell, outputFormat, structured, table } from './format.ts';
import { readStdin } from './ui.ts';

type Task = Record<string, unknown> & { placements?: { host: string; schedule_time: string }[] };
type NodeReport = {
  svc: string;
  label: Record<string, string>;
  leader: boolean;
  resource: { cpu_cores: number; mem_total_bytes: number };
};

const USAGE = 'svc cluster [ls [-o json|yaml|wide] | add [<name>] -f <task.yaml> | rm <name>]';
const TASK_FIELDS = ['replication', 'port', 'memoryMB', 'condition', 'content'];
const enc = encodeURIComponent;

export async function cluster(ctx: Context): Promise<number> {
  const [sub, ...args] = ctx.args;
  const rest = { ...ctx, args };
  if (sub === undefined || sub === 'ls') return clusterLs(rest);
  if (sub === 'add') return clusterAdd(rest);
  if (sub === 'rm') return clusterRm(rest);
  throw new CliError(`unknown cluster command "${sub}"`, EXIT.usage, `use: ${USAGE}`);
}

function mib(bytes: unknown): string {
  return typeof bytes === 'number' ? `${Math.round(bytes / 1024 / 1024)}Mi` : '-';
}

async function clusterLs(ctx: Context): Promise<number> {
  if (ctx.args.length > 0) throw new CliError(`unexpected argument "${ctx.args[0]}"`, EXIT.usage);
  const format = outputFormat(ctx.values['output'] as string | undefined);
  const tasks = (await ctx.ui.spin('Listing', () => ctx.api.call('GET', '/svc/cluster/applications'))).json<
    Record<string, Task>
  >();
  if (format === 'json' || format === 'yaml') {
    ctx.ui.out(structured(tasks, format));
    return EXIT.ok;
  }
  const headers = ['NAME', 'REPLICAS', 'PORT', 'MEMORY', 'HOSTS'];
  if (format === 'wide') headers.push('CONDITION', 'COMMAND');
  const rows = Object.entries(tasks)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, task]) => {
      const placed = task.placements ?? [];
      const row = [
        name,
        `${placed.length}/${cell(task['replication'])}`,
        task['port'] === 0 ? '-' : cell(task['port']),
        task['memoryMB'] === 0 ? '-' : `${cell(task['memoryMB'])}Mi`,
        placed.length === 0 ? '-' : placed.map((p) => p.host).join(','),
      ];
      if (format === 'wide') {
        const condition = Object.entries((task['condition'] as Record<string, string> | undefined) ?? {});
        const content = (task['content'] as Record<string, unknown> | undefined) ?? {};
        row.push(
          condition.length === 0 ? '-' : condition.map(([k, v]) => `${k}=${v}`).join(','),
          cell(content['command']),
        );
      }
      return row;
    });
  if (rows.length === 0) ctx.ui.info('No cluster applications.');
  else ctx.ui.out(table(headers, rows));
  return EXIT.ok;
}

/** The task of `svc cluster add`: a YAML/JSON file (`-` for stdin) holding the task's fields. */
export function clusterTask(
  text: string,
  file: string,
): { name: string | undefined; task: Record<string, unknown> } {
  const { name, ...task } = parseMapping(text, file, 'one cluster task');
  const unknown = Object.keys(task).filter((key) => !TASK_FIELDS.includes(key));
  if (unknown.length > 0)
    throw new CliError(
      `${file}: unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')}`,
      EXIT.usage,
      `a cluster task has name, ${TASK_FIELDS.join(', ')}`,
    );
  const content = task['content'];
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    throw new CliError(`${file}: content (the application definition) is required`, EXIT.usage);
  const contentName = (content as Record<string, unknown>)['name'];
  const named = typeof name === 'string' ? name : typeof contentName === 'string' ? contentName : undefined;
  // Defaults of a minimal file: one replica, no service port, no memory need, any worker.
  return { name: named, task: { replication: 1, port: 0, memoryMB: 0, condition: {}, ...task } };
}

async function clusterAdd(ctx: Context): Promise<number> {
  const file = ctx.values['file'];
  if (typeof file !== 'string') throw new CliError('missing -f <task.yaml>', EXIT.usage, `usage: ${USAGE}`);
  let text: string;
  try {
    text = file === '-' ? await readStdin() : readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`, EXIT.usage);
  }
  const { name: fromFile, task } = clusterTask(text, file);
  const name = ctx.args.length > 0 ? appName(ctx.args, '<name>') : fromFile;
  if (name === undefined) throw new CliError('missing <name> (or `name:` in the -f file)', EXIT.usage);
  if (fromFile !== undefined && fromFile !== name)
    throw new CliError(`the file names "${fromFile}" but the command line "${name}"`, EXIT.usage);
  appName([name], '<name>');
  const saved = (await ctx.api.call('PUT', `/svc/cluster/app/${enc(name)}`, { json: task })).json<Task>();
  if (ctx.values['output'] !== undefined)
    ctx.ui.out(structured(saved, outputFormat(ctx.values['output'] as string) === 'json' ? 'json' : 'yaml'));
  else ctx.ui.out(`cluster/${name} defined (${cell(saved['replication'])} replicas)`);
  return EXIT.ok;
}

async function clusterRm(ctx: Context): Promise<number> {
  const name = appName(ctx.args, '<name>');
  await ctx.ui.spin(`Removing ${name}`, () => ctx.api.call('DELETE', `/svc/cluster/app/${enc(name)}`));
  ctx.ui.out(`cluster/${name} removed`);
  return EXIT.ok;
}

export async function nodes(ctx: Context): Promise<number> {
  if (ctx.args.length > 0) throw new CliError(`unexpected argument "${ctx.args[0]}"`, EXIT.usage);
  const format = outputFormat(ctx.values['output'] as string | undefined);
  const reports = (await ctx.ui.spin('Listing', () => ctx.api.call('GET', '/svc/cluster/nodes'))).json<
    Record<string, NodeReport>
  >();
  if (format === 'json' || format === 'yaml') {
    ctx.ui.out(structured(reports, format));
    return EXIT.ok;
  }
  const headers = ['HOST', 'ROLE', 'WORKER', 'CPUS', 'MEMORY', 'ADDRESS'];
  if (format === 'wide') headers.push('LABELS');
  const rows = Object.entries(reports)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([host, report]) => {
      const row = [
        host,
        report.leader ? 'leader' : '-',
        report.label['WORKER'] === 'true' ? 'yes' : 'no',
        cell(report.resource.cpu_cores),
        mib(report.resource.mem_total_bytes),
        cell(report.svc),
      ];
      if (format === 'wide')
        row.push(
          Object.entries(report.label)
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
        );
      return row;
    });
  if (rows.length === 0) ctx.ui.info('No nodes registered.');
  else ctx.ui.out(table(headers, rows));
  return EXIT.ok;
}
