import { describe, expect, it } from 'vitest';
import { APP_DEFINITION_FIELDS } from '../model/app-definition.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { operations } from './operations/index.ts';
import { APP_DEFINITION_DOC_FIELDS } from './schemas.ts';

describe('declared schemas', () => {
  it('document exactly the fields model/app-definition.ts accepts', () => {
    expect([...APP_DEFINITION_DOC_FIELDS].sort()).toEqual([...APP_DEFINITION_FIELDS].sort());
  });
  it('every operation declares a success answer, and a JSON body only with a schema', () => {
    for (const op of operations) {
      expect(op.responses[0].status, op.id).toBeGreaterThanOrEqual(200);
      expect(op.responses[0].status, op.id).toBeLessThan(300);
    }
  });
  it('the OpenAPI document has no untyped JSON body and resolves every $ref', () => {
    const doc = buildOpenApiDocument() as {
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: object }> } }>
      >;
      components: { schemas: Record<string, unknown> };
    };
    const text = JSON.stringify(doc);
    for (const [, ref] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g))
      expect(doc.components.schemas, ref).toHaveProperty([ref!]);
    for (const name of ['AppDefinition', 'AppView', 'Config', 'Principal', 'Self', 'Error'])
      expect(doc.components.schemas, name).toHaveProperty([name]);
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods)) {
        const schema = op.requestBody?.content['application/json']?.schema;
        if (schema !== undefined) expect(schema, `${method} ${path}`).not.toEqual({ type: 'object' });
      }
  });
});
