import { describe, expect, it } from 'vitest';
import { SignInThrottle } from './sign-in-throttle.ts';

function clock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

describe('SignInThrottle', () => {
  it('locks a user after 5 failures within 15 minutes, for 15 minutes, whatever the address', () => {
    const c = clock();
    const throttle = new SignInThrottle({ now: c.now });
    for (let i = 0; i < 4; i += 1) throttle.failed('id:alice', `10.0.0.${i}`);
    expect(throttle.check('id:alice', '10.0.0.9')).toEqual({ allowed: true });
    throttle.failed('id:alice', '10.0.0.5');
    const locked = throttle.check('id:alice', '10.0.0.9');
    expect(locked).toEqual({ allowed: false, scope: 'user', retryAfterMs: 15 * 60_000 });
    expect(throttle.check('id:bob', '10.0.0.9')).toEqual({ allowed: true });
    c.advance(15 * 60_000 - 1);
    expect(throttle.check('id:alice', '10.0.0.9').allowed).toBe(false);
    c.advance(1);
    expect(throttle.check('id:alice', '10.0.0.9').allowed).toBe(true);
  });

  it('failures older than the window do not add up; a success clears the user count', () => {
    const c = clock();
    const throttle = new SignInThrottle({ now: c.now });
    for (let i = 0; i < 4; i += 1) throttle.failed('id:alice', 'a');
    c.advance(15 * 60_000);
    for (let i = 0; i < 4; i += 1) throttle.failed('id:alice', 'b');
    expect(throttle.check('id:alice', 'c').allowed).toBe(true);
    throttle.succeeded('id:alice');
    for (let i = 0; i < 4; i += 1) throttle.failed('id:alice', 'd');
    expect(throttle.check('id:alice', 'c').allowed).toBe(true);
  });

  it('locks an address after 20 failures over any users', () => {
    const throttle = new SignInThrottle({ now: clock().now });
    for (let i = 0; i < 20; i += 1) throttle.failed(`login:user${i}`, '192.0.2.1');
    expect(throttle.check('login:someone-else', '192.0.2.1')).toMatchObject({
      allowed: false,
      scope: 'address',
    });
    expect(throttle.check('login:someone-else', '192.0.2.2').allowed).toBe(true);
  });

  it("an administrator's unlock clears the user's lock and the address locks, not other users'", () => {
    const throttle = new SignInThrottle({ now: clock().now });
    for (let i = 0; i < 5; i += 1) throttle.failed('id:alice', `198.51.100.${i % 2}`);
    for (let i = 0; i < 5; i += 1) throttle.failed('id:bob', '198.51.100.7');
    for (let i = 0; i < 20; i += 1) throttle.failed(`login:x${i}`, '198.51.100.9');
    expect(throttle.locks()).toHaveLength(3);
    expect(throttle.clearUsers(['id:alice', 'login:alice@example.org'])).toBe(2);
    expect(throttle.check('id:alice', '198.51.100.9').allowed).toBe(true);
    expect(throttle.check('id:bob', '198.51.100.1').allowed).toBe(false);
    expect(throttle.clearAll()).toBe(1);
  });

  it('remembers a bounded number of keys (a flood of logins and addresses)', () => {
    const throttle = new SignInThrottle({ now: clock().now, limits: { maxEntries: 100 } });
    for (let i = 0; i < 10_000; i += 1) throttle.failed(`login:${i}`, `addr-${i}`);
    for (let i = 0; i < 5; i += 1) throttle.failed('id:victim', 'x');
    expect(throttle.check('id:victim', 'y').allowed).toBe(false);
    expect(throttle.locks().length).toBeLessThanOrEqual(100);
  });
});
