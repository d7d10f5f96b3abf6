// Everything `npm run gen:spec` writes, computed in memory so that test/spec-sync.test.ts can compare
// it with the checked-in files. The registries in @svc/protocol, the operation table and the
// spawner protocol's table are the source; spec/*.json and the generated sections of
// docs/reference.md and spec/spawner-protocol.md are derived from them.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import {
  BUILTIN_ROLES,
  DISCONNECTED_EVENT,
  ERROR_CODES,
  EVENT_REQUEST_URI,
  EVENT_TYPES,
  PERMISSION_DESCRIPTIONS,
  PERMISSIONS,
} from '@svc/protocol';
import { buildWireVectors } from '@svc/protocol/wire-vectors';
import { buildAccessDocument, buildOpenApiDocument } from '../src/api/openapi.ts';
import { eventSchemaFiles } from '../src/events/event-schemas.ts';
import {
  type Field,
  type FieldType,
  SPAWNER_LIMITS,
  SPAWNER_MESSAGES,
  SPAWNER_STAGES,
} from '../src/supervisor/spawner/protocol-spec.ts';
import { buildSpawnerVectors } from '../src/supervisor/spawner/spawner-vectors.ts';

/** Absolute path of the repository root, with a trailing slash. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export const REFERENCE_DOC = 'docs/reference.md';
/** Hand-written, with generated sections (the message tables). */
export const SPAWNER_DOC = 'spec/spawner-protocol.md';

/** Headers of a server push (spec "Push message"). */
export const PUSH_HEADERS = ['X-Subscription-Id', 'X-Event-Type', 'X-App-Name'] as const;

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** spec/*.json by path relative to the repository root. */
export function buildSpecFiles(): Map<string, string> {
  const errors = Object.fromEntries(
    Object.entries(ERROR_CODES).map(([code, { status, description }]) => [code, { status, description }]),
  );
  const roles = Object.fromEntries(Object.entries(BUILTIN_ROLES).map(([role, perms]) => [role, [...perms]]));
  const events = {
    events: Object.fromEntries(
      Object.entries(EVENT_TYPES).map(([name, { meaning, data }]) => [name, { meaning, data: [...data] }]),
    ),
    all_selector: 'ALL',
    disconnected_event: DISCONNECTED_EVENT,
    push: {
      request_uri: EVENT_REQUEST_URI,
      http_status: 200,
      body_msg_type: 'application/json',
      headers: [...PUSH_HEADERS],
      body_fields: ['subscription_id', 'event_type', 'app_name', 'timestamp', 'sequence', 'data'],
    },
  };
  const eventSchemas = [...eventSchemaFiles()].map(([name, schema]): [string, string] => [
    `spec/events/${name}`,
    json(schema),
  ]);
  return new Map([
    ...eventSchemas,
    ['spec/errors.json', json(errors)],
    ['spec/permissions.json', json({ permissions: [...PERMISSIONS], roles })],
    ['spec/events.json', json(events)],
    ['spec/openapi.json', json(buildOpenApiDocument())],
    ['spec/access.json', json(buildAccessDocument())],
    ['spec/wire-vectors.json', json(buildWireVectors())],
    ['spec/spawner-vectors.json', json(buildSpawnerVectors())],
  ]);
}

// ---------------------------------------------------------------------------------------------
// docs/reference.md

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** Generated section bodies, by marker name. */
export function buildReferenceSections(): Map<string, string> {
  const errors = table(
    ['Code', 'HTTP status', 'Meaning'],
    Object.entries(ERROR_CODES).map(([code, { status, description }]) => [
      `\`${code}\``,
      String(status),
      description,
    ]),
  );
  const roleNames = Object.keys(BUILTIN_ROLES) as (keyof typeof BUILTIN_ROLES)[];
  const permissions = table(
    ['Permission', 'Meaning', ...roleNames.map((r) => `\`${r}\``)],
    PERMISSIONS.map((p) => [
      `\`${p}\``,
      PERMISSION_DESCRIPTIONS[p],
      ...roleNames.map((r) => ((BUILTIN_ROLES[r] as readonly string[]).includes(p) ? 'yes' : '')),
    ]),
  );
  const events = [
    table(
      ['Event', 'Meaning', 'Fields in `data`'],
      Object.entries(EVENT_TYPES).map(([name, { meaning, data }]) => [
        `\`${name}\``,
        meaning,
        data.length === 0 ? 'none' : data.map((d) => `\`${d}\``).join(', '),
      ]),
    ),
    `A push is a \`Response\` with \`request_uri\` \`${EVENT_REQUEST_URI}\`, status 200, headers ` +
      `${PUSH_HEADERS.map((h) => `\`${h}\``).join(', ')} and the event message as a JSON body. ` +
      `\`ALL\` (or an empty value) selects every event; \`${DISCONNECTED_EVENT}\` is synthetic.`,
  ].join('\n\n');
  return new Map([
    ['errors', errors],
    ['permissions', permissions],
    ['events', events],
  ]);
}

const REFERENCE_TEMPLATE = `# svc reference

Tables between \`generated\` markers are written by \`npm run gen:spec\` from the registries in
\`packages/protocol\`; edit the registries, not the tables. The same data is in \`spec/*.json\`.

## Error codes

Every error body is \`{"error": "<code>", "message": "<human text>"}\`.

<!-- generated:errors -->
<!-- /generated:errors -->

## Permissions and built-in roles

<!-- generated:permissions -->
<!-- /generated:permissions -->

## Events

<!-- generated:events -->
<!-- /generated:events -->
`;

/**
 * `doc` (the markdown file at `path`) with every generated section replaced, formatted by the
 * repository's prettier configuration (so `npm run format` leaves it unchanged).
 */
async function renderSections(path: string, doc: string, sections: Map<string, string>): Promise<string> {
  for (const [name, body] of sections) {
    const pattern = new RegExp(`<!-- generated:${name} -->[\\s\\S]*?<!-- /generated:${name} -->`);
    if (!pattern.test(doc)) {
      throw new Error(`${path} lacks the markers <!-- generated:${name} --> … <!-- /generated:${name} -->`);
    }
    doc = doc.replace(pattern, () => `<!-- generated:${name} -->\n\n${body}\n\n<!-- /generated:${name} -->`);
  }
  const file = `${REPO_ROOT}${path}`;
  const options = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(doc, { ...options, filepath: file });
}

/**
 * The reference document with every generated section replaced. `current` is the file as it is
 * now; undefined starts from a template.
 */
export async function renderReferenceDoc(current: string | undefined): Promise<string> {
  return renderSections(REFERENCE_DOC, current ?? REFERENCE_TEMPLATE, buildReferenceSections());
}

// ---------------------------------------------------------------------------------------------
// spec/spawner-protocol.md

function typeText(type: FieldType): string {
  if (typeof type === 'string') return type;
  if ('optional' in type) return `optional ${typeText(type.optional)}`;
  if ('record' in type) return 'record';
  const { min, max } = type;
  const bound =
    min !== undefined && max !== undefined
      ? ` (${min} to ${max})`
      : max !== undefined
        ? ` (at most ${max})`
        : min !== undefined
          ? ` (at least ${min})`
          : '';
  return `list of ${typeText(type.list)}${bound}`;
}

/** A field's row, then the rows of the record it holds (directly, optional or as list items). */
function fieldRows(fields: readonly Field[], prefix: string): string[][] {
  return fields.flatMap((field) => {
    const rows = [[`\`${prefix}${field.name}\``, typeText(field.type), field.meaning]];
    let inner = field.type;
    let path = `${prefix}${field.name}`;
    for (;;) {
      if (typeof inner === 'string') return rows;
      if ('record' in inner) return [...rows, ...fieldRows(inner.record, `${path}.`)];
      if ('optional' in inner) inner = inner.optional;
      else {
        inner = inner.list;
        path += '[]';
      }
    }
  });
}

const hexCode = (code: number): string => (code < 0x10 ? String(code) : `0x${code.toString(16)}`);

/** Generated section bodies of spec/spawner-protocol.md, by marker name. */
export function buildSpawnerSections(): Map<string, string> {
  const L = SPAWNER_LIMITS;
  const limits = table(
    ['Limit', 'Value', 'Meaning'],
    [
      ['protocol version', String(L.version), 'HELLO'],
      [
        'payload, at least',
        `${L.minPayload} bytes`,
        'type and request id; a smaller header closes the connection',
      ],
      [
        'payload, at most',
        `${L.maxPayload} bytes (8 MiB)`,
        'either side; a larger header closes the connection before any payload is read',
      ],
      [
        'argv, env',
        `${L.maxStrings} entries each`,
        'SPAWN (and no more than the rest of the payload could hold)',
      ],
      ['user.groups', `${L.maxGroups} entries`, 'SPAWN (Linux `NGROUPS_MAX`)'],
      ['cgroup_procs', `${L.maxCgroups} paths`, 'SPAWN'],
      ['signal', `below ${L.nsig}`, 'SIGNAL (Linux `NSIG`)'],
    ],
  );
  const messages = (kind: 'request' | 'reply', title: string): string =>
    [
      `### ${title}`,
      table(
        ['Type', 'Name', 'Meaning'],
        SPAWNER_MESSAGES.filter((m) => m.kind === kind).map((m) => [hexCode(m.code), m.name, m.meaning]),
      ),
      ...SPAWNER_MESSAGES.filter((m) => m.kind === kind).map(
        (m) =>
          `#### ${m.name} (${hexCode(m.code)})\n\n` +
          table(['Field', 'Encoding', 'Meaning'], fieldRows(m.fields, '')),
      ),
    ].join('\n\n');
  const stages = table(
    ['Stage', 'Name', 'What failed'],
    SPAWNER_STAGES.map((s) => [String(s.code), s.name, s.meaning]),
  );
  return new Map([
    ['spawner-limits', limits],
    [
      'spawner-messages',
      [
        messages('request', 'Requests (svcd → spawner)'),
        messages('reply', 'Replies and events (spawner → svcd)'),
      ].join('\n\n'),
    ],
    ['spawner-stages', stages],
  ]);
}

/** The file at `path` (relative to the repository root), or undefined when it does not exist. */
export function readRepoFile(path: string): string | undefined {
  try {
    return readFileSync(`${REPO_ROOT}${path}`, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Every generated file, by path relative to the repository root. */
export async function buildAllGenerated(): Promise<Map<string, string>> {
  const files = buildSpecFiles();
  files.set(REFERENCE_DOC, await renderReferenceDoc(readRepoFile(REFERENCE_DOC)));
  const spawnerDoc = readRepoFile(SPAWNER_DOC);
  if (spawnerDoc === undefined)
    throw new Error(`${SPAWNER_DOC} is missing (hand-written, with generated sections)`);
  files.set(SPAWNER_DOC, await renderSections(SPAWNER_DOC, spawnerDoc, buildSpawnerSections()));
  return files;
}
