// One-off runs over the API: the transient app outlives its process by the lifecycle, so its
// output and exit code can still be read; lifecycle=0 removes it at the exit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
});
afterAll(async () => {
  await daemon?.close();
});

describe('POST /svc/app/run', () => {
  it('keeps the transient app after the exit by default, with its output and exit code', async () => {
    const rest = daemon.rest();
    const run = await rest.call('POST', '/svc/app/run', {
      token: admin,
      body: { command: 'printf done; exit 4', shell: true },
    });
    expect(run.status, run.text()).toBe(200);
    const { name, process_uuid } = run.json<{ name: string; process_uuid: string }>();
    const output = await waitFor(
      async () => {
        const r = await rest.call('GET', `/svc/app/${name}/output`, {
          token: admin,
          query: { process_uuid, timeout: '5' },
        });
        return r.headers['x-exit-code'] === undefined ? undefined : r;
      },
      { what: 'the run to exit', timeoutMs: 15_000 },
    );
    expect(output.text()).toBe('done');
    expect(output.headers['x-exit-code']).toBe('4');
    const app = await rest.call('GET', `/svc/app/${name}`, { token: admin });
    expect(app.status).toBe(200); // still there: the default lifecycle has not run out
  });

  it('removes the transient app at its exit with lifecycle=0', async () => {
    const rest = daemon.rest();
    const run = await rest.call('POST', '/svc/app/run', {
      token: admin,
      body: { command: 'true' },
      query: { lifecycle: '0' },
    });
    expect(run.status, run.text()).toBe(200);
    const { name } = run.json<{ name: string }>();
    await waitFor(async () => (await rest.call('GET', `/svc/app/${name}`, { token: admin })).status === 404, {
      what: 'the transient app to be removed',
      timeoutMs: 15_000,
    });
  });
});

describe('run durations (App Mesh 3.0 clients send timeout=P2D, lifecycle=P2DT12H by default)', () => {
  // What the 3.0 SDK sends: its defaults as integer seconds; ISO 8601 forms as other clients do.
  it.each([
    ['172800', '216000'],
    ['P2D', 'P2DT12H'],
    ['P5W', 'P10W'],
    [String(2 ** 31 - 1), String(2 ** 31 - 1)],
  ])(
    'POST /svc/app/run accepts timeout=%s lifecycle=%s and the run completes',
    async (timeout, lifecycle) => {
      const rest = daemon.rest();
      const run = await rest.call('POST', '/svc/app/run', {
        token: admin,
        body: { command: 'printf long-run', shell: true },
        query: { timeout, lifecycle },
      });
      expect(run.status, run.text()).toBe(200);
      const { name, process_uuid } = run.json<{ name: string; process_uuid: string }>();
      const output = await waitFor(
        async () => {
          const r = await rest.call('GET', `/svc/app/${name}/output`, {
            token: admin,
            query: { process_uuid, timeout: '5' },
          });
          return r.headers['x-exit-code'] === undefined ? undefined : r;
        },
        { what: 'the run to exit', timeoutMs: 15_000 },
      );
      expect(output.text()).toBe('long-run');
      expect(output.headers['x-exit-code']).toBe('0');
      // Kept for its (long) lifecycle, not removed at once and not refused.
      expect((await rest.call('GET', `/svc/app/${name}`, { token: admin })).status).toBe(200);
      expect((await rest.call('DELETE', `/svc/app/${name}`, { token: admin })).status).toBe(200);
    },
  );

  it.each([
    ['172800', '216000'],
    ['P2D', 'P2DT12H'],
  ])('POST /svc/app/syncrun accepts timeout=%s lifecycle=%s', async (timeout, lifecycle) => {
    const rest = daemon.rest();
    const r = await rest.call('POST', '/svc/app/syncrun', {
      token: admin,
      body: { command: 'printf synced; exit 3', shell: true },
      query: { timeout, lifecycle },
    });
    expect(r.status, r.text()).toBe(200);
    expect(r.text()).toBe('synced');
    expect(r.headers['x-exit-code']).toBe('3');
  });

  it.each([
    ['timeout', 'P99999999D'],
    ['timeout', String(2 ** 31)],
    ['timeout', '99999999999'],
    ['lifecycle', 'P1M'],
    ['lifecycle', 'P1Y'],
    ['timeout', '-1'],
    ['timeout', '1e9'],
    ['lifecycle', 'PT'],
    ['timeout', 'P2D '],
    ['lifecycle', 'x'.repeat(10_000)],
  ])('refuses %s=%j with 400 invalid_query and starts nothing', async (key, value) => {
    const rest = daemon.rest();
    const before = (await rest.call('GET', '/svc/applications', { token: admin })).json<unknown[]>().length;
    for (const path of ['/svc/app/run', '/svc/app/syncrun']) {
      const r = await rest.call('POST', path, {
        token: admin,
        body: { command: 'true' },
        query: { [key]: value },
      });
      expect(r.status, r.text()).toBe(400);
      expect(r.json<{ error: string; message: string }>()).toMatchObject({ error: 'invalid_query' });
      expect(r.text().length).toBeLessThan(1000);
    }
    expect((await rest.call('GET', '/svc/applications', { token: admin })).json<unknown[]>().length).toBe(
      before,
    );
  });
});
