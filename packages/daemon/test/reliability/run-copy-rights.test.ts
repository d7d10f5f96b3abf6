// Running a copy of an existing application returns (syncrun) or exposes (run + output) that
// application's output, environment included: it needs the rights of reading the original's output
// (app-output-view on an app one owns or that was shared with one, or with app-manage-all), not
// merely of seeing it. Issue "app permissions mean what they say", reproduced on a real daemon.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';

let daemon: TestDaemon;
let admin: string;
const SECRET = 'not-for-runners-5d1c';

/** A principal holding one custom role with exactly `permissions`. */
async function principalWith(id: string, permissions: string[]): Promise<string> {
  const rest = daemon.rest();
  const role = await rest.call('POST', `/svc/role/${id}-role`, { token: admin, body: permissions });
  expect(role.status, role.text()).toBe(200);
  const bind = await rest.call('POST', `/svc/principal/${id}`, {
    token: admin,
    body: { roles: [`${id}-role`] },
  });
  expect(bind.status, bind.text()).toBe(200);
  return daemon.issuer.mint({ sub: id });
}

beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
  const rest = daemon.rest();
  for (const [name, token] of [
    ['admin-secret', admin],
    ['dev-own', await daemon.token('developer')],
  ] as const) {
    const r = await rest.call('PUT', `/svc/app/${name}`, {
      token,
      body: { command: 'printf "$TOKEN"', shell: true, env: { TOKEN: SECRET } },
    });
    expect(r.status, r.text()).toBe(200);
  }
});
afterAll(async () => {
  await daemon?.close();
});

describe('running a copy of an existing application', () => {
  it('is refused to a caller who may see the app but not read its output (syncrun and run)', async () => {
    const seer = await principalWith('seer', ['app-run-sync', 'app-run-async', 'app-view', 'app-view-all']);
    const rest = daemon.rest();
    const sync = await rest.call('POST', '/svc/app/syncrun', { token: seer, body: { name: 'admin-secret' } });
    expect(sync.status, sync.text()).toBe(403);
    expect(sync.text()).not.toContain(SECRET);
    expect(sync.json()).toMatchObject({ error: 'forbidden' });
    const run = await rest.call('POST', '/svc/app/run', { token: seer, body: { name: 'admin-secret' } });
    expect(run.status, run.text()).toBe(403);
  });

  it('is refused to a caller with app-output-view on someone else app without app-manage-all', async () => {
    const reader = await principalWith('reader', ['app-run-sync', 'app-output-view', 'app-view-all']);
    const sync = await daemon
      .rest()
      .call('POST', '/svc/app/syncrun', { token: reader, body: { name: 'admin-secret' } });
    expect(sync.status, sync.text()).toBe(403);
    expect(sync.text()).not.toContain(SECRET);
  });

  it('is allowed to the owner with app-output-view, and to app-manage-all + app-output-view', async () => {
    const rest = daemon.rest();
    const own = await rest.call('POST', '/svc/app/syncrun', {
      token: await daemon.token('developer'),
      body: { name: 'dev-own' },
    });
    expect(own.status, own.text()).toBe(200);
    expect(own.text()).toBe(SECRET);
    const byAdmin = await rest.call('POST', '/svc/app/syncrun', { token: admin, body: { name: 'dev-own' } });
    expect(byAdmin.status, byAdmin.text()).toBe(200);
    expect(byAdmin.text()).toBe(SECRET);
    // The owner without app-output-view may not either (the copy's output is the original's output).
    const ownerNoOutput = await principalWith('owner-no-output', ['app-reg', 'app-run-sync', 'app-view']);
    const put = await rest.call('PUT', '/svc/app/blind-own', {
      token: ownerNoOutput,
      body: { command: 'true' },
    });
    expect(put.status, put.text()).toBe(200);
    const blind = await rest.call('POST', '/svc/app/syncrun', {
      token: ownerNoOutput,
      body: { name: 'blind-own' },
    });
    expect(blind.status, blind.text()).toBe(403);
  });

  it('still lets a new command run with the run permission alone', async () => {
    const runner = await principalWith('runner', ['app-run-sync']);
    const r = await daemon
      .rest()
      .call('POST', '/svc/app/syncrun', { token: runner, body: { command: 'printf ok', shell: true } });
    expect(r.status, r.text()).toBe(200);
    expect(r.text()).toBe('ok');
  });
});
