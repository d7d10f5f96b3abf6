import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ConfigDocumentError,
  fromFlat,
  keysOf,
  mergeConfigDocuments,
  parseConfigDocument,
  parseConfigFileDocument,
} from './config-schema.ts';

describe('parseConfigDocument (the sectioned form)', () => {
  it('accepts App Mesh 3.0 section names and upper-cases the log level', () => {
    expect(
      parseConfigDocument({
        BaseConfig: { LogLevel: 'debug', DefaultExecUser: 'svc-runner', DisableExecUser: false },
        REST: { RestPort: 7000, Limits: { MaxBodyBytes: 4096 } },
        Registry: { IsMainNode: true, SessionTTL: 30 },
        Labels: { zone: 'a' },
      }),
    ).toEqual({
      BaseConfig: { LogLevel: 'DEBUG', DefaultExecUser: 'svc-runner', DisableExecUser: false },
      REST: { RestPort: 7000, Limits: { MaxBodyBytes: 4096 } },
      Registry: { IsMainNode: true, SessionTTL: 30 },
      Labels: { zone: 'a' },
    });
  });

  it.each([
    [{ BaseConfig: { LogLevel: 'LOUD' } }, 'BaseConfig.LogLevel'],
    [{ BaseConfig: { LogLevl: 'DEBUG' } }, 'BaseConfig'],
    [{ Base: {} }, '(root)'],
    [{ REST: { RestPort: 70000 } }, 'REST.RestPort'],
    [{ REST: { Limits: { MaxConections: 5 } } }, 'REST.Limits'],
    [{ BaseConfig: { PosixTimezone: 'Mars/Olympus' } }, 'BaseConfig.PosixTimezone'],
    [{ BaseConfig: { DefaultExecUser: 'root; rm -rf /' } }, 'BaseConfig.DefaultExecUser'],
    [{ BaseConfig: { DisableExecUser: 'yes' } }, 'BaseConfig.DisableExecUser'],
    [{ Labels: { 'bad key': 'x' } }, 'Labels.bad key'],
    [{ Labels: { k: 'x'.repeat(1025) } }, 'Labels.k'],
    [{ BaseConfig: { Description: 'd'.repeat(1025) } }, 'BaseConfig.Description'],
    [{ BaseConfig: { ScheduleIntervalSeconds: 0 } }, 'BaseConfig.ScheduleIntervalSeconds'],
  ])('refuses a bad document (case %#), naming %1$s', (input, path) => {
    let error: unknown;
    try {
      parseConfigDocument(input);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigDocumentError);
    expect((error as ConfigDocumentError).path).toBe(path);
  });

  it('never throws anything but ConfigDocumentError on hostile input', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        try {
          parseConfigFileDocument(value);
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigDocumentError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('the earlier flat file shape', () => {
  it('is translated to sections', () => {
    expect(
      parseConfigFileDocument({
        log_level: 'debug',
        rest_port: 0,
        limits: { max_connections: 5, request_timeout_ms: 1000 },
        tls: { cert_file: 'c.pem', key_file: 'k.pem' },
        oidc_issuer: 'https://issuer.example',
        registry_url: null,
        labels: { zone: 'a' },
        stop_grace_seconds: 2,
      }),
    ).toEqual({
      BaseConfig: { LogLevel: 'DEBUG', StopGraceSeconds: 2 },
      REST: {
        RestPort: 0,
        SSL: { CertFile: 'c.pem', KeyFile: 'k.pem' },
        Limits: { MaxConnections: 5, RequestTimeoutMs: 1000 },
      },
      Auth: { Issuer: 'https://issuer.example' },
      Registry: { Url: null },
      Labels: { zone: 'a' },
    });
    expect(fromFlat({})).toEqual({});
  });

  it('keeps naming flat keys in its errors, and a mix of both shapes is refused', () => {
    expect(() => parseConfigFileDocument({ rest_prot: 1 })).toThrow(/rest_prot/);
    expect(() => parseConfigFileDocument({ BaseConfig: {}, log_level: 'debug' })).toThrow(/log_level/);
  });
});

describe('mergeConfigDocuments and keysOf', () => {
  it('merges section by section and limits key by key; Labels replace', () => {
    const merged = mergeConfigDocuments(
      {
        BaseConfig: { LogLevel: 'INFO', Description: 'a' },
        REST: { Limits: { MaxBodyBytes: 2048 } },
        Labels: { a: '1' },
      },
      { BaseConfig: { LogLevel: 'DEBUG' }, REST: { Limits: { MaxConnections: 3 } }, Labels: { b: '2' } },
    );
    expect(merged).toEqual({
      BaseConfig: { LogLevel: 'DEBUG', Description: 'a' },
      REST: { Limits: { MaxBodyBytes: 2048, MaxConnections: 3 } },
      Labels: { b: '2' },
    });
    expect(keysOf(merged).sort()).toEqual([
      'BaseConfig.Description',
      'BaseConfig.LogLevel',
      'Labels',
      'REST.Limits.MaxBodyBytes',
      'REST.Limits.MaxConnections',
    ]);
  });
});
