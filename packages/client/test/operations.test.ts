// One typed method per API operation: a round of them over REST, TCP and WSS against a real daemon.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { API_ERRORS, connect, SvcClientError } from '../src/index.ts';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
});
afterAll(async () => {
  await daemon?.close();
});

describe.each([['rest'], ['tcp'], ['wss']] as const)('operations over %s', (kind) => {
  it('apps, output, runs, labels, config, resources, self, roles, discovery; registry errors', async () => {
    const client = await connect({
      url: daemon.restUrl,
      transport: kind,
      tcpPort: daemon.tcpPort,
      ca: daemon.ca,
      token: admin,
    });
    try {
      const name = `ops-${kind}`;
      const app = await client.registerApplication(name, { command: 'echo hello; sleep 300', shell: true });
      expect(app.name).toBe(name);
      expect((await client.listApplications()).map((a) => a.name)).toContain(name);
      expect((await client.getApplication(name)).name).toBe(name);
      const chunk = await client.getOutput(name, { position: 0, timeoutSeconds: 10 });
      expect(chunk.output).toBe('hello\n');
      expect(chunk.nextPosition).toBe(6);
      expect(await client.disableApplication(name)).toMatchObject({ name });
      expect(await client.enableApplication(name)).toMatchObject({ name });
      await client.deleteApplication(name);
      await expect(client.getApplication(name)).rejects.toSatisfy(
        (e: unknown) =>
          e instanceof API_ERRORS.app_not_found && e.status === 404 && e.code === 'app_not_found',
      );

      const sync = await client.syncRun({ command: 'echo sync; exit 4', shell: true });
      expect(sync).toEqual({ output: 'sync\n', exitCode: 4 });

      await client.setLabel('zone', `z-${kind}`);
      expect((await client.listLabels())['zone']).toBe(`z-${kind}`);
      await client.deleteLabel('zone');

      expect(typeof (await client.getConfig())).toBe('object');
      expect(typeof (await client.getResources())).toBe('object');
      expect(await client.getSelf()).toMatchObject({ principal_id: 'test-admin', status: 'active' });
      expect(await client.listRoles()).toBeTruthy();
      expect(await client.listPermissions()).toBeTruthy();
      expect(await client.listPrincipals()).toBeTruthy();
      expect(Array.isArray((await client.getAuthConfig()).flows)).toBe(true);
      expect(await client.getProtectedResourceMetadata()).toBeTruthy();
      expect((await client.getOpenApi())['openapi']).toMatch(/^3\.1/);

      client.clearToken();
      if (kind === 'wss') {
        // The WSS session stays pinned to the bearer of its upgrade: a token change needs a reconnect.
        expect(Array.isArray(await client.listApplications())).toBe(true);
      } else {
        await expect(client.listApplications()).rejects.toSatisfy(
          (e: unknown) => e instanceof API_ERRORS.unauthorized || e instanceof API_ERRORS.invalid_token,
        );
      }
      client.setToken(admin);
      expect(Array.isArray(await client.listApplications())).toBe(true);

      if (kind === 'rest') {
        await expect(client.subscribe('x', [], () => {})).rejects.toBeInstanceOf(SvcClientError);
        await expect(
          client.registerApplication(
            'sub-rest',
            { command: 'true' },
            { subscribeEvents: ['ALL'], onEvent: () => {} },
          ),
        ).rejects.toBeInstanceOf(API_ERRORS.persistent_connection_required);
      }
    } finally {
      await client.close();
    }
  });
});
