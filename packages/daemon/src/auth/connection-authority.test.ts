import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConnectionAuthority, isExpired, type RevocableConnection } from './connection-authority.ts';

function fakeConnection(id: string): RevocableConnection & { fireClose(): void } {
  const callbacks: (() => void)[] = [];
  return {
    id,
    close: () => undefined,
    onClose: (callback) => callbacks.push(callback),
    fireClose: () => callbacks.splice(0).forEach((c) => c()),
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('isExpired', () => {
  it('is true from the exp second on', () => {
    expect(isExpired(100, 99_999)).toBe(false);
    expect(isExpired(100, 100_000)).toBe(true);
  });
});

describe('ConnectionAuthority', () => {
  const setup = () => {
    const revoked: [string, string][] = [];
    const authority = new ConnectionAuthority({ revoke: (c, reason) => revoked.push([c.id, reason]) });
    return { authority, revoked };
  };

  it('revokes a connection when the latest token it presented expires', () => {
    const { authority, revoked } = setup();
    const c = fakeConnection('c1');
    authority.authenticated(c, 'alice', 1_000 + 30); // exp in 30 s
    vi.advanceTimersByTime(29_999);
    expect(revoked).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(revoked).toEqual([['c1', 'token_expired']]);
    expect(authority.size).toBe(0);
  });

  it('a fresher token extends the connection; an older one does not shorten it', () => {
    const { authority, revoked } = setup();
    const c = fakeConnection('c1');
    authority.authenticated(c, 'alice', 1_010);
    authority.authenticated(c, 'alice', 1_100);
    authority.authenticated(c, 'alice', 1_020);
    vi.advanceTimersByTime(60_000);
    expect(revoked).toEqual([]);
    vi.advanceTimersByTime(40_000);
    expect(revoked).toEqual([['c1', 'token_expired']]);
  });

  it('revokes every connection of a tombstoned principal and only those', () => {
    const { authority, revoked } = setup();
    authority.authenticated(fakeConnection('a1'), 'alice', 2_000);
    authority.authenticated(fakeConnection('a2'), 'alice', 2_000);
    authority.authenticated(fakeConnection('b1'), 'bob', 2_000);
    authority.revokePrincipal('alice');
    expect(revoked.sort()).toEqual([
      ['a1', 'principal_tombstoned'],
      ['a2', 'principal_tombstoned'],
    ]);
    expect(authority.size).toBe(1);
    vi.advanceTimersByTime(1_000_000);
    expect(revoked.map(([id]) => id)).toContain('b1');
    expect(revoked).toHaveLength(3); // a1 and a2 are not revoked a second time at their expiry
  });

  it('forgets a connection that closed, and handles deadlines beyond the timer limit', () => {
    const { authority, revoked } = setup();
    const c = fakeConnection('c1');
    authority.authenticated(c, 'alice', 1_000 + 60 * 24 * 3600); // 60 days
    c.fireClose();
    expect(authority.size).toBe(0);
    const far = fakeConnection('far');
    authority.authenticated(far, 'bob', 1_000 + 40 * 24 * 3600); // 40 days > 2^31-1 ms
    vi.advanceTimersByTime(30 * 24 * 3600 * 1000);
    expect(revoked).toEqual([]);
    vi.advanceTimersByTime(10 * 24 * 3600 * 1000);
    expect(revoked).toEqual([['far', 'token_expired']]);
  });

  it('close() stops every timer', () => {
    const { authority, revoked } = setup();
    authority.authenticated(fakeConnection('c1'), 'alice', 1_001);
    authority.close();
    vi.advanceTimersByTime(10_000);
    expect(revoked).toEqual([]);
  });
});
