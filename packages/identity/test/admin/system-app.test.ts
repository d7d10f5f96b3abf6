// The bundled system application `authadmin` (apps/authadmin.yaml) in a real daemon: it loads as a
// system app, and the REST API refuses to disable, replace or delete it; enable of the running app
// changes nothing (re-enabling a disabled system app needs local access, spec "Administration UI"). The bundled file is copied into a temp SVC_HOME
// with its command replaced by `sleep`, so the test does not start the real UI on 6064.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BUNDLED = join(import.meta.dirname, '..', '..', '..', '..', 'apps', 'authadmin.yaml');

let daemon: TestDaemon;
let bundled: Record<string, unknown>;
beforeAll(async () => {
  bundled = parse(await readFile(BUNDLED, 'utf8')) as Record<string, unknown>;
  daemon = await startTestDaemon({
    files: { 'apps/authadmin.yaml': stringify({ ...bundled, command: 'sleep 600' }) },
  });
});
afterAll(async () => {
  await daemon?.close();
});

describe('system application authadmin', () => {
  it('is bundled as a system app running svc-auth-admin', () => {
    expect(bundled).toMatchObject({
      name: 'authadmin',
      system: true,
      command: 'node --max-semi-space-size=1 packages/identity/bin/svc-auth-admin.js',
    });
  });

  it('cannot be changed through the REST API: 403 system_app; enable of the running app is a no-op', async () => {
    const rest = daemon.rest();
    const token = await daemon.token('admin');
    const app = await rest.call('GET', '/svc/app/authadmin', { token });
    expect(app.status, app.text()).toBe(200);
    expect(app.json()).toMatchObject({ name: 'authadmin', system: true });
    const enabled = await rest.call('POST', '/svc/app/authadmin/enable', { token });
    expect(enabled.status, enabled.text()).toBe(200);
    expect(enabled.json<{ pid?: number }>().pid).toBe(app.json<{ pid?: number }>().pid);
    for (const [method, path, body] of [
      ['POST', '/svc/app/authadmin/disable', undefined],
      ['PUT', '/svc/app/authadmin', { command: 'sleep 1' }],
      ['DELETE', '/svc/app/authadmin', undefined],
    ] as const) {
      const refused = await rest.call(method, path, { token, ...(body === undefined ? {} : { body }) });
      expect([method, path, refused.status], refused.text()).toEqual([method, path, 403]);
      expect(refused.text()).toContain('system_app');
    }
    expect((await rest.call('GET', '/svc/app/authadmin', { token })).json()).toMatchObject({ enabled: true });
  });

  it('is invisible to a non-admin, who may not enable anything', async () => {
    const token = await daemon.token('viewer');
    expect((await daemon.rest().call('GET', '/svc/app/authadmin', { token })).status).toBe(404);
    // The permission comes first (docs/security.md, "403 and 404"): without app-control, enable is
    // 403 for every name, so the answer for the system app is the one for a name nobody registered.
    const refused = await daemon.rest().call('POST', '/svc/app/authadmin/enable', { token });
    const missing = await daemon.rest().call('POST', '/svc/app/no-such-app-here/enable', { token });
    expect(refused.status).toBe(403);
    expect([refused.status, refused.text()]).toEqual([missing.status, missing.text()]);
  });
});
