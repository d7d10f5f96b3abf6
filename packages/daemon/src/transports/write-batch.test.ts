import { describe, expect, it } from 'vitest';
import { turnWriteBatch } from './write-batch.ts';

describe('turnWriteBatch', () => {
  it('corks once per event-loop turn and uncorks in the check phase', async () => {
    const calls: string[] = [];
    const hold = turnWriteBatch({
      cork: () => void calls.push('cork'),
      uncork: () => void calls.push('uncork'),
    });
    hold();
    hold();
    await Promise.resolve(); // microtasks of the same turn do not release it
    hold();
    expect(calls).toEqual(['cork']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cork', 'uncork']);
    hold();
    expect(calls).toEqual(['cork', 'uncork', 'cork']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['cork', 'uncork', 'cork', 'uncork']);
  });
});
