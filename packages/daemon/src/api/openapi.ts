// Builds the OpenAPI 3.1 document from the operation table (served at /openapi.json and written to
// spec/openapi.json by `npm run gen:spec`). The table is the source; this file only describes it.
import { ERROR_CODES } from '@svc/protocol';
import { operations } from './operations/index.ts';

const VERSION = '0.1.0';

export function buildOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema:
        m[1] === 'id'
          ? { type: 'string', maxLength: 512 }
          : { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,128}$' },
    }));
    const query = (op.query ?? []).map((q) => ({
      name: q.name,
      in: 'query',
      required: q.required ?? false,
      description: q.description,
      schema: { type: 'string' },
    }));
    const access = op.access;
    const entry: Record<string, unknown> = {
      operationId: op.id,
      summary: op.summary,
      'x-svc-access': access.kind === 'permission' ? access.permission : access.kind,
      parameters: [...params, ...query],
      responses: {
        '200': { description: 'success' },
        default: {
          description: 'error',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
    };
    if (access.kind === 'public' || access.kind === 'process-key') entry['security'] = [];
    if (op.jsonBody === true)
      entry['requestBody'] = {
        required: true,
        content: { 'application/json': { schema: { type: 'object' } } },
      };
    (paths[op.path] ??= {})[op.method.toLowerCase()] = entry;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version: VERSION,
      description:
        'One operation table served over HTTPS REST, WSS (sub-protocol svc-ws) and TLS TCP (framed msgpack).',
    },
    servers: [
      { url: 'https://127.0.0.1:6058' },
      { url: 'https://127.0.0.1:6060', description: 'agent front door' },
    ],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error', 'message'],
          properties: {
            error: { type: 'string', enum: Object.keys(ERROR_CODES) },
            message: { type: 'string' },
          },
        },
      },
    },
  };
}
