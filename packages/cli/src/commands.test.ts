import { describe, expect, it } from 'vitest';
import type { Context } from './commands.ts';
import { definition } from './commands.ts';

/** Only `values` is read by `definition` when no `-f` file is given. */
const ctx = (values: Record<string, unknown>): Context => ({ values }) as unknown as Context;

describe('svc add: flags to an App Mesh 3.0 definition', () => {
  it.each([
    ['60', { interval: '60' }],
    ['PT5M', { interval: 'PT5M' }],
    ['*/5 * * * *', { cron_schedule: '*/5 * * * *' }],
    [' 0 3 * * * ', { cron_schedule: '0 3 * * *' }],
    ['@daily', { cron_schedule: '@daily' }],
  ])('--interval %j sets %j', async (interval, expected) => {
    expect(await definition(ctx({ cmd: 'true', interval }))).toEqual({ command: 'true', ...expected });
  });

  it('--disabled sends enabled: false, never the old status', async () => {
    const app = await definition(ctx({ cmd: 'true', disabled: true }));
    expect(app).toEqual({ command: 'true', enabled: false });
    expect(app).not.toHaveProperty('status');
  });
});
