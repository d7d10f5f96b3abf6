// The MCP tools: a curated set of svc's operations, each with the operation table's own JSON Schema
// for its input (read from spec/openapi.json, which gen-spec writes from the table and a test keeps
// in sync) and a concise description. A call becomes one REST request to svcd with the caller's
// bearer, so the dispatcher and the access rules decide exactly as for REST: a viewer's agent cannot
// register or run anything. Results are sized for a model: output is cut with the byte position to
// continue from.
import openapi from '../../../spec/openapi.json' with { type: 'json' };
import { header, type SvcdAnswer, type SvcdCaller } from './svcd.ts';

/** Bytes of application output one tool result carries at most. */
export const OUTPUT_LIMIT = 16 * 1024;
/** Characters of any other answer one tool result carries at most. */
const TEXT_LIMIT = 64 * 1024;

type JsonSchema = Record<string, unknown>;

interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  description?: string;
  schema: JsonSchema;
}

interface OpenApiOperation {
  operationId: string;
  summary?: string;
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
}

interface Operation {
  method: string;
  path: string;
  spec: OpenApiOperation;
}

const OPERATIONS = new Map<string, Operation>();
for (const [path, methods] of Object.entries(
  openapi.paths as Record<string, Record<string, OpenApiOperation>>,
))
  for (const [method, spec] of Object.entries(methods))
    OPERATIONS.set(spec.operationId, { method: method.toUpperCase(), path, spec });

const COMPONENTS =
  (openapi as { components?: { schemas?: Record<string, JsonSchema> } }).components?.schemas ?? {};

function operation(id: string): Operation {
  const found = OPERATIONS.get(id);
  if (found === undefined) throw new Error(`spec/openapi.json has no operation ${id}`);
  return found;
}

/** A copy of `schema` with `#/components/schemas/X` refs as `#/$defs/X`, collecting each X. */
function localRefs(schema: unknown, defs: Map<string, JsonSchema>): unknown {
  if (Array.isArray(schema)) return schema.map((item) => localRefs(item, defs));
  if (schema === null || typeof schema !== 'object') return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
      const name = value.slice('#/components/schemas/'.length);
      out[key] = `#/$defs/${name}`;
      if (!defs.has(name) && COMPONENTS[name] !== undefined) {
        defs.set(name, {});
        defs.set(name, localRefs(COMPONENTS[name], defs) as JsonSchema);
      }
    } else out[key] = localRefs(value, defs);
  }
  return out;
}

export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  isError?: boolean;
}

export interface ToolContext {
  call: SvcdCaller;
  token: string;
  signal: AbortSignal;
}

interface ToolSpec {
  name: string;
  operationId: string;
  description: string;
  /** The input property that carries the request body (its schema is the operation's body schema). */
  body?: { property: string; description: string };
  /** Query parameters of the operation a tool does not offer. */
  hideQuery?: readonly string[];
  /** Custom behaviour; the default sends the one request and returns its answer. */
  run?: (input: Record<string, unknown>, context: ToolContext, tool: Tool) => Promise<ToolResult>;
}

export interface Tool {
  name: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  call(input: Record<string, unknown>, context: ToolContext): Promise<ToolResult>;
}

const text = (value: string, isError = false): ToolResult => ({
  content: [{ type: 'text', text: value }],
  ...(isError ? { isError: true } : {}),
});

function cut(value: string): string {
  return value.length <= TEXT_LIMIT
    ? value
    : `${value.slice(0, TEXT_LIMIT)}\n[cut: ${value.length - TEXT_LIMIT} more characters]`;
}

/** svcd's answer as a tool result: JSON pretty-printed, errors flagged with svcd's own message. */
function answerResult(answer: SvcdAnswer): ToolResult {
  const body = answer.body.toString('utf8');
  let shown = body;
  try {
    shown = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // not JSON: as is
  }
  if (answer.status >= 200 && answer.status < 300)
    return text(cut(shown === '' ? `done (HTTP ${answer.status})` : shown));
  return text(cut(`HTTP ${answer.status}: ${shown}`), true);
}

function request(
  op: Operation,
  input: Record<string, unknown>,
  spec: ToolSpec,
): { method: string; path: string; body?: string; contentType?: string } {
  let path = op.path;
  const query = new URLSearchParams();
  for (const parameter of op.spec.parameters ?? []) {
    const value = input[parameter.name];
    if (value === undefined || value === null) continue;
    const string = typeof value === 'string' ? value : JSON.stringify(value);
    if (parameter.in === 'path') path = path.replace(`{${parameter.name}}`, encodeURIComponent(string));
    else if (parameter.in === 'query' && !(spec.hideQuery ?? []).includes(parameter.name))
      query.set(parameter.name, string);
  }
  if (/\{[^}]+\}/.test(path)) throw new ToolInputError(`missing ${path.match(/\{([^}]+)\}/)![1]}`);
  const search = query.toString();
  const out: { method: string; path: string; body?: string; contentType?: string } = {
    method: op.method,
    path: search === '' ? path : `${path}?${search}`,
  };
  if (spec.body !== undefined && input[spec.body.property] !== undefined) {
    const value = input[spec.body.property];
    const binary = Object.keys(op.spec.requestBody?.content ?? {}).some(
      (type) => type !== 'application/json',
    );
    if (binary) {
      out.body = typeof value === 'string' ? value : JSON.stringify(value);
      out.contentType = 'text/plain; charset=utf-8';
    } else out.body = JSON.stringify(value);
  }
  return out;
}

export class ToolInputError extends Error {}

async function send(
  op: Operation,
  input: Record<string, unknown>,
  spec: ToolSpec,
  context: ToolContext,
  timeoutMs?: number,
): Promise<SvcdAnswer> {
  const built = request(op, input, spec);
  return context.call({
    ...built,
    token: context.token,
    signal: context.signal,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** Seconds of a timeout parameter (integer seconds or an ISO 8601 duration), for the HTTP deadline. */
function seconds(value: unknown, fallback: number): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value !== 'string') return fallback;
  if (/^\d{1,9}$/.test(value)) return Number(value);
  const iso = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/.exec(value);
  if (iso === null) return fallback;
  return (
    Number(iso[1] ?? 0) * 86_400 + Number(iso[2] ?? 0) * 3600 + Number(iso[3] ?? 0) * 60 + Number(iso[4] ?? 0)
  );
}

const SPECS: readonly ToolSpec[] = [
  {
    name: 'list_applications',
    operationId: 'listApplications',
    description:
      'List the applications svc runs on this host, with state, pid, health, CPU, memory, restarts and owner.',
  },
  {
    name: 'get_application',
    operationId: 'getApplication',
    description:
      'One application: its definition and runtime fields (state, pid, return_code, last_error, next_start_time, ...).',
  },
  {
    name: 'read_output',
    operationId: 'getApplicationOutput',
    description: `Read an application's captured output from a byte position (stdout_position, default 0; stdout_index N reads the Nth previous process's file). Returns at most ${OUTPUT_LIMIT} bytes and the position to continue from; 'timeout' long-polls for new output.`,
    run: async (input, context, tool) => {
      const op = operation('getApplicationOutput');
      const asked = Number(input['stdout_maxsize'] ?? OUTPUT_LIMIT);
      const limited = {
        ...input,
        stdout_maxsize: String(
          Math.max(1, Math.min(Number.isFinite(asked) ? asked : OUTPUT_LIMIT, OUTPUT_LIMIT)),
        ),
      };
      const answer = await send(
        op,
        limited,
        specOf(tool.name),
        context,
        (seconds(input['timeout'], 0) + 30) * 1000,
      );
      if (answer.status !== 200) return answerResult(answer);
      const next = header(answer, 'x-output-position');
      const from =
        typeof input['stdout_position'] === 'string' || typeof input['stdout_position'] === 'number'
          ? String(input['stdout_position'])
          : '0';
      return text(
        `${answer.body.toString('utf8')}\n[output bytes ${from}..${next ?? '?'}; continue with stdout_position=${next ?? '?'}]`,
      );
    },
  },
  {
    name: 'register_application',
    operationId: 'registerApplication',
    description:
      "Register (or replace) an application by name: it starts at once and svc restarts it by its exit behavior. The definition is the operation table's AppDefinition (command, working_dir, env, behavior, ...).",
    body: { property: 'definition', description: 'the application definition (AppDefinition)' },
    hideQuery: ['subscribe_events'],
  },
  {
    name: 'enable_application',
    operationId: 'enableApplication',
    description: 'Enable (start) an application.',
  },
  {
    name: 'disable_application',
    operationId: 'disableApplication',
    description: 'Disable (stop) an application; it stays registered.',
  },
  {
    name: 'restart_application',
    operationId: 'enableApplication',
    description: 'Restart an application: disable it (stop its processes), then enable it again.',
    run: async (input, context) => {
      const stopped = await send(
        operation('disableApplication'),
        input,
        specOf('disable_application'),
        context,
      );
      if (stopped.status !== 200) return answerResult(stopped);
      return answerResult(
        await send(operation('enableApplication'), input, specOf('enable_application'), context),
      );
    },
  },
  {
    name: 'delete_application',
    operationId: 'deleteApplication',
    description: 'Delete an application: stop its processes and remove its definition. Cannot be undone.',
  },
  {
    name: 'run_command',
    operationId: 'syncRunApplication',
    description: `Run a command to completion (as a transient application) and return its exit code and output (the last ${OUTPUT_LIMIT} bytes). 'timeout' stops the run after that long (default 10 s; seconds or an ISO 8601 duration such as PT5M).`,
    body: { property: 'definition', description: 'what to run: at least {"command": "..."} (RunDefinition)' },
    hideQuery: ['lifecycle'],
    run: async (input, context, tool) => {
      const answer = await send(
        operation('syncRunApplication'),
        input,
        specOf(tool.name),
        context,
        (seconds(input['timeout'], 10) + 30) * 1000,
      );
      if (answer.status !== 200) return answerResult(answer);
      const exit = header(answer, 'x-exit-code');
      const total = answer.body.length;
      const shown = total > OUTPUT_LIMIT ? answer.body.subarray(total - OUTPUT_LIMIT) : answer.body;
      const omitted =
        total > OUTPUT_LIMIT ? `[first ${total - OUTPUT_LIMIT} of ${total} output bytes omitted]\n` : '';
      return text(`exit code: ${exit ?? 'unknown'}\n${omitted}${shown.toString('utf8')}`);
    },
  },
  {
    name: 'send_task',
    operationId: 'runTask',
    description:
      "Send a task payload to an application's worker (an app running svc's worker loop) and wait for its result ('timeout', default 60 s).",
    body: { property: 'payload', description: 'the task payload (text; JSON is sent as its text)' },
    run: async (input, context, tool) =>
      answerResult(
        await send(
          operation('runTask'),
          input,
          specOf(tool.name),
          context,
          (seconds(input['timeout'], 60) + 30) * 1000,
        ),
      ),
  },
  { name: 'list_labels', operationId: 'listLabels', description: "The host's labels." },
  { name: 'set_label', operationId: 'setLabel', description: 'Set a host label (key and value).' },
  { name: 'delete_label', operationId: 'deleteLabel', description: 'Delete a host label.' },
  {
    name: 'get_resources',
    operationId: 'getResources',
    description: "The host's CPU, memory, load and disks.",
  },
  {
    name: 'whoami',
    operationId: 'getSelf',
    description:
      'Who you are signed in as: principal id, roles and permissions (what the other tools will allow).',
  },
];

function specOf(name: string): ToolSpec {
  return SPECS.find((spec) => spec.name === name)!;
}

function inputSchema(spec: ToolSpec): Tool['inputSchema'] {
  const op = operation(spec.operationId);
  const defs = new Map<string, JsonSchema>();
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const parameter of op.spec.parameters ?? []) {
    if (parameter.in === 'header' || (spec.hideQuery ?? []).includes(parameter.name)) continue;
    properties[parameter.name] = localRefs(
      parameter.description === undefined
        ? parameter.schema
        : { ...parameter.schema, description: parameter.description },
      defs,
    );
    if (parameter.required === true) required.push(parameter.name);
  }
  if (spec.body !== undefined) {
    const content = op.spec.requestBody?.content ?? {};
    const schema = content['application/json']?.schema ?? { type: 'string' };
    properties[spec.body.property] = {
      ...(localRefs(schema, defs) as JsonSchema),
      description: spec.body.description,
    };
    if (op.spec.requestBody?.required === true) required.push(spec.body.property);
  }
  return {
    type: 'object',
    properties,
    ...(required.length === 0 ? {} : { required }),
    additionalProperties: false,
    ...(defs.size === 0 ? {} : { $defs: Object.fromEntries(defs) }),
  };
}

export const TOOLS: readonly Tool[] = SPECS.map((spec) => {
  const tool: Tool = {
    name: spec.name,
    description: spec.description,
    inputSchema: inputSchema(spec),
    async call(input, context) {
      try {
        if (spec.run !== undefined) return await spec.run(input, context, tool);
        return answerResult(await send(operation(spec.operationId), input, spec, context));
      } catch (error) {
        if (error instanceof ToolInputError) return text(`invalid input: ${error.message}`, true);
        throw error;
      }
    },
  };
  return tool;
});

/** The operations the tools use (a test checks each still exists in the table). */
export const TOOL_OPERATIONS: readonly string[] = [
  ...new Set([...SPECS.map((s) => s.operationId), 'disableApplication']),
];
