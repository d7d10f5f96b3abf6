import { describe, expect, it } from 'vitest';
import { effectiveExecutionUser } from './execution-user.ts';

describe('effectiveExecutionUser', () => {
  it("takes the record's user, else the default, else the daemon's (undefined)", () => {
    expect(effectiveExecutionUser('alice', { defaultExecUser: 'nobody', disableExecUser: false })).toBe(
      'alice',
    );
    expect(effectiveExecutionUser(undefined, { defaultExecUser: 'nobody', disableExecUser: false })).toBe(
      'nobody',
    );
    expect(
      effectiveExecutionUser(undefined, { defaultExecUser: undefined, disableExecUser: false }),
    ).toBeUndefined();
  });

  it('DisableExecUser turns every execution user off', () => {
    expect(
      effectiveExecutionUser('alice', { defaultExecUser: 'nobody', disableExecUser: true }),
    ).toBeUndefined();
  });
});
