// startServedDaemon's extra password users (builtin mode, library use): refused outside builtin
// mode and for names that are not plain addresses, before anything starts.
import { describe, expect, it } from 'vitest';
import { startServedDaemon } from '../src/index.ts';

const BASE = { agent: true, builtin: true, tokenTtlSeconds: 900 };

describe('startServedDaemon users', () => {
  it('refuses extra users without the built-in identity', async () => {
    await expect(
      startServedDaemon({ ...BASE, builtin: false, users: [{ email: 'a@b.c', roles: ['svc-viewer'] }] }),
    ).rejects.toThrow(/builtin mode/);
  });

  it.each([
    '',
    'no-at-sign',
    'a@b.c\nusers: []',
    '"quoted"@x.y',
    `${'x'.repeat(65)}@example.com`,
    'a@b.c: {}',
    'a b@c.d',
  ])('refuses the email %j before starting anything', async (email) => {
    await expect(startServedDaemon({ ...BASE, users: [{ email, roles: ['svc-viewer'] }] })).rejects.toThrow(
      /not a plain address/,
    );
  });
});
