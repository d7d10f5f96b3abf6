// The Registry section and SVC_REGISTRY_URL: valid endpoints, defaults, TLS files, and malformed,
// oversized and hostile values refused with a message naming the source (never the value).
import { describe, expect, it } from 'vitest';
import { clusterConfigOf, parseRegistryUrls, RegistryConfigError } from './registry-config.ts';

const fail = (message: string): Error => new Error(message);

describe('parseRegistryUrls', () => {
  it('accepts comma-separated http(s) endpoints and normalises them', () => {
    expect(parseRegistryUrls('http://127.0.0.1:2379')).toEqual(['http://127.0.0.1:2379']);
    expect(parseRegistryUrls(' https://etcd-1:2379/ , https://[::1]:2379,')).toEqual([
      'https://etcd-1:2379',
      'https://[::1]:2379',
    ]);
  });

  it.each([
    ['', 'no endpoint'],
    [' , ,', 'no endpoint'],
    ['127.0.0.1:2379', 'not a URL'],
    ['ftp://h:1', 'expected http:// or https://'],
    ['javascript:alert(1)', 'expected http:// or https://'],
    ['http://u:secret@h:1', 'credentials in the URL are not supported'],
    ['http://h:1/v3', 'only scheme, host and port'],
    ['http://h:1?x=1', 'only scheme, host and port'],
    ['http://h:1#f', 'only scheme, host and port'],
    ['http://h', 'the port is required'],
    ['http://h:99999', 'not a URL'],
    ['http://a:1,https://b:2', 'mix http:// and https://'],
    ['http://h\u0000x:1', 'not a URL'],
    [`http://${'a'.repeat(5000)}:1`, 'longer than 4096'],
    [Array.from({ length: 33 }, (_, i) => `http://h${i}:1`).join(','), 'more than 32 endpoints'],
  ])('refuses %j (%s)', (value, problem) => {
    expect(() => parseRegistryUrls(value)).toThrow(RegistryConfigError);
    expect(() => parseRegistryUrls(value)).toThrow(problem);
  });

  it('never echoes the value in its message', () => {
    try {
      parseRegistryUrls('http://root:hunter2@h:1');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain('hunter2');
    }
  });
});

describe('clusterConfigOf', () => {
  it('is stand-alone (undefined) without SVC_REGISTRY_URL or Registry.Url', () => {
    expect(clusterConfigOf('/home', {}, {}, fail)).toBeUndefined();
    expect(clusterConfigOf('/home', { Url: null }, {}, fail)).toBeUndefined();
    expect(clusterConfigOf('/home', { Url: '' }, { SVC_REGISTRY_URL: '' }, fail)).toBeUndefined();
  });

  it('gives the defaults of the spec block', () => {
    expect(clusterConfigOf('/home', { Url: 'http://e:2379' }, {}, fail)).toEqual({
      urls: ['http://e:2379'],
      isMainNode: true,
      isWorkerNode: true,
      sessionTtlSeconds: 30,
      enableRegistrySecurity: true,
      svcProxyUrl: undefined,
      tls: undefined,
    });
  });

  it('lets SVC_REGISTRY_URL and SVC_REGISTRY_SESSION_TTL win over the file', () => {
    const config = clusterConfigOf(
      '/home',
      { Url: 'http://file:1', SessionTTL: 10, IsMainNode: false, IsWorkerNode: false },
      { SVC_REGISTRY_URL: 'http://env:2', SVC_REGISTRY_SESSION_TTL: '4' },
      fail,
    )!;
    expect(config.urls).toEqual(['http://env:2']);
    expect(config.sessionTtlSeconds).toBe(4);
    expect(config.isMainNode).toBe(false);
    expect(config.isWorkerNode).toBe(false);
  });

  it('takes Registry.SvcProxyUrl as the origin the node report advertises', () => {
    expect(
      clusterConfigOf('/home', { Url: 'http://e:1', SvcProxyUrl: 'https://Node-A.example:8443/' }, {}, fail)!
        .svcProxyUrl,
    ).toBe('https://node-a.example:8443');
    expect(
      clusterConfigOf('/home', { Url: 'http://e:1', SvcProxyUrl: null }, {}, fail)!.svcProxyUrl,
    ).toBeUndefined();
  });

  it('resolves the TLS files against SVC_HOME for an https registry', () => {
    const config = clusterConfigOf(
      '/home',
      { Url: 'https://e:2379', SSL: { CaFile: 'ssl/etcd-ca.pem', CertFile: '/abs/c.pem', KeyFile: 'k.pem' } },
      {},
      fail,
    )!;
    expect(config.tls).toEqual({
      caFile: '/home/ssl/etcd-ca.pem',
      certFile: '/abs/c.pem',
      keyFile: '/home/k.pem',
    });
    expect(clusterConfigOf('/home', { Url: 'https://e:2379' }, {}, fail)!.tls).toEqual({
      caFile: undefined,
      certFile: undefined,
      keyFile: undefined,
    });
  });

  it.each([
    [
      { Url: 'http://e:1', SSL: { CaFile: 'ca.pem' } },
      {},
      'Registry.SSL is set but Registry.Url is not https://',
    ],
    [{ Url: 'https://e:1', SSL: { CertFile: 'c.pem' } }, {}, 'CertFile and KeyFile go together'],
    [{ Url: 'http://e:1', SessionTTL: 1 }, {}, 'Registry.SessionTTL: at least 2 seconds'],
    [{}, { SVC_REGISTRY_URL: 'http://e:1', SVC_REGISTRY_SESSION_TTL: '0' }, 'SVC_REGISTRY_SESSION_TTL'],
    [{}, { SVC_REGISTRY_URL: 'http://e:1', SVC_REGISTRY_SESSION_TTL: '3s' }, 'SVC_REGISTRY_SESSION_TTL'],
    [{}, { SVC_REGISTRY_URL: 'http://e:1', SVC_REGISTRY_SESSION_TTL: '1e9' }, 'SVC_REGISTRY_SESSION_TTL'],
    [{}, { SVC_REGISTRY_URL: 'gopher://e:1' }, 'SVC_REGISTRY_URL: endpoint 1'],
    [{ Url: 'http://e' }, {}, 'Registry.Url: endpoint 1: the port is required'],
    [{ Url: 'http://e:1', SvcProxyUrl: 'http://node-a:6058' }, {}, 'Registry.SvcProxyUrl: expected https://'],
    [{ Url: 'http://e:1', SvcProxyUrl: 'https://u:p@node-a' }, {}, 'Registry.SvcProxyUrl: credentials'],
    [{ Url: 'http://e:1', SvcProxyUrl: 'https://node-a/x?y' }, {}, 'Registry.SvcProxyUrl: only scheme'],
    [{ Url: 'http://e:1', SvcProxyUrl: 'node-a:6058' }, {}, 'Registry.SvcProxyUrl: '],
  ])('refuses %j %j', (registry, env, message) => {
    expect(() => clusterConfigOf('/home', registry, env, fail)).toThrow(message);
  });
});
