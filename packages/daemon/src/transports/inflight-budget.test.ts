import { describe, expect, it } from 'vitest';
import { InflightBudget, type Reservation } from './inflight-budget.ts';

const MiB = 1024 * 1024;
const limits = { perConnection: 64 * MiB, perPrincipal: 128 * MiB, perAddress: 16 * MiB, total: 256 * MiB };

describe('InflightBudget', () => {
  it('gives the ceiling of an owner: the smallest cap that applies to it', () => {
    const budget = new InflightBudget(limits);
    expect(budget.ceiling({ connection: 'c', principal: 'p', address: 'a' })).toBe(64 * MiB);
    expect(budget.ceiling({ principal: 'p', address: 'a' })).toBe(128 * MiB);
    expect(budget.ceiling({ connection: 'c', address: 'a' })).toBe(16 * MiB);
  });

  it('counts a principal across connections, and an address only for bodies without a principal', () => {
    const budget = new InflightBudget(limits);
    const one = budget.tryReserve({ connection: 'c1', principal: 'p', address: 'a' }, 60 * MiB)!;
    budget.tryReserve({ connection: 'c2', principal: 'p', address: 'a' }, 60 * MiB);
    expect(budget.tryReserve({ connection: 'c3', principal: 'p', address: 'a' }, 60 * MiB)).toBeUndefined();
    // Another principal, and anonymous bodies of the same address, are not affected.
    expect(budget.tryReserve({ connection: 'c4', principal: 'q', address: 'a' }, 60 * MiB)).toBeDefined();
    expect(budget.tryReserve({ connection: 'c5', address: 'a' }, MiB)).toBeDefined();
    expect(budget.usedBy({ principal: 'p', address: 'a' })).toBe(120 * MiB);
    one.release();
    one.release();
    expect(budget.usedBy({ principal: 'p', address: 'a' })).toBe(60 * MiB);
  });

  it('grants a waiter once bytes are released, and never holds up another owner meanwhile', () => {
    const budget = new InflightBudget(limits);
    const held = budget.tryReserve({ principal: 'p', address: 'a' }, 100 * MiB)!;
    let granted: Reservation | undefined;
    budget.reserve({ principal: 'p', address: 'a' }, 50 * MiB, (r) => (granted = r));
    expect(granted).toBeUndefined();
    let other: Reservation | undefined;
    budget.reserve({ principal: 'q', address: 'b' }, 50 * MiB, (r) => (other = r));
    expect(other?.bytes).toBe(50 * MiB);
    held.release();
    expect(granted?.bytes).toBe(50 * MiB);
    // A cancelled waiter is never granted.
    const big = budget.tryReserve({ principal: 'p', address: 'a' }, 70 * MiB)!;
    let late: Reservation | undefined;
    const cancel = budget.reserve({ principal: 'p', address: 'a' }, 20 * MiB, (r) => (late = r));
    cancel();
    big.release();
    expect(late).toBeUndefined();
  });
});
