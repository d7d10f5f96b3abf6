import { describe, expect, it } from 'vitest';
import { parseTargetHost } from '../forwarding/targets.ts';
import { endpointTargets } from './node-targets.ts';

const provider = endpointTargets(
  () =>
    new Map([
      ['Node-A', { tcp_host: '10.0.0.5', tcp_port: 7001 }],
      ['node-b', { tcp_host: 'fd00::1', tcp_port: 7002 }],
    ]),
);
const resolve = (header: string) => provider.resolve(parseTargetHost(header));

describe('registered nodes as forward targets', () => {
  it('resolves a host name (any or no port) to the registered TCP address', () => {
    expect(resolve('node-a')).toEqual({ host: '10.0.0.5', port: 7001, key: '10.0.0.5:7001' });
    expect(resolve('NODE-A:9')).toEqual({ host: '10.0.0.5', port: 7001, key: '10.0.0.5:7001' });
    expect(resolve('node-b')).toEqual({ host: 'fd00::1', port: 7002, key: '[fd00::1]:7002' });
  });
  it('resolves a registered address only with its registered port', () => {
    expect(resolve('10.0.0.5:7001')?.port).toBe(7001);
    expect(resolve('[fd00::1]:7002')?.host).toBe('fd00::1');
    expect(resolve('10.0.0.5:7002')).toBeUndefined();
    expect(resolve('10.0.0.5')).toBeUndefined();
  });
  it('knows nothing else', () => {
    for (const header of ['node-c', '10.0.0.6:7001', 'node-a.example', 'localhost:7001'])
      expect(resolve(header), header).toBeUndefined();
  });
});
