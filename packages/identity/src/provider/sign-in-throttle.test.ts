import { describe, expect, it } from 'vitest';
import { addressBucket, DEFAULT_THROTTLE_LIMITS, SignInThrottle } from './sign-in-throttle.ts';

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

/** Attempts (each one failing while allowed) until the first refusal; returns how many were checked. */
function failUntilRefused(throttle: SignInThrottle, user: string, address: string, cap = 100): number {
  for (let checked = 0; checked < cap; checked += 1) {
    if (!throttle.check(user, address).allowed) return checked;
    throttle.failed(user, address);
  }
  return cap;
}

describe('SignInThrottle (issue 25 M5: waits per place, never an account lock)', () => {
  it('documents its defaults', () => {
    expect(DEFAULT_THROTTLE_LIMITS).toEqual({
      userAddressFailures: 5,
      addressFailures: 20,
      userFailures: 20,
      baseDelayMs: 1000,
      maxDelayMs: 15 * 60_000,
      forgetMs: 60 * 60_000,
      maxEntries: 10_000,
    });
  });

  it('5 failures of a user from one address make the next attempt from there wait 1 s, doubling', () => {
    const c = clock();
    const throttle = new SignInThrottle({ now: c.now });
    expect(failUntilRefused(throttle, 'id:alice', '203.0.113.1')).toBe(5);
    expect(throttle.check('id:alice', '203.0.113.1')).toEqual({
      allowed: false,
      scope: 'user',
      retryAfterMs: 1000,
    });
    // The real user, anywhere else, is not refused; nor is anyone else at that address.
    expect(throttle.check('id:alice', '198.51.100.1')).toEqual({ allowed: true });
    expect(throttle.check('id:bob', '203.0.113.1')).toEqual({ allowed: true });
    const waits: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      const verdict = throttle.check('id:alice', '203.0.113.1');
      if (verdict.allowed) throw new Error('expected a wait');
      waits.push(verdict.retryAfterMs);
      c.advance(verdict.retryAfterMs);
      expect(throttle.check('id:alice', '203.0.113.1').allowed).toBe(true);
      throttle.failed('id:alice', '203.0.113.1');
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900].map((s) => s * 1000));
  });

  it("a success from an address ends that address's count for the user; refused attempts are not counted", () => {
    const c = clock();
    const throttle = new SignInThrottle({ now: c.now });
    for (let i = 0; i < 5; i += 1) throttle.failed('id:alice', 'a');
    expect(throttle.check('id:alice', 'a').allowed).toBe(false);
    c.advance(1000);
    throttle.succeeded('id:alice', 'a');
    expect(failUntilRefused(throttle, 'id:alice', 'a')).toBe(5);
  });

  it('counts are forgotten an hour after the last failure', () => {
    const c = clock();
    const throttle = new SignInThrottle({ now: c.now });
    for (let i = 0; i < 9; i += 1) {
      c.advance(throttle.check('id:alice', 'a').allowed ? 0 : 16_000);
      throttle.failed('id:alice', 'a');
    }
    c.advance(60 * 60_000);
    expect(failUntilRefused(throttle, 'id:alice', 'a')).toBe(5);
  });

  it('20 failures from one address over any users make it wait, for every user', () => {
    const throttle = new SignInThrottle({ now: clock().now });
    for (let i = 0; i < 20; i += 1) throttle.failed(`login:user${i}`, '192.0.2.1');
    expect(throttle.check('login:someone-else', '192.0.2.1')).toEqual({
      allowed: false,
      scope: 'address',
      retryAfterMs: 1000,
    });
    expect(throttle.check('login:someone-else', '192.0.2.2').allowed).toBe(true);
  });

  it('a user guessed from many addresses: past 20 failures each address waits from its first failure', () => {
    const c = clock();
    const throttle = new SignInThrottle({ now: c.now });
    for (let i = 0; i < 20; i += 1) throttle.failed('id:admin', `10.0.${i}.1`);
    // The 20th address already waits after its one failure; the 21st after its first.
    expect(throttle.check('id:admin', '10.0.19.1')).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    expect(throttle.check('id:admin', '10.0.0.1').allowed).toBe(true);
    throttle.failed('id:admin', '10.0.77.1');
    expect(throttle.check('id:admin', '10.0.77.1')).toMatchObject({ allowed: false, retryAfterMs: 2000 });
    // The user's rate: each further failure of the user doubles the first wait of the next address.
    for (let i = 0; i < 8; i += 1) throttle.failed('id:admin', `10.1.${i}.1`);
    expect(throttle.check('id:admin', '10.1.7.1')).toMatchObject({ allowed: false, retryAfterMs: 512_000 });
    throttle.failed('id:admin', '10.2.0.1');
    expect(throttle.check('id:admin', '10.2.0.1')).toMatchObject({ allowed: false, retryAfterMs: 900_000 });
    // Never the real user at an address that has not failed.
    expect(throttle.check('id:admin', '10.9.9.9')).toEqual({ allowed: true });
    throttle.succeeded('id:admin', '10.9.9.9');
  });

  it('counts IPv6 per /64 and IPv4 per address', () => {
    expect(addressBucket('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8:1:2::ffff')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
    expect(addressBucket('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
    expect(addressBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressBucket('192.0.2.1')).toBe('192.0.2.1');
    const throttle = new SignInThrottle({ now: clock().now });
    for (let i = 0; i < 5; i += 1) throttle.failed('id:alice', `2001:db8:1:2::${i + 1}`);
    expect(throttle.check('id:alice', '2001:db8:1:2:ffff::9').allowed).toBe(false);
    expect(throttle.check('id:alice', '2001:db8:1:3::1').allowed).toBe(true);
  });

  it("an administrator's unlock clears the user's counts and every address's, not other users'", () => {
    const throttle = new SignInThrottle({ now: clock().now });
    for (let i = 0; i < 5; i += 1) throttle.failed('id:alice', '198.51.100.1');
    for (let i = 0; i < 5; i += 1) throttle.failed('id:bob', '198.51.100.7');
    for (let i = 0; i < 20; i += 1) throttle.failed(`login:x${i}`, '198.51.100.9');
    expect(throttle.locks()).toHaveLength(3);
    expect(throttle.clearUsers(['id:alice', 'login:alice@example.org'])).toBe(2);
    expect(throttle.check('id:alice', '198.51.100.1').allowed).toBe(true);
    expect(throttle.check('id:alice', '198.51.100.9').allowed).toBe(true);
    expect(throttle.check('id:bob', '198.51.100.7').allowed).toBe(false);
    expect(throttle.clearAll()).toBe(1);
  });

  it('a user key that is a prefix of another is not cleared with it', () => {
    const throttle = new SignInThrottle({ now: clock().now });
    for (let i = 0; i < 5; i += 1) throttle.failed('login:al', 'ice');
    throttle.clearUsers(['login:alice']);
    expect(throttle.check('login:al', 'ice').allowed).toBe(false);
  });

  it('remembers a bounded number of counts (a flood of logins and addresses)', () => {
    const throttle = new SignInThrottle({ now: clock().now, limits: { maxEntries: 100 } });
    for (let i = 0; i < 10_000; i += 1) throttle.failed(`login:${i}`, `addr-${i}`);
    for (let i = 0; i < 5; i += 1) throttle.failed('id:victim', 'x');
    expect(throttle.check('id:victim', 'x').allowed).toBe(false);
    expect(throttle.locks().length).toBeLessThanOrEqual(100);
  });
});
