import { describe, expect, it } from 'vitest';
import { definitionOf, editableDefinition } from './app-definition.ts';
import { definitionFrom, fieldErrors, fieldsOf, valuesOf, type JsonSchema } from './schema-form.ts';
import openapi from '../../../../spec/openapi.json' with { type: 'json' };

const SCHEMA: JsonSchema = {
  type: 'object',
  required: ['name', 'command'],
  properties: {
    name: { type: 'string' },
    command: { type: 'string', minLength: 1 },
    shell: { type: 'boolean' },
    env: { type: 'object', additionalProperties: { type: 'string' } },
    interval: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
    stdout_backup_count: { type: 'integer' },
    depends_on: { type: 'array', items: { type: 'string' } },
    metadata: { description: 'stdin' },
    resource_limit: { type: 'object', properties: { memory_mb: { type: 'integer' } } },
    behavior: {
      type: 'object',
      properties: {
        exit: { type: 'string', enum: ['standby', 'restart'] },
        exit_code_actions: { type: 'object', additionalProperties: { type: 'string', enum: ['standby', 'restart'] } },
      },
    },
    owner_principal_id: { type: 'string', description: 'server-set: the registering principal' },
  },
};

describe('schema form', () => {
  const fields = fieldsOf(SCHEMA);

  it('makes one field per property, nested objects flattened, server-set ones left out', () => {
    expect(fields.map((f) => [f.path, f.kind])).toEqual([
      ['name', 'text'],
      ['command', 'text'],
      ['shell', 'boolean'],
      ['env', 'map'],
      ['interval', 'number-or-text'],
      ['stdout_backup_count', 'number'],
      ['depends_on', 'list'],
      ['metadata', 'json'],
      ['resource_limit.memory_mb', 'number'],
      ['behavior.exit', 'choice'],
      ['behavior.exit_code_actions', 'map'],
    ]);
    expect(fields.filter((f) => f.required).map((f) => f.path)).toEqual(['name', 'command']);
  });

  it('round-trips a definition through the form values', () => {
    const definition = {
      name: 'web',
      command: 'sleep 5',
      shell: true,
      env: { A: '1', B: 'x=y' },
      interval: 'PT5M',
      stdout_backup_count: 3,
      depends_on: ['db', 'cache'],
      metadata: { job: 1 },
      resource_limit: { memory_mb: 64 },
      behavior: { exit: 'restart', exit_code_actions: { '0': 'standby' } },
      owner_principal_id: 'u1',
      unknown_field: 'kept',
    };
    const values = valuesOf(fields, definition);
    expect(values['env']).toBe('A=1\nB=x=y');
    expect(values['depends_on']).toBe('db, cache');
    const back = definitionFrom(fields, values, definition);
    expect(back.errors).toEqual({});
    expect(back.definition).toEqual(definition);
  });

  it('removes emptied fields, keeps numbers numeric, and reports values it can tell are wrong', () => {
    const values = valuesOf(fields, { name: 'a', command: 'c', interval: 30 });
    values['interval'] = '60';
    values['stdout_backup_count'] = 'three';
    values['env'] = 'NOEQUALS';
    values['command'] = '';
    const { definition, errors } = definitionFrom(fields, values, { name: 'a', command: 'c', interval: 30 });
    expect(definition).toEqual({ name: 'a', interval: 60 });
    expect(Object.keys(errors).sort()).toEqual(['env', 'stdout_backup_count']);
  });

  it("places the daemon's issues beside their fields and keeps the rest general", () => {
    const message =
      'command: must not be empty; resource_limit.memory_mb: Too small: expected number to be >=1; env["bad key"]: invalid; cron_schedule: unknown field; application definition must be a JSON object';
    const { byField, general } = fieldErrors(message, fields);
    expect(byField['command']).toBe('must not be empty');
    expect(byField['resource_limit.memory_mb']).toBe('Too small: expected number to be >=1');
    expect(byField['env']).toBe('env["bad key"]: invalid');
    expect(general).toEqual(['cron_schedule: unknown field', 'application definition must be a JSON object']);
  });

  it('copes with hostile messages and schemas', () => {
    expect(fieldErrors('', fields).general).toEqual(['']);
    expect(fieldErrors('__proto__: x; constructor.prototype: y', fields).byField).toEqual({});
    expect(fieldsOf({})).toEqual([]);
    expect(fieldsOf({ properties: { x: {} } })[0]!.kind).toBe('json');
    const deep = definitionFrom(fields, { 'resource_limit.memory_mb': '5' }, { resource_limit: 'not an object' });
    expect(deep.definition['resource_limit']).toEqual({ memory_mb: 5 });
    const proto = definitionFrom(fields, { env: '__proto__=x\nconstructor=y' }, {});
    expect(Object.keys(proto.definition['env'] as object)).toEqual(['__proto__', 'constructor']);
    expect(JSON.stringify(proto.definition)).toBe('{"env":{"__proto__":"x","constructor":"y"}}');
  });
});

describe('editable definition', () => {
  it('sends back only what a client may set: no runtime, server-set or adopting fields', () => {
    const fields = fieldsOf(SCHEMA);
    const accepted = new Set(fields.map((f) => f.keys[0]!));
    const info = { name: 'a', command: 'c', pid: 12, cpu: 1, owner_principal_id: 'u', system: false, state: 'running', env: { A: '1' } };
    expect(definitionOf(info)).toEqual({ name: 'a', command: 'c', env: { A: '1' } });
    expect(editableDefinition({ ...info, mystery: 1 }, accepted)).toEqual({ name: 'a', command: 'c', env: { A: '1' } });
  });
});

describe("the daemon's AppDefinition (spec/openapi.json)", () => {
  const definition = (openapi as { components: { schemas: Record<string, JsonSchema> } }).components.schemas[
    'AppDefinition'
  ]!;
  const fields = fieldsOf(definition);

  it('makes a field of every property a client sets, sub-objects flattened', () => {
    expect(fields.map((f) => [f.path, f.kind])).toEqual([
      ['name', 'text'],
      ['description', 'text'],
      ['command', 'text'],
      ['shell', 'boolean'],
      ['session_login', 'boolean'],
      ['working_dir', 'text'],
      ['env', 'map'],
      ['secret_env', 'map'],
      ['metadata', 'json'],
      ['enabled', 'boolean'],
      ['health_check_cmd', 'text'],
      ['stdout_backup_count', 'number'],
      ['start_time', 'number-or-text'],
      ['end_time', 'number-or-text'],
      ['interval', 'number-or-text'],
      ['cron_schedule', 'text'],
      ['daily_limitation.daily_start', 'number-or-text'],
      ['daily_limitation.daily_end', 'number-or-text'],
      ['stop_grace_period', 'number-or-text'],
      ['depends_on', 'list'],
      ['resource_limit.cpu_shares', 'number'],
      ['resource_limit.memory_mb', 'number'],
      ['resource_limit.memory_virt_mb', 'number'],
      ['behavior.exit', 'choice'],
      ['behavior.exit_code_actions', 'map'],
      ['permission', 'number-or-text'],
      ['pid', 'number'],
      ['docker_image', 'text'],
    ]);
    expect(fields.filter((f) => f.required).map((f) => f.path)).toEqual(['command']);
    expect(fields.find((f) => f.path === 'behavior.exit_code_actions')?.valueChoices).toEqual([
      'standby',
      'restart',
      'keepalive',
      'remove',
    ]);
  });

  it("places the daemon's own messages beside those fields", () => {
    const message =
      'daily_limitation.daily_end: is required; behavior.exit_code_actions["abc"]: exit code must be an integer; resource_limit.memory_virt_mb: must be at least memory_mb';
    expect(fieldErrors(message, fields).byField).toEqual({
      'daily_limitation.daily_end': 'is required',
      'behavior.exit_code_actions': 'behavior.exit_code_actions["abc"]: exit code must be an integer',
      'resource_limit.memory_virt_mb': 'must be at least memory_mb',
    });
  });
});
