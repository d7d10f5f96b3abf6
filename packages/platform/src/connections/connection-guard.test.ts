import { describe, expect, it } from 'vitest';
import { ConnectionGuard } from './connection-guard.ts';

/** An established (authenticated) slot: never closed to make room. */
function established(guard: ConnectionGuard, address: string) {
  const slot = guard.admit(address);
  slot?.establish();
  return slot;
}

describe('ConnectionGuard', () => {
  it('caps established connections per address and in total; a released slot frees room once', () => {
    const guard = new ConnectionGuard({ maxConnections: 3, maxConnectionsPerIp: 2 });
    const a1 = established(guard, 'a')!;
    established(guard, 'a');
    expect(guard.admit('a')).toBeUndefined();
    established(guard, 'b');
    expect(guard.admit('c')).toBeUndefined(); // total
    a1.release();
    a1.release();
    expect(guard.total).toBe(2);
    expect(guard.admit('a')).toBeDefined();
  });

  it('makes room by closing the oldest pending connection: of the full address, else of anyone', () => {
    const guard = new ConnectionGuard({ maxConnections: 4, maxConnectionsPerIp: 2 });
    const evicted: string[] = [];
    const a1 = guard.admit('a', () => evicted.push('a1'))!;
    guard.admit('a', () => evicted.push('a2'));
    // The address is full of pending connections: the oldest of them (a1) goes.
    expect(guard.admit('a', () => evicted.push('a3'))).toBeDefined();
    expect(evicted).toEqual(['a1']);
    a1.release(); // its socket's close: already released, counts nothing twice
    expect(guard.total).toBe(2);
    established(guard, 'b');
    guard.admit('c', () => evicted.push('c1'));
    // The total is full: the oldest pending connection of anyone (a2) goes, not the established b.
    expect(guard.admit('d', () => evicted.push('d1'))).toBeDefined();
    expect(evicted).toEqual(['a1', 'a2']);
    expect(guard.total).toBe(4);
  });

  it('moves a slot to another address only when that address has room, then releases it there', () => {
    const guard = new ConnectionGuard({ maxConnections: 10, maxConnectionsPerIp: 1 });
    const relayed = established(guard, '127.0.0.1')!;
    const other = established(guard, '192.0.2.7')!;
    expect(relayed.move('192.0.2.7')).toBe(false);
    expect(relayed.address).toBe('127.0.0.1');
    other.release();
    expect(relayed.move('192.0.2.7')).toBe(true);
    expect(relayed.address).toBe('192.0.2.7');
    // The loopback slot is free again; the client's is taken.
    expect(established(guard, '127.0.0.1')).toBeDefined();
    expect(guard.admit('192.0.2.7')).toBeUndefined();
    relayed.release();
    expect(relayed.move('198.51.100.1')).toBe(false);
    expect(guard.admit('192.0.2.7')).toBeDefined();
    expect(guard.total).toBe(2);
  });
});
