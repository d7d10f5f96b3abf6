import { describe, expect, it } from 'vitest';
import { OVERFLOW_PEER, PeerLogLimit } from './peer-log-limit.ts';

function limit(perWindow = 3, maxPeers = 2) {
  const clock = { now: 0 };
  return { clock, limit: new PeerLogLimit({ perWindow, windowMs: 1000, maxPeers, now: () => clock.now }) };
}

describe('PeerLogLimit', () => {
  it('writes perWindow lines of a peer, counts the rest, and reports them when the next window starts', () => {
    const { clock, limit: l } = limit();
    const writes = Array.from({ length: 10 }, () => l.admit('10.0.0.1').write);
    expect(writes.filter(Boolean)).toHaveLength(3);
    expect(l.admit('10.0.0.2').write).toBe(true); // another peer is not affected
    clock.now = 1000;
    expect(l.admit('10.0.0.1')).toEqual({ write: true, summary: { peer: '10.0.0.1', count: 7 } });
    expect(l.admit('10.0.0.1').summary).toBeUndefined();
  });

  it('sweep reports and forgets ended windows only', () => {
    const { clock, limit: l } = limit(1);
    l.admit('a');
    l.admit('a');
    l.admit('b');
    clock.now = 999;
    expect(l.sweep()).toEqual([]);
    clock.now = 1000;
    expect(l.sweep()).toEqual([{ peer: 'a', count: 1 }]);
    expect(l.peers).toBe(0);
  });

  it('puts peers beyond maxPeers in one shared bucket (a flood of addresses cannot grow the map)', () => {
    const { limit: l } = limit(2, 2);
    l.admit('a');
    l.admit('b');
    const hostile = Array.from({ length: 1000 }, (_, i) => l.admit(`x${i}`).write);
    expect(hostile.filter(Boolean)).toHaveLength(2);
    expect(l.peers).toBe(3);
    expect(l.sweep()).toEqual([]);
    expect(OVERFLOW_PEER).toBe('other-peers');
  });
});
