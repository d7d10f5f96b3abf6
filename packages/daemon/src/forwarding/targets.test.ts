import { describe, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { AllowedTargets, isSelfTarget, parseTargetHost, staticTargets, targetKey } from './targets.ts';

describe('parseTargetHost', () => {
  it.each([
    ['node-b', { host: 'node-b', port: 6059 }],
    ['Node-B.example.com:7000', { host: 'node-b.example.com', port: 7000 }],
    ['127.0.0.1:41234', { host: '127.0.0.1', port: 41234 }],
    ['[::1]:6059', { host: '::1', port: 6059 }],
    ['[fe80::1]', { host: 'fe80::1', port: 6059 }],
    ['::1', { host: '::1', port: 6059 }],
    [' node-b ', { host: 'node-b', port: 6059 }],
  ])('%s', (value, expected) => {
    expect(parseTargetHost(value)).toEqual(expected);
  });

  it.each([
    '',
    'bad host',
    'node-b:',
    'node-b:0',
    'node-b:65536',
    'node-b:x',
    'a/b',
    '[node-b]:1',
    'http://x',
    '-x',
  ])('refuses %j with invalid_target_host', (value) => {
    expect(() => parseTargetHost(value)).toThrow(SvcError);
    try {
      parseTargetHost(value);
    } catch (error) {
      expect((error as SvcError).code).toBe('invalid_target_host');
    }
  });

  it('quotes only a bounded prefix of the value in the message', () => {
    const long = 'x'.repeat(500) + '!';
    expect(() => parseTargetHost(long)).toThrow(/^X-Target-Host "x{64}" is not/);
  });
});

describe('allowed targets', () => {
  it('the static list allows exactly its entries (default port 6059), read live', () => {
    let list = ['node-b', '10.0.0.2:7000', 'not a target'];
    const provider = staticTargets(() => list);
    expect(provider.resolve(parseTargetHost('node-b:6059'))).toEqual({
      host: 'node-b',
      port: 6059,
      key: 'node-b:6059',
    });
    expect(provider.resolve(parseTargetHost('NODE-B'))?.key).toBe('node-b:6059');
    expect(provider.resolve(parseTargetHost('node-b:6060'))).toBeUndefined();
    expect(provider.resolve(parseTargetHost('10.0.0.2:7000'))?.key).toBe('10.0.0.2:7000');
    expect(provider.resolve(parseTargetHost('10.0.0.2'))).toBeUndefined();
    list = ['node-c'];
    expect(provider.resolve(parseTargetHost('node-b'))).toBeUndefined();
    expect(provider.resolve(parseTargetHost('node-c'))?.key).toBe('node-c:6059');
  });

  it('an empty list allows nothing; a provider added later (cluster nodes) is consulted until removed', () => {
    const targets = new AllowedTargets([staticTargets(() => [])]);
    const node = parseTargetHost('node-z');
    expect(targets.resolve(node)).toBeUndefined();
    const remove = targets.addProvider({
      resolve: (t) => (t.host === 'node-z' ? { host: '10.1.1.1', port: 6059, key: targetKey(t) } : undefined),
    });
    expect(targets.resolve(node)).toEqual({ host: '10.1.1.1', port: 6059, key: 'node-z:6059' });
    remove();
    expect(targets.resolve(node)).toBeUndefined();
  });

  it('targetKey brackets IPv6', () => {
    expect(targetKey({ host: '::1', port: 1 })).toBe('[::1]:1');
  });
});

describe('isSelfTarget', () => {
  const self = { hostName: 'Node-A', listenAddress: '127.0.0.1', tcpPort: () => 41000 };
  it.each([
    ['node-a', true],
    ['node-a:1234', true],
    ['127.0.0.1:41000', true],
    ['localhost:41000', true],
    ['127.0.0.1:41001', false],
    ['node-b', false],
    ['10.0.0.1:41000', false],
  ])('%s → %s', (value, expected) => {
    expect(isSelfTarget(parseTargetHost(value), self)).toBe(expected);
  });

  it('a node listening on every address is its own loopback too', () => {
    const any = { hostName: 'a', listenAddress: '0.0.0.0', tcpPort: () => 6059 };
    expect(isSelfTarget(parseTargetHost('127.0.0.1'), any)).toBe(true);
    expect(isSelfTarget(parseTargetHost('10.0.0.9'), any)).toBe(false);
  });
});
