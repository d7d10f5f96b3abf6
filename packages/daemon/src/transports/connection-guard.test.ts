import { describe, expect, it } from 'vitest';
import { ConnectionGuard } from './connection-guard.ts';

describe('ConnectionGuard', () => {
  it('caps per address and in total; a released slot frees room once', () => {
    const guard = new ConnectionGuard({ maxConnections: 3, maxConnectionsPerIp: 2 });
    const a1 = guard.admit('a')!;
    guard.admit('a');
    expect(guard.admit('a')).toBeUndefined();
    guard.admit('b');
    expect(guard.admit('c')).toBeUndefined(); // total
    a1.release();
    a1.release();
    expect(guard.total).toBe(2);
    expect(guard.admit('a')).toBeDefined();
  });

  it('moves a slot to another address only when that address has room, then releases it there', () => {
    const guard = new ConnectionGuard({ maxConnections: 10, maxConnectionsPerIp: 1 });
    const relayed = guard.admit('127.0.0.1')!;
    const other = guard.admit('192.0.2.7')!;
    expect(relayed.move('192.0.2.7')).toBe(false);
    expect(relayed.address).toBe('127.0.0.1');
    other.release();
    expect(relayed.move('192.0.2.7')).toBe(true);
    expect(relayed.address).toBe('192.0.2.7');
    // The loopback slot is free again; the client's is taken.
    expect(guard.admit('127.0.0.1')).toBeDefined();
    expect(guard.admit('192.0.2.7')).toBeUndefined();
    relayed.release();
    expect(relayed.move('198.51.100.1')).toBe(false);
    expect(guard.admit('192.0.2.7')).toBeDefined();
    expect(guard.total).toBe(2);
  });
});
