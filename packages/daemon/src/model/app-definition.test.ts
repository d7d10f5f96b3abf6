import { SvcError } from '@svc/protocol';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AppDefinition } from './app-definition.ts';
import {
  SECRET_MASK,
  cronExpression,
  deserializeApp,
  formatPath,
  intervalSeconds,
  parseAppDefinition,
  parseDuration,
  parseInstant,
  serializeApp,
  toPublicView,
} from './app-definition.ts';
import { createSecretCrypter } from './secret-crypter.ts';

const NOW = Date.UTC(2024, 0, 1);
const base = { name: 'web', command: 'node server.js' };

function parse(
  input: Record<string, unknown>,
  options: Parameters<typeof parseAppDefinition>[1] = {},
): AppDefinition {
  return parseAppDefinition({ ...base, ...input }, { now: NOW, ...options });
}

/** The exact invalid_app message of parsing `base` extended with `input`. */
function messageOf(input: unknown, options: Parameters<typeof parseAppDefinition>[1] = {}): string {
  try {
    parseAppDefinition(input, { now: NOW, ...options });
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).code).toBe('invalid_app');
    expect((error as SvcError).status).toBe(400);
    return (error as SvcError).message;
  }
  throw new Error('expected parseAppDefinition to throw');
}
const bad = (input: Record<string, unknown>): string => messageOf({ ...base, ...input });

describe('parseAppDefinition: minimal definition and defaults', () => {
  it('fills every default', () => {
    expect(parseAppDefinition(base, { now: NOW })).toEqual({
      name: 'web',
      command: 'node server.js',
      shell: false,
      env: {},
      secret_env: {},
      enabled: true,
      stdout_backup_count: 3,
      session_login: false,
      depends_on: [],
      behavior: { exit: 'restart', exit_code_actions: {} },
      system: false,
      register_time: NOW,
    });
  });

  it('defaults exit behavior to standby for periodic apps', () => {
    expect(parse({ interval: 60 }).behavior.exit).toBe('standby');
    expect(parse({ cron_schedule: '0 * * * *' }).behavior.exit).toBe('standby');
    expect(parse({ interval: 60, behavior: { exit: 'keepalive' } }).behavior.exit).toBe('keepalive');
  });

  it('treats null fields as not set', () => {
    const def = parse({ description: null, working_dir: null, env: null });
    expect(def.description).toBeUndefined();
    expect(def.env).toEqual({});
  });

  it('accepts a full definition', () => {
    const def = parse({
      description: 'the web server',
      shell: true,
      command: 'cd /srv\nexec node server.js',
      working_dir: '/srv',
      env: { PORT: '8080', _X: '' },
      secret_env: { TOKEN: 's3cret' },
      metadata: { job: [1, 2, { deep: true }] },
      enabled: false,
      health_check_cmd: 'curl -f localhost:8080',
      stdout_backup_count: 0,
      start_time: 1704067200,
      end_time: '2025-01-01T00:00:00Z',
      interval: 'PT5M',
      daily_limitation: { daily_start: '09:00', daily_end: 61200 },
      resource_limit: { memory_mb: 512, cpu_shares: 1024 },
      behavior: { exit: 'keepalive', exit_code_actions: { '0': 'standby', '-9': 'remove' } },
      stop_grace_period: 'P1D',
      permission: 21,
      pid: 1234,
    });
    expect(def).toMatchObject({
      shell: true,
      working_dir: '/srv',
      env: { PORT: '8080', _X: '' },
      secret_env: { TOKEN: 's3cret' },
      metadata: { job: [1, 2, { deep: true }] },
      enabled: false,
      stdout_backup_count: 0,
      start_time: 1704067200000,
      end_time: Date.UTC(2025, 0, 1),
      interval: 300,
      daily_limitation: { daily_start: '09:00:00', daily_end: '17:00:00' },
      resource_limit: { memory_mb: 512, cpu_shares: 1024 },
      behavior: { exit: 'keepalive', exit_code_actions: { '0': 'standby', '-9': 'remove' } },
      stop_grace_period: { seconds: 86400, text: 'P1D' },
      permission: 21,
      pid: 1234,
    });
    expect(intervalSeconds(def)).toBe(300);
    expect(cronExpression(def)).toBeUndefined();
  });
});

describe('parseAppDefinition: body shape', () => {
  it.each([
    [null, 'application definition must be a JSON object, got null'],
    [[base], 'application definition must be a JSON object, got an array'],
    ['web', 'application definition must be a JSON object, got a string'],
    [42, 'application definition must be a JSON object, got a number'],
    [undefined, 'application definition must be a JSON object, got undefined'],
    [new Date(), 'application definition must be a JSON object, got an object'],
  ])('rejects %j', (input, message) => {
    expect(messageOf(input)).toBe(message);
  });

  it('rejects unknown fields, naming each', () => {
    expect(bad({ comand: 'x', extra: 1 })).toBe('comand: unknown field; extra: unknown field');
    expect(bad({ 'bad key': 1 })).toBe('["bad key"]: unknown field');
  });

  it('ignores runtime fields echoed back from GET', () => {
    const def = parse({
      process_uuid: 'u',
      return_code: 1,
      health: 0,
      memory: 1,
      cpu: 2,
      starts: 3,
      last_start_time: 'x',
      last_exit_time: 'x',
      next_start_time: 'x',
      last_error: 'x',
      stdout_cache_size: 3,
      register_time: '2000-01-01T00:00:00Z',
      subscription_id: 's',
    });
    expect(def.register_time).toBe(NOW);
    expect(Object.keys(def)).not.toContain('process_uuid');
  });

  it('ignores owner from the API, keeps it when trusted', () => {
    expect(parse({ owner_principal_id: 'mallory' }).owner_principal_id).toBeUndefined();
    expect(parse({ owner: 'mallory' }).owner_principal_id).toBeUndefined();
    expect(parse({ owner_principal_id: 'admin' }, { trusted: true }).owner_principal_id).toBe('admin');
    expect(parse({ owner: 'admin' }, { trusted: true }).owner_principal_id).toBe('admin');
  });

  it('accepts system only from bundled files', () => {
    expect(bad({ system: true })).toBe('system: only bundled application files (apps/*.yaml) may set system');
    expect(parse({ system: false }).system).toBe(false);
    expect(parse({ system: true }, { trusted: true }).system).toBe(true);
  });

  it('reports several problems at once', () => {
    expect(bad({ status: 2, stdout_backup_count: -1 })).toBe(
      'status: must be 1 (enabled) or 0 (disabled); stdout_backup_count: must be an integer from 0 to 100',
    );
  });
});

describe('parseAppDefinition: name', () => {
  it.each(['a', 'A-b_c.9', 'x'.repeat(128), '...', '.hidden'])('accepts %j', (name) => {
    expect(parse({ name }).name).toBe(name);
  });
  it.each([
    ['', 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['x'.repeat(129), 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['a/b', 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['../etc', 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['a b', 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['a\n', 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['é', 'name: must match ^[A-Za-z0-9_.-]{1,128}$'],
    ['.', 'name: "." and ".." are not allowed'],
    ['..', 'name: "." and ".." are not allowed'],
    [5, 'name: must be a string, got a number'],
  ])('rejects %j', (name, message) => {
    expect(bad({ name })).toBe(message);
  });
  it('is required', () => {
    expect(messageOf({ command: 'x' })).toBe('name: is required');
  });
});

describe('parseAppDefinition: command, shell, working_dir, description, health_check_cmd', () => {
  it('requires a non-empty command', () => {
    expect(messageOf({ name: 'a' })).toBe('command: is required');
    expect(bad({ command: '   ' })).toBe('command: must not be empty');
    expect(bad({ command: ['ls'] })).toBe('command: must be a string, got an array');
  });
  it('bounds the command to 64 KiB of UTF-8', () => {
    expect(parse({ command: 'x'.repeat(65536) }).command).toHaveLength(65536);
    expect(bad({ command: 'x'.repeat(65537) })).toBe('command: must be at most 65536 bytes');
    expect(bad({ command: 'é'.repeat(40000) })).toBe('command: must be at most 65536 bytes');
    expect(bad({ command: 'x'.repeat(50 * 1024 * 1024) })).toBe('command: must be at most 65536 bytes');
  });
  it('refuses NUL and, without shell, line breaks', () => {
    expect(bad({ command: 'ls\0-la' })).toBe('command: must not contain NUL characters');
    expect(bad({ command: 'ls\nrm -rf /' })).toBe(
      'command: must not contain line breaks unless shell is true',
    );
    expect(bad({ command: 'ls\r' })).toBe('command: must not contain line breaks unless shell is true');
    expect(parse({ command: 'ls\npwd', shell: true }).command).toBe('ls\npwd');
  });
  it('checks shell is a boolean', () => {
    expect(bad({ shell: 'true' })).toBe('shell: must be true or false');
  });
  it('requires an absolute working_dir', () => {
    expect(bad({ working_dir: 'srv' })).toBe('working_dir: must be an absolute path');
    expect(bad({ working_dir: '/srv\n' })).toBe('working_dir: must not contain line breaks');
    expect(bad({ working_dir: '' })).toBe('working_dir: must not be empty');
    expect(bad({ working_dir: '/' + 'a'.repeat(4096) })).toBe('working_dir: must be at most 4096 bytes');
  });
  it('bounds description and health_check_cmd', () => {
    expect(bad({ description: 1 })).toBe('description: must be a string, got a number');
    expect(bad({ description: 'x'.repeat(65537) })).toBe('description: must be at most 65536 bytes');
    expect(bad({ health_check_cmd: '' })).toBe('health_check_cmd: must not be empty');
    expect(bad({ health_check_cmd: 'a\0' })).toBe('health_check_cmd: must not contain NUL characters');
  });
});

describe('parseAppDefinition: env and secret_env', () => {
  it('accepts valid names and values, including "constructor"', () => {
    const env = JSON.parse('{"constructor": "c", "toString": "t", "A_1": "x\\ny"}') as unknown;
    const def = parse({ env });
    expect(def.env).toEqual({ constructor: 'c', toString: 't', A_1: 'x\ny' });
    expect(Object.getPrototypeOf(def.env)).toBe(Object.prototype);
  });
  it('refuses __proto__ without touching any prototype', () => {
    const env = JSON.parse('{"__proto__": {"polluted": "yes"}}') as unknown;
    expect(bad({ env })).toBe('env["__proto__"]: reserved name');
    const secEnv = JSON.parse('{"__proto__": "x"}') as unknown;
    expect(bad({ secret_env: secEnv })).toBe('secret_env["__proto__"]: reserved name');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
  it.each([
    [{ '1A': 'x' }, 'env["1A"]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$'],
    [{ 'A-B': 'x' }, 'env["A-B"]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$'],
    [{ 'A\nB': 'x' }, 'env["A\\nB"]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$'],
    [{ 'A\0': 'x' }, 'env["A\\u0000"]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$'],
    [{ '': 'x' }, 'env[""]: variable name must match ^[A-Za-z_][A-Za-z0-9_]*$'],
    [{ A: 1 }, 'env["A"]: value must be a string, got a number'],
    [{ A: null }, 'env["A"]: value must be a string, got null'],
    [{ A: 'x\0y' }, 'env["A"]: value must not contain NUL characters'],
    [{ A: 'x'.repeat(65537) }, 'env["A"]: value must be at most 65536 bytes'],
  ])('rejects env %j', (env, message) => {
    expect(bad({ env })).toBe(message);
  });
  it('must be an object', () => {
    expect(bad({ env: ['A=1'] })).toBe('env: must be an object of string values, got an array');
    expect(bad({ secret_env: 'A=1' })).toBe('secret_env: must be an object of string values, got a string');
  });
  it('allows at most 1000 entries', () => {
    const many = (n: number): Record<string, string> =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`V${i}`, 'x']));
    expect(Object.keys(parse({ env: many(1000) }).env)).toHaveLength(1000);
    expect(bad({ env: many(1001) })).toBe('env: must have at most 1000 entries');
  });
  it('keeps a masked secret_env value from the previous definition', () => {
    const previous = parse({ secret_env: { TOKEN: 'old', OTHER: 'o' } });
    const next = parse({ secret_env: { TOKEN: SECRET_MASK, NEW: 'n' } }, { previous });
    expect(next.secret_env).toEqual({ TOKEN: 'old', NEW: 'n' });
    expect(bad({ secret_env: { TOKEN: SECRET_MASK } })).toBe(
      'secret_env["TOKEN"]: "******" stands for a stored value, but there is none to keep',
    );
    expect(messageOf({ ...base, secret_env: { NEW: SECRET_MASK } }, { previous })).toBe(
      'secret_env["NEW"]: "******" stands for a stored value, but there is none to keep',
    );
  });
});

describe('parseAppDefinition: metadata', () => {
  it('accepts a string or any JSON value', () => {
    expect(parse({ metadata: 'line1\nline2' }).metadata).toBe('line1\nline2');
    expect(parse({ metadata: [1, 'a', null, false] }).metadata).toEqual([1, 'a', null, false]);
    expect(parse({ metadata: 0 }).metadata).toBe(0);
    const withProto = JSON.parse('{"__proto__": {"x": 1}}') as unknown;
    expect(Object.keys(parse({ metadata: withProto }).metadata as object)).toEqual(['__proto__']);
  });
  it('bounds size and depth', () => {
    expect(bad({ metadata: 'x'.repeat(1024 * 1024 + 1) })).toBe('metadata: must be at most 1048576 bytes');
    expect(bad({ metadata: { a: 'x'.repeat(1024 * 1024) } })).toBe(
      'metadata: must be at most 1048576 bytes as JSON',
    );
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(bad({ metadata: deep })).toBe('metadata: must be nested at most 64 levels deep');
    let ok: unknown = 1;
    for (let i = 0; i < 63; i++) ok = { k: ok };
    expect(parse({ metadata: ok }).metadata).toEqual(ok);
  });
  it('refuses values that are not JSON', () => {
    expect(bad({ metadata: Number.NaN })).toBe('metadata: must be a JSON value (numbers must be finite)');
    expect(bad({ metadata: { f: () => 1 } })).toBe(
      'metadata: must be a string or a JSON value, got a function',
    );
    expect(bad({ metadata: new Map() })).toBe('metadata: must be a string or a JSON value, got an object');
  });
});

describe('parseAppDefinition: status, stdout_backup_count, resource_limit, pid, permission', () => {
  it.each([true, false])('accepts enabled %j', (enabled) => expect(parse({ enabled }).enabled).toBe(enabled));
  it.each([0, 1, 'true', null])('rejects enabled %j (null = not set)', (enabled) => {
    if (enabled === null) expect(parse({ enabled }).enabled).toBe(true);
    else expect(bad({ enabled })).toBe('enabled: must be true or false');
  });
  it.each([0, 1])('accepts the old status %j as enabled', (status) =>
    expect(parse({ status }).enabled).toBe(status === 1),
  );
  it.each([2, -1, true, '1', 0.5])('rejects status %j', (status) => {
    expect(bad({ status })).toBe('status: must be 1 (enabled) or 0 (disabled)');
  });
  it('refuses an old name together with its new one', () => {
    expect(bad({ status: 1, enabled: true })).toBe('status: is the old name of enabled; send only enabled');
  });
  it.each([0, 100])('accepts stdout_backup_count %j', (n) =>
    expect(parse({ stdout_backup_count: n }).stdout_backup_count).toBe(n),
  );
  it.each([101, -1, 1.5, '3'])('rejects stdout_backup_count %j', (n) => {
    expect(bad({ stdout_backup_count: n })).toBe('stdout_backup_count: must be an integer from 0 to 100');
  });
  it('validates resource_limit', () => {
    expect(parse({ resource_limit: {} }).resource_limit).toEqual({});
    expect(bad({ resource_limit: { memory_mb: 0 } })).toBe(
      'resource_limit.memory_mb: must be a positive integer (MiB)',
    );
    expect(bad({ resource_limit: { cpu_shares: 262145 } })).toBe(
      'resource_limit.cpu_shares: must be an integer from 1 to 262144',
    );
    expect(bad({ resource_limit: { memory: 1 } })).toBe('resource_limit.memory: unknown field');
    expect(bad({ resource_limit: 512 })).toBe(
      'resource_limit: must be an object with cpu_shares, memory_mb and/or memory_virt_mb',
    );
    expect(parse({ resource_limit: { memory_mb: 64, memory_virt_mb: 128 } }).resource_limit).toEqual({
      memory_mb: 64,
      memory_virt_mb: 128,
    });
    expect(bad({ resource_limit: { memory_mb: 64, memory_virt_mb: 32 } })).toBe(
      'resource_limit.memory_virt_mb: must be at least memory_mb',
    );
  });
  it('validates pid', () => {
    expect(parse({ pid: 1 }).pid).toBe(1);
    expect(bad({ pid: 0 })).toBe('pid: must be a positive integer process id');
    expect(bad({ pid: '12' })).toBe('pid: must be a positive integer process id');
    expect(bad({ pid: 2 ** 31 })).toBe('pid: must be a positive integer process id');
  });
  it.each([11, 21, 22, 33, 10, '22'])('accepts permission %j', (permission) => {
    expect(parse({ permission }).permission).toBe(Number(permission));
  });
  it.each([0, 5, 41, 99, 100, -11, 2.5, 'alice', true])('rejects permission %j', (permission) => {
    expect(bad({ permission })).toMatch(/^permission: (must be a two-digit number|tens digit)/);
  });
  it('refuses the old share list with a clear message', () => {
    expect(bad({ permission: ['alice'] })).toContain(
      'sharing with a list of principal ids is no longer supported',
    );
  });
});

describe('parseAppDefinition: behavior', () => {
  it.each(['standby', 'restart', 'keepalive', 'remove'])('accepts exit %j', (exit) => {
    expect(parse({ behavior: { exit } }).behavior).toEqual({ exit, exit_code_actions: {} });
  });
  it('rejects a bad exit action', () => {
    expect(bad({ behavior: { exit: 'always' } })).toBe(
      'behavior.exit: must be one of standby, restart, keepalive, remove',
    );
    expect(bad({ behavior: { exit: 'restart', retry: 3 } })).toBe('behavior.retry: unknown field');
    expect(bad({ behavior: [] })).toBe('behavior: must be an object with exit and/or exit_code_actions');
  });
  it('normalizes control exit codes', () => {
    expect(
      parse({
        behavior: {
          exit_code_actions: { '+1': 'standby', '007': 'remove', '-0': 'keepalive', ' 2 ': 'restart' },
        },
      }).behavior.exit_code_actions,
    ).toEqual({
      '1': 'standby',
      '7': 'remove',
      '0': 'keepalive',
      '2': 'restart',
    });
  });
  it.each([
    [{ abc: 'restart' }, 'behavior.exit_code_actions["abc"]: exit code must be an integer'],
    [{ '1.5': 'restart' }, 'behavior.exit_code_actions["1.5"]: exit code must be an integer'],
    [{ '': 'restart' }, 'behavior.exit_code_actions[""]: exit code must be an integer'],
    [{ '256': 'restart' }, 'behavior.exit_code_actions["256"]: exit code must be between -255 and 255'],
    [{ '-256': 'restart' }, 'behavior.exit_code_actions["-256"]: exit code must be between -255 and 255'],
    [
      { '1': 'reboot' },
      'behavior.exit_code_actions["1"]: action must be one of standby, restart, keepalive, remove',
    ],
    [
      { '1': 1 },
      'behavior.exit_code_actions["1"]: action must be one of standby, restart, keepalive, remove',
    ],
    [{ '1': 'restart', '01': 'standby' }, 'behavior.exit_code_actions["01"]: same exit code as "1"'],
  ])('rejects control %j', (control, message) => {
    expect(bad({ behavior: { control } })).toBe(message);
  });
  it('refuses prototype keys in control', () => {
    const control = JSON.parse('{"__proto__": "restart", "constructor": "remove"}') as unknown;
    expect(bad({ behavior: { control } })).toBe(
      'behavior.exit_code_actions["__proto__"]: exit code must be an integer; behavior.exit_code_actions["constructor"]: exit code must be an integer',
    );
    expect(bad({ behavior: { exit_code_actions: 'x' } })).toBe(
      'behavior.exit_code_actions: must be an object mapping exit codes to actions, got a string',
    );
  });
});

describe('parseAppDefinition: times, intervals, cron, daily window, stop_grace_period', () => {
  it('accepts epoch seconds and ISO 8601 instants', () => {
    expect(parse({ start_time: 1704067200.5 }).start_time).toBe(1704067200500);
    expect(parse({ start_time: '2024-01-01T00:00:00Z' }).start_time).toBe(Date.UTC(2024, 0, 1));
    expect(parse({ start_time: '2024-01-01T02:00:00+02:00' }).start_time).toBe(Date.UTC(2024, 0, 1));
    expect(parse({ start_time: '2024-01-01T02:00:00+0200' }).start_time).toBe(Date.UTC(2024, 0, 1));
    expect(parse({ start_time: '2024-01-01 00:00:00.123Z' }).start_time).toBe(Date.UTC(2024, 0, 1) + 123);
    expect(parse({ start_time: '2024-01-01T00:00:00' }).start_time).toBe(new Date(2024, 0, 1).getTime());
  });
  it.each([
    [-1, 'start_time: must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z'],
    [1e15, 'start_time: must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z'],
    [true, 'start_time: must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z'],
    [
      'tomorrow',
      'start_time: must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z (got "tomorrow")',
    ],
    [
      '2024-01-01',
      'start_time: must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z (got "2024-01-01")',
    ],
    [
      '2024-13-45T00:00:00Z',
      'start_time: must be epoch seconds or an ISO 8601 date-time like 2024-01-31T09:00:00Z (got "2024-13-45T00:00:00Z")',
    ],
  ])('rejects start_time %j', (start_time, message) => {
    expect(bad({ start_time })).toBe(message);
  });
  it('requires end_time after start_time', () => {
    expect(bad({ start_time: 200, end_time: 100 })).toBe('end_time: must be after start_time');
    expect(bad({ start_time: 100, end_time: 100 })).toBe('end_time: must be after start_time');
    expect(parse({ start_time: 100, end_time: 101 }).end_time).toBe(101000);
  });
  it.each([
    [60, 60],
    ['60', 60],
    ['PT5M', 300],
    ['PT1H30M', 5400],
    ['P1DT1S', 86401],
    ['P2W', 1209600],
  ])('accepts interval %j as %d seconds', (value, seconds) => {
    expect(parse({ interval: value }).interval).toBe(seconds);
  });
  it.each([
    [0, 'interval: must be at least 1 second'],
    ['PT0S', 'interval: must be at least 1 second'],
    [1.5, 'interval: must be whole seconds or an ISO 8601 duration like PT5M'],
    [-5, 'interval: must be whole seconds or an ISO 8601 duration like PT5M'],
    ['5m', 'interval: must be whole seconds or an ISO 8601 duration like PT5M (got "5m")'],
    ['PT', 'interval: must be whole seconds or an ISO 8601 duration like PT5M (got "PT")'],
    ['P', 'interval: must be whole seconds or an ISO 8601 duration like PT5M (got "P")'],
    [
      'P1M',
      'interval: years and months are not fixed lengths; use weeks, days, hours, minutes, seconds (got "P1M")',
    ],
    [
      'P1Y',
      'interval: years and months are not fixed lengths; use weeks, days, hours, minutes, seconds (got "P1Y")',
    ],
    [
      '*/5 * * * *',
      'interval: must be whole seconds or an ISO 8601 duration like PT5M (got "*/5 * * * *"); use cron_schedule for a cron expression',
    ],
    [2 ** 31, 'interval: must be at most 2147483647 seconds'],
    [{}, 'interval: must be whole seconds or an ISO 8601 duration like PT5M'],
  ])('rejects interval %j', (value, message) => {
    expect(bad({ interval: value })).toBe(message);
  });
  it('validates cron expressions', () => {
    const def = parse({ cron_schedule: ' 0 9 * * 1-5 ' });
    expect(def.cron_schedule).toBe('0 9 * * 1-5');
    expect(def.interval).toBeUndefined();
    expect(cronExpression(def)).toBe('0 9 * * 1-5');
    expect(intervalSeconds(def)).toBeUndefined();
    expect(parse({ cron_schedule: '30 */5 * * * *' }).cron_schedule).toBe('30 */5 * * * *');
    expect(parse({ cron_schedule: '@daily' }).cron_schedule).toBe('@daily');
    // The old form: cron: true with the expression in start_interval_seconds.
    expect(parse({ cron: true, start_interval_seconds: '@daily' }).cron_schedule).toBe('@daily');
    expect(parse({ cron: false, start_interval_seconds: 60 }).interval).toBe(60);
    expect(bad({ cron: true })).toBe('cron: use cron_schedule with the cron expression');
    expect(bad({ cron_schedule: 60 })).toBe('cron_schedule: must be a cron expression string');
    expect(bad({ cron_schedule: '@daily', interval: 60 })).toBe(
      'interval: give either interval or cron_schedule, not both',
    );
    expect(bad({ cron_schedule: '61 * * * *' })).toBe(
      'cron_schedule: invalid cron expression "61 * * * *": Constraint error, got value 61 expected range 0-59',
    );
    expect(bad({ cron_schedule: '0 0 30 2 *' })).toMatch(
      /^cron_schedule: invalid cron expression "0 0 30 2 \*": /,
    );
    expect(bad({ cron_schedule: '* '.repeat(200) })).toBe(
      'cron_schedule: cron expression must be at most 256 characters',
    );
    expect(bad({ cron: 'yes' })).toBe('cron: must be true or false');
  });
  it('normalizes the daily window', () => {
    expect(
      parse({ daily_limitation: { daily_start: '22:00', daily_end: '06:30:15' } }).daily_limitation,
    ).toEqual({
      daily_start: '22:00:00',
      daily_end: '06:30:15',
    });
    expect(parse({ daily_limitation: { daily_start: 0, daily_end: 86399 } }).daily_limitation).toEqual({
      daily_start: '00:00:00',
      daily_end: '23:59:59',
    });
  });
  it.each([
    [
      { daily_start: '24:00', daily_end: '01:00' },
      'daily_limitation.daily_start: must be "HH:MM" or "HH:MM:SS" (24-hour local time), seconds of the day 0..86399 or epoch seconds',
    ],
    [
      { daily_start: '9:00', daily_end: '10:00' },
      'daily_limitation.daily_start: must be "HH:MM" or "HH:MM:SS" (24-hour local time), seconds of the day 0..86399 or epoch seconds',
    ],
    [
      { daily_start: '09:00', daily_end: 2 ** 40 },
      'daily_limitation.daily_end: must be "HH:MM" or "HH:MM:SS" (24-hour local time), seconds of the day 0..86399 or epoch seconds',
    ],
    [
      { daily_start: '09:00', daily_end: '10:60' },
      'daily_limitation.daily_end: must be "HH:MM" or "HH:MM:SS" (24-hour local time), seconds of the day 0..86399 or epoch seconds',
    ],
    [{ daily_start: '09:00' }, 'daily_limitation.daily_end: is required'],
    [{ daily_start: '09:00', daily_end: 32400 }, 'daily_limitation: daily_start and daily_end must differ'],
    [{ daily_start: '09:00', daily_end: '10:00', tz: 'UTC' }, 'daily_limitation.tz: unknown field'],
    ['09:00-17:00', 'daily_limitation: must be an object with daily_start and daily_end'],
  ])('rejects daily_limitation %j', (daily_limitation, message) => {
    expect(bad({ daily_limitation })).toBe(message);
  });
  it('parses stop_grace_period as a duration', () => {
    expect(parse({ stop_grace_period: 0 }).stop_grace_period).toEqual({ seconds: 0, text: '0' });
    expect(parse({ stop_grace_period: 'PT10M' }).stop_grace_period).toEqual({ seconds: 600, text: 'PT10M' });
    expect(parse({ stop_grace_period: '45' }).stop_grace_period).toEqual({ seconds: 45, text: '45' });
    expect(bad({ stop_grace_period: 'forever' })).toBe(
      'stop_grace_period: must be whole seconds or an ISO 8601 duration like PT5M (got "forever")',
    );
  });
  it('exposes the small parsers', () => {
    expect(parseInstant('2024-01-01T00:00:00Z')).toEqual({ ok: true, value: Date.UTC(2024, 0, 1) });
    expect(parseDuration('PT1M')).toEqual({ ok: true, value: 60 });
    expect(formatPath(['behavior', 'exit_code_actions', 'abc'])).toBe('behavior.exit_code_actions["abc"]');
    expect(formatPath(['permission', 2])).toBe('permission[2]');
    expect(formatPath(['env', 'A'])).toBe('env["A"]');
  });
});

describe('toPublicView', () => {
  it('masks secret_env, renders instants as epoch seconds and durations as seconds', () => {
    const def = parse(
      {
        secret_env: { TOKEN: 'hunter2', KEY: 'k' },
        env: { A: '1' },
        start_time: '2024-02-01T00:00:00Z',
        end_time: 1735689600,
        interval: 'PT1H',
        stop_grace_period: 'PT5M',
        owner_principal_id: 'alice',
        daily_limitation: { daily_start: '09:00', daily_end: '17:30' },
        permission: 21,
        depends_on: ['db'],
      },
      { trusted: true },
    );
    const view = toPublicView(def);
    expect(view).toMatchObject({
      name: 'web',
      secret_env: { TOKEN: '******', KEY: '******' },
      env: { A: '1' },
      enabled: true,
      start_time: Date.UTC(2024, 1, 1) / 1000,
      end_time: 1735689600,
      interval: 3600,
      stop_grace_period: 'PT5M',
      owner_principal_id: 'alice',
      daily_limitation: { daily_start: 9 * 3600, daily_end: 17.5 * 3600 },
      permission: 21,
      depends_on: ['db'],
      register_time: NOW / 1000,
      behavior: { exit: 'standby', exit_code_actions: {} },
    });
    expect(JSON.stringify(view)).not.toContain('hunter2');
  });
  it('is accepted back by parseAppDefinition (GET then PUT)', () => {
    const previous = parse({
      secret_env: { TOKEN: 'hunter2' },
      start_time: 1704067200,
      daily_limitation: { daily_start: '09:00', daily_end: '17:00' },
    });
    const view = { ...toPublicView(previous), pid: undefined, process_uuid: 'x', return_code: 0 };
    const again = parseAppDefinition(view, { now: NOW + 1, previous });
    expect(again).toEqual({ ...previous, register_time: NOW + 1 });
  });
});

describe('serializeApp / deserializeApp', () => {
  const crypter = createSecretCrypter(randomBytes(32));

  it('round-trips every field with secret_env encrypted at rest', () => {
    const def = parse(
      {
        description: 'multi\nline',
        shell: true,
        command: 'echo "a: b"\necho \'#no comment\'',
        env: { A: 'yes', B: '0123', C: '' },
        secret_env: { TOKEN: 'hunter2' },
        metadata: { list: [1, 'two', null], nested: { ok: true } },
        start_time: 1704067200,
        end_time: 1735689600,
        cron_schedule: '*/5 * * * *',
        session_login: true,
        depends_on: ['db', 'cache'],
        docker_image: 'alpine:3',
        stdout_backup_count: 7,
        enabled: false,
        daily_limitation: { daily_start: '22:00', daily_end: '06:00' },
        resource_limit: { memory_mb: 64, memory_virt_mb: 128, cpu_shares: 512 },
        behavior: { exit: 'keepalive', exit_code_actions: { '-9': 'remove', '0': 'standby' } },
        stop_grace_period: 60,
        permission: 31,
        owner_principal_id: 'alice',
      },
      { trusted: true },
    );
    const text = serializeApp(def, crypter);
    expect(text).not.toContain('hunter2');
    expect(text).toMatch(/TOKEN: enc:v1:[A-Za-z0-9+/=]+/);
    expect(deserializeApp(text, crypter)).toEqual(def);
  });

  it('round-trips a definition through the small block writer (no metadata object)', () => {
    const def = parse(
      {
        description: 'true',
        command: 'run --flag "x: y" # not a comment',
        env: { A: 'yes', B: '0123', C: 'a: b', D: '' },
        secret_env: { TOKEN: 'hunter2' },
        metadata: 'plain text: metadata',
        behavior: { exit: 'restart', exit_code_actions: { '-9': 'remove', '0': 'standby' } },
        permission: 31,
        owner_principal_id: 'alice',
      },
      { trusted: true },
    );
    const text = serializeApp(def, crypter);
    expect(text).toMatch(/^name: web\ndescription: "true"\ncommand: "run --flag/);
    expect(text).toMatch(/TOKEN: enc:v1:[A-Za-z0-9+/=]+/);
    expect(deserializeApp(text, crypter)).toEqual(def);
  });

  it('keeps the system flag only for trusted files', () => {
    const def = parse({ system: true }, { trusted: true });
    const text = serializeApp(def, crypter);
    expect(deserializeApp(text, crypter, { trusted: true }).system).toBe(true);
    expect(() => deserializeApp(text, crypter, { file: 'web.yaml' })).toThrow(
      'web.yaml: system: only bundled application files (apps/*.yaml) may set system',
    );
  });

  it('accepts plaintext secret_env in a hand-written file', () => {
    const def = deserializeApp('name: web\ncommand: run\nsecret_env:\n  TOKEN: plain\n', crypter, {
      file: 'web.yaml',
    });
    expect(def.secret_env).toEqual({ TOKEN: 'plain' });
  });

  it.each([
    ['name: web\ncommand: [unclosed\n', /^web\.yaml: not valid YAML: /],
    ['- a\n- b\n', /^web\.yaml: must be a YAML mapping of application fields, got an array$/],
    ['', /^web\.yaml: must be a YAML mapping of application fields, got null$/],
    ['name: web\ncommand: x\ncommand: y\n', /^web\.yaml: not valid YAML: Map keys must be unique/],
    [
      'name: web\ncommand: x\nstatus: maybe\n',
      /^web\.yaml: status: must be 1 \(enabled\) or 0 \(disabled\)$/,
    ],
    ['name: web\ncommand: x\nregister_time: yesterday\n', /^web\.yaml: register_time: must be epoch seconds/],
    [
      'name: web\ncommand: x\nsecret_env:\n  T: enc:v1:AAAA\n',
      /^web\.yaml: secret_env\["T"\]: encrypted value is too short$/,
    ],
    [
      'name: web\ncommand: x\nsecret_env:\n  T: enc:v1:!!!\n',
      /^web\.yaml: secret_env\["T"\]: encrypted value is not valid base64$/,
    ],
  ])('rejects hand-edited garbage %j', (text, message) => {
    let caught: unknown;
    try {
      deserializeApp(text, crypter, { file: 'web.yaml' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SvcError);
    expect((caught as SvcError).code).toBe('invalid_app');
    expect((caught as SvcError).message).toMatch(message);
  });

  it('refuses a value encrypted with another key', () => {
    const text = serializeApp(parse({ secret_env: { T: 'x' } }), createSecretCrypter(randomBytes(32)));
    expect(() => deserializeApp(text, crypter, { file: 'web.yaml' })).toThrow(
      'web.yaml: secret_env["T"]: encrypted value does not decrypt with this secret-master-key (wrong key or corrupted)',
    );
  });

  it('keeps owner and register_time from the stored file', () => {
    const text = serializeApp(parse({ owner_principal_id: 'alice' }, { trusted: true, now: 1234 }), crypter);
    const def = deserializeApp(text, crypter);
    expect(def.owner_principal_id).toBe('alice');
    expect(def.register_time).toBe(1234);
  });
});
