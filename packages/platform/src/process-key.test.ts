import { describe, expect, it } from 'vitest';
import { isForwarded, isLoopbackAddress } from './process-key.ts';

describe('isLoopbackAddress', () => {
  it.each([
    '127.0.0.1',
    '127.5.6.7',
    '::1',
    '::ffff:127.0.0.1',
    '::FFFF:127.1.2.3',
    '::ffff:7f00:1',
    '0:0:0:0:0:0:0:1',
  ])('%s is loopback', (address) => expect(isLoopbackAddress(address)).toBe(true));
  it.each([
    '10.0.0.1',
    '192.168.1.2',
    '128.0.0.1',
    '::ffff:10.0.0.1',
    '::2',
    'fe80::1',
    'unknown',
    '',
    '1127.0.0.1',
  ])('%s is not loopback', (address) => expect(isLoopbackAddress(address)).toBe(false));
});

describe('isForwarded', () => {
  it('sees X-Forwarded-For and Forwarded, nothing else', () => {
    expect(isForwarded({ 'x-forwarded-for': '203.0.113.9' })).toBe(true);
    expect(isForwarded({ forwarded: 'for=203.0.113.9' })).toBe(true);
    expect(isForwarded({ 'x-real-ip': '203.0.113.9' })).toBe(false);
  });
});
