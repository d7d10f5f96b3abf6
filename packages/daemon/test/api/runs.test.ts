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
