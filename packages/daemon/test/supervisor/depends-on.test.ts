// depends_on at the supervisor: "healthy" is part of "ready" (real children, real health checks).
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import { eventsOf, fixture } from './helpers.ts';
import type { Fixture } from './helpers.ts';

let f: Fixture;
afterEach(async () => {
  await f?.cleanup();
});

describe('depends_on and health', () => {
  it('waits while a running dependency is unhealthy, starts once it is healthy', async () => {
    f = await fixture();
    await f.sup.register({ name: 'db', command: 'sleep 600', health_check_cmd: 'false' }, 'a');
    await waitFor(() => f.sup.get('db')?.['health'] === 1, { what: 'db unhealthy' });
    await f.sup.register({ name: 'web', command: 'sleep 600', depends_on: ['db'] }, 'a');
    const web = f.sup.get('web');
    expect(web?.['state']).toBe('waiting');
    expect(web?.['waiting_for']).toEqual(['db']);
    expect(eventsOf(f, 'web', 'START')).toEqual([]);

    // A healthy replacement of db: web starts by itself (no call on web).
    await f.sup.register({ name: 'db', command: 'sleep 600', health_check_cmd: 'true' }, 'a');
    await waitFor(() => eventsOf(f, 'web', 'START').length === 1, { what: 'web START' });
    expect(f.sup.get('web')?.['waiting_for']).toBeUndefined();
  });

  it('refuses a cycle at registration and keeps the existing definitions', async () => {
    f = await fixture();
    await f.sup.register({ name: 'a', command: 'true', depends_on: ['b'], enabled: false }, 'x');
    await f.sup.register({ name: 'b', command: 'true', depends_on: ['c'], enabled: false }, 'x');
    await expect(
      f.sup.register({ name: 'c', command: 'true', depends_on: ['a'], enabled: false }, 'x'),
    ).rejects.toMatchObject({
      code: 'invalid_app',
      message: 'depends_on: dependency cycle c -> a -> b -> c',
    });
    expect(f.sup.get('c')).toBeUndefined();
    await expect(
      f.sup.register({ name: 'b', command: 'true', depends_on: ['a'], enabled: false }, 'x'),
    ).rejects.toMatchObject({ code: 'invalid_app' });
    expect(f.sup.get('b')?.['depends_on']).toEqual(['c']);
  });
});
