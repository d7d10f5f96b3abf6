import { describe, expect, it } from 'vitest';
import { configChanges, configFields, placeError, valueOf } from './config-edit.ts';

const CONFIG = {
  BaseConfig: { Description: '', LogLevel: 'INFO', DisableExecUser: false, FileTransferRoots: ['/tmp'] },
  REST: { RestPort: 0, MetricsPort: null, Limits: { MaxBodyBytes: 16, HeadersTimeoutMs: 10 }, SSL: null },
  Registry: { SSL: { CaFile: 'ca.pem' } },
  Labels: { zone: 'east' },
};

describe('config form', () => {
  it('lists every leaf with a kind taken from its value, labels left to their own view', () => {
    const fields = configFields(CONFIG);
    expect(fields.map((f) => [f.path, f.kind, f.text])).toEqual([
      ['BaseConfig.Description', 'text', ''],
      ['BaseConfig.LogLevel', 'text', 'INFO'],
      ['BaseConfig.DisableExecUser', 'boolean', 'false'],
      ['BaseConfig.FileTransferRoots', 'lines', '/tmp'],
      ['REST.RestPort', 'number', '0'],
      ['REST.MetricsPort', 'nullable', ''],
      ['REST.Limits.MaxBodyBytes', 'number', '16'],
      ['REST.Limits.HeadersTimeoutMs', 'number', '10'],
      ['REST.SSL', 'nullable', ''],
      ['Registry.SSL.CaFile', 'text', 'ca.pem'],
    ]);
    expect(fields.find((f) => f.path === 'REST.Limits.MaxBodyBytes')?.label).toBe('Limits › MaxBodyBytes');
  });

  it('sends only what changed, nested as the config is', () => {
    const fields = configFields(CONFIG);
    expect(configChanges(fields, { 'BaseConfig.LogLevel': 'INFO' })).toBeUndefined();
    expect(
      configChanges(fields, {
        'BaseConfig.LogLevel': 'DEBUG',
        'REST.Limits.MaxBodyBytes': ' 32 ',
        'REST.MetricsPort': '9100',
        'BaseConfig.FileTransferRoots': '/a\n\n /b \n',
        'BaseConfig.DisableExecUser': 'true',
      }),
    ).toEqual({
      BaseConfig: { LogLevel: 'DEBUG', FileTransferRoots: ['/a', '/b'], DisableExecUser: true },
      REST: { Limits: { MaxBodyBytes: 32 }, MetricsPort: 9100 },
    });
  });

  it('sends malformed numbers and JSON as typed, so the daemon names the field', () => {
    expect(valueOf('number', '12abc')).toBe('12abc');
    expect(valueOf('number', '')).toBe('');
    expect(valueOf('number', 'Infinity')).toBe('Infinity');
    expect(valueOf('json', '{"a":')).toBe('{"a":');
    expect(valueOf('nullable', '  ')).toBeNull();
    expect(valueOf('nullable', '99999999999999999999')).toBe('99999999999999999999');
  });

  it('places the daemon message beside its field or its nearest field ancestor', () => {
    const paths = new Set(configFields(CONFIG).map((f) => f.path));
    expect(placeError('BaseConfig.LogLevel: must be one of DEBUG, INFO', paths)).toEqual({
      path: 'BaseConfig.LogLevel',
      text: 'must be one of DEBUG, INFO',
    });
    expect(placeError('REST.SSL.CertFile: missing', paths)).toEqual({ path: 'REST.SSL', text: 'missing' });
    expect(placeError('BaseConfig.FileTransferRoots[3]: not absolute', paths).path).toBe(
      'BaseConfig.FileTransferRoots',
    );
    expect(placeError('(root): Unrecognized key: "Nope"', paths)).toEqual({
      path: undefined,
      text: '(root): Unrecognized key: "Nope"',
    });
    expect(placeError('Nope.x: <script>', paths).path).toBeUndefined();
    expect(placeError('x'.repeat(100_000), paths).path).toBeUndefined();
  });
});
