// Full stack, builtin mode, svcd started with SVC_AUTH_PASSWORD_FLOW=false: the password grant is off
// (user-token fails, `password` leaves /svc/auth/config flows), client credentials still work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthStack, type AuthStack } from './stack.ts';

let stack: AuthStack;
beforeAll(async () => {
  stack = await startAuthStack({
    adminUi: false,
    env: { SVC_AUTH_ADMIN_UI: 'off', SVC_AUTH_PASSWORD_FLOW: 'false' },
  });
});
afterAll(async () => {
  await stack?.close();
});

describe('svcd with SVC_AUTH_PASSWORD_FLOW=false', () => {
  it('/svc/auth/config does not offer password', async () => {
    const config = await stack.call('GET', '/svc/auth/config', undefined);
    expect(config.status).toBe(200);
    const doc = config.json<{ mode: string; flows: string[] }>();
    expect(doc.mode).toBe('builtin');
    expect(doc.flows).not.toContain('password');
    expect(doc.flows.length).toBeGreaterThan(0);
  });

  it('user-token fails (the token endpoint rejects the password grant)', async () => {
    const password = (await stack.script(['print-initial-password'])).stdout.trimEnd();
    const run = await stack.script(['user-token'], { stdin: `${password}\n` });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/token request refused: 400 unsupported_grant_type/);
    expect(run.stderr).not.toContain(password);
  });

  it('automation-token still works: client:svc-automation with svc-maintenance', async () => {
    const run = await stack.script(['automation-token']);
    expect(run.code, run.stderr).toBe(0);
    const self = await stack.call('GET', '/svc/self', run.stdout.trim());
    expect(self.status).toBe(200);
    expect(self.json()).toMatchObject({ principal_id: 'client:svc-automation', roles: ['svc-maintenance'] });
  });
});
