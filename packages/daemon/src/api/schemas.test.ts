import { SvcError } from '@svc/protocol';
import { describe, expect, it } from 'vitest';
import { parseAppDefinition } from '../model/app-definition.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { operations } from './operations/index.ts';
import { validateBody } from './validate-input.ts';

function refusal(action: () => unknown): SvcError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    return error as SvcError;
  }
  throw new Error('expected a refusal');
}

describe('declared schemas', () => {
  it('every operation declares a success answer', () => {
    for (const op of operations) {
      expect(op.responses[0].status, op.id).toBeGreaterThanOrEqual(200);
      expect(op.responses[0].status, op.id).toBeLessThan(300);
    }
  });

  it('the body of a definition is refused at the edge with the invalid_app message of parseAppDefinition', () => {
    const register = operations.find((op) => op.id === 'registerApplication')!;
    const run = operations.find((op) => op.id === 'runApplication')!;
    if (register.body?.kind !== 'json' || run.body?.kind !== 'json') throw new Error('JSON bodies expected');
    const bodies = [
      { name: 'web', command: '  ', env: { '1A': 'x' }, interval: 'P1M' },
      { name: 'web', command: 'ls', status: 2, stdout_backup_count: 101, extra: true },
      { name: 'web', command: 'a\nb', interval: 60, cron_schedule: '@daily' },
      { name: 'web', command: 'ls', behavior: { exit_code_actions: { '1': 'restart', '01': 'standby' } } },
    ];
    for (const body of bodies) {
      const model = refusal(() => parseAppDefinition(body));
      for (const op of [register, run]) {
        const edge = refusal(() => validateBody(op.body as never, body));
        expect({ op: op.id, code: edge.code, message: edge.message }).toEqual({
          op: op.id,
          code: 'invalid_app',
          message: model.message,
        });
      }
    }
    // A run of a copy is judged as one: its env, not a missing command.
    expect(refusal(() => validateBody(run.body as never, { name: 'web', env: { '1A': 'x' } })).message).toBe(
      'env["1A"]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$',
    );
    expect(refusal(() => validateBody(run.body as never, { name: 'web', shell: true })).message).toBe(
      'command: is required',
    );
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
    for (const name of ['AppDefinition', 'RunDefinition', 'AppView', 'Config', 'Principal', 'Self', 'Error'])
      expect(doc.components.schemas, name).toHaveProperty([name]);
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods)) {
        const schema = op.requestBody?.content['application/json']?.schema;
        if (schema !== undefined) expect(schema, `${method} ${path}`).not.toEqual({ type: 'object' });
      }
  });
});
