// Builds the OpenAPI 3.1 document from the operation table (served at /openapi.json and written to
// spec/openapi.json by `npm run gen:spec`). The table is the source: paths, parameters, bodies and
// answers come from each operation's zod schemas (z.toJSONSchema), `x-svc-access` is its rule.
import { NAME_PATTERN } from '@svc/protocol';
import * as z from 'zod';
import type { AccessRule } from '../auth/access-rules.ts';
import { operations } from './operations/index.ts';
import { ErrorBody } from './schemas.ts';
import type { Operation, ResponseSpec } from './types.ts';

const VERSION = '0.1.0';

type Json = Record<string, unknown>;

/** Converts schemas, collecting every schema with a `meta({id})` into components.schemas. */
class SchemaCollector {
  readonly components: Record<string, Json> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const out = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
    const defs = (out['$defs'] ?? {}) as Record<string, Json>;
    delete out['$defs'];
    delete out['$schema'];
    for (const [id, def] of Object.entries(defs)) this.components[id] ??= relink(def);
    return relink(out);
  }
}

function relink(schema: Json): Json {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/$defs/', '"#/components/schemas/')) as Json;
}

/** A one-line form of a rule, for summaries and docs (the full rule is `x-svc-access`). */
export function describeRule(rule: AccessRule): string {
  switch (rule.kind) {
    case 'public':
    case 'authenticated':
      return rule.kind;
    case 'process-key':
      return rule.app === 'agent' ? 'process key of svc-agent' : 'process key of the application';
    case 'permission':
      return [rule.permission, ...(rule.also ?? [])].join(' + ');
    case 'subscription-owner':
      return `${rule.permission}, creator of the subscription`;
    case 'app':
      return `${rule.permission} on the application`;
    case 'visible-app':
      return 'anyone who sees the application (without a token: registered services)';
  }
}

function queryParameters(op: Operation<unknown>, schemas: SchemaCollector): Json[] {
  if (op.query === undefined) return [];
  const object = schemas.convert(op.query, 'input');
  const properties = (object['properties'] ?? {}) as Record<string, Json>;
  const required = new Set((object['required'] ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]) => {
    const { description, ...rest } = schema;
    return {
      name,
      in: 'query',
      required: required.has(name),
      ...(description === undefined ? {} : { description }),
      schema: rest,
    };
  });
}

function responseEntry(spec: ResponseSpec, schemas: SchemaCollector): Json {
  const entry: Json = { description: spec.description };
  if ('json' in spec) {
    entry['content'] = { 'application/json': { schema: schemas.convert(spec.json, 'output') } };
    return entry;
  }
  if (spec.media !== 'none') entry['content'] = { [spec.media]: { schema: { type: 'string' } } };
  if (spec.headers !== undefined)
    entry['headers'] = Object.fromEntries(
      Object.entries(spec.headers).map(([name, description]) => [
        name,
        { description, schema: { type: 'string' } },
      ]),
    );
  return entry;
}

function operationEntry(op: Operation<unknown>, schemas: SchemaCollector): Json {
  const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema:
      m[1] === 'id' ? { type: 'string', maxLength: 512 } : { type: 'string', pattern: NAME_PATTERN.source },
  }));
  const responses: Json = {};
  for (const spec of op.responses) responses[String(spec.status)] = responseEntry(spec, schemas);
  responses['default'] = {
    description: 'error',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  const entry: Json = {
    operationId: op.id,
    summary: op.summary,
    'x-svc-access': op.access,
    ...(op.connection === undefined ? {} : { 'x-svc-connection': op.connection }),
    parameters: [...params, ...queryParameters(op, schemas)],
    responses,
  };
  if (op.access.kind === 'public' || op.access.kind === 'process-key') entry['security'] = [];
  // The bearer is optional: `{}` is the alternative without one.
  if (op.access.kind === 'visible-app') entry['security'] = [{}, { bearer: [] }];
  const body = op.body;
  if (body?.kind === 'json')
    entry['requestBody'] = {
      required: true,
      content: { 'application/json': { schema: schemas.convert(body.schema, 'input') } },
    };
  else if (body?.kind === 'raw')
    entry['requestBody'] = {
      required: false,
      description: body.description,
      content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
    };
  return entry;
}

export function buildOpenApiDocument(): Record<string, unknown> {
  const schemas = new SchemaCollector();
  schemas.convert(ErrorBody, 'output');
  const paths: Record<string, Json> = {};
  for (const op of operations) (paths[op.path] ??= {})[op.method.toLowerCase()] = operationEntry(op, schemas);
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version: VERSION,
      description:
        'One operation table served over HTTPS REST, WSS (sub-protocol svc-ws) and TLS TCP (framed msgpack). x-svc-access is the access rule of an operation (spec/access.json explains the kinds).',
    },
    servers: [
      { url: 'https://127.0.0.1:6058' },
      { url: 'https://127.0.0.1:6060', description: 'agent front door' },
    ],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}

/** spec/access.json: every operation's rule, and what each kind of rule means. */
export function buildAccessDocument(): Record<string, unknown> {
  return {
    kinds: ACCESS_KINDS,
    operations: Object.fromEntries(
      operations.map((op) => [
        op.id,
        { method: op.method, path: op.path, success: op.responses[0].status, rule: op.access },
      ]),
    ),
  };
}

const ACCESS_KINDS = {
  public: 'anyone, no token',
  authenticated: 'any valid bearer token, also of a tombstoned principal',
  permission:
    "an active principal holding `permission` and every permission in `also`; a tombstoned principal gets 403 principal_tombstoned. With `orProcessKeyOf`, a request carrying X-Svc-Process-Key is decided as that application's process key instead (as `process-key`)",
  app: "an active principal allowed `permission` on one application, in three steps so that no refusal tells whether an application the caller cannot see exists: (1) the permission itself, whatever the name, else 403 (app-view is also held through app-view-all or app-manage-all; app-delete is not asked: the owner needs none); (2) the application must be one the caller sees: its owner, everyone when it is shared (its `permission` tens digit read or write), holders of app-view-all or app-manage-all; system applications svc-admin only. Else 404 app_not_found with the message of a missing application (`missing: new`: a missing name becomes the caller's application, one it cannot see is 403); (3) on a seen application: app-manage-all, or it owns the app, or the app is shared with it; app-delete needs no permission for the owner; app-subscribe on any app also by app-view-all; else 403. `app.from`: `path` = the {name} parameter, `body-copy` = the body `name` when the body has no `command` (running a copy; needs `permission` and `app.needs` on the copied app; with `command` only `permission`). `missing`: `not-found` = 404 app_not_found, `new` = allowed, the caller will own it. `changes: true` refuses system applications to everyone (403 system_app). `withQuery`: with that query parameter present, that permission on the app as well",
  'subscription-owner':
    'an active principal holding `permission` (else 403) that created the subscription named by the subscription_id query parameter (of the {name} application when `app` is `path`); 404 not_found when there is none or another principal created it',
  'process-key':
    'no bearer: the X-Svc-Process-Key header of the current process of the application (`path`: the {name} application, `agent`: svc-agent), on a direct loopback connection',
  'visible-app':
    'anyone, with or without a bearer, about the {name} application if the caller sees it: a registered service (a cluster application with a port on this node; the registry publishes its name and this URL) is seen by everyone, any other application only by a bearer that sees it (as in `app`, step 2); every other name is 404 app_not_found with the message of a missing application. A bearer that is sent is verified (401 when invalid)',
};
