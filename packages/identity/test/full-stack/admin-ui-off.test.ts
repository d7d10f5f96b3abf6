// Full stack, builtin mode, svcd started with SVC_AUTH_ADMIN_UI=off: the administration UI (the only
// management transport) does not listen, so add-user and delete-user fail with the reachability
// error (exit 3), while the token actions keep working; the admin-ui action idles.
import type { ChildProcess } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@svc/testkit';
import { keyValues, spawnScript, startAuthStack, type AuthStack } from './stack.ts';

const EXIT_UNREACHABLE = 3; // script/svc-auth.sh: "3 reachability error (administration UI or issuer)"

let stack: AuthStack;
let adminPassword: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startAuthStack({ adminUi: false, env: { SVC_AUTH_ADMIN_UI: 'off' } });
  adminPassword = (await stack.script(['print-initial-password'])).stdout.trimEnd();
});
afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) kill(child, 'SIGKILL');
  await stack?.close();
});

function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal); // bash and the node program it runs
  } catch {
    // gone
  }
}

/** Collects stdout; `line(re)` resolves when it matched, rejects if the child exits first. */
function watch(child: ChildProcess): { line(re: RegExp): Promise<void>; exited: Promise<number | null> } {
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return {
    exited,
    line: (re) =>
      Promise.race([
        waitFor(() => re.test(stdout), { timeoutMs: 15_000, intervalMs: 20, what: `output ${re}` }),
        exited.then((code) => {
          throw new Error(`exited with ${code}: ${stderr}`);
        }),
      ]).then(() => undefined),
  };
}

describe('svcd with SVC_AUTH_ADMIN_UI=off', () => {
  it('nothing records an admin_ui listener', async () => {
    expect((await stack.ports())['admin_ui']).toBeUndefined();
    await expect(access(join(stack.workDir, 'ports.authadmin.json'))).rejects.toThrow();
    // The system app itself is up (idling) for health checks.
    const token = await stack.token(['user-token'], `${adminPassword}\n`);
    const app = await stack.call('GET', '/svc/app/authadmin', token);
    expect(app.status, app.text()).toBe(200);
    expect(app.json()).toMatchObject({ name: 'authadmin', system: true, enabled: true });
  });

  it('add-user and delete-user fail with the reachability error (exit 3), with or without the switch in the shell', async () => {
    for (const env of [{ SVC_AUTH_ADMIN_UI: 'off' }, {}]) {
      const added = await stack.script(['add-user', 'someone@example.org', 'svc-viewer'], {
        stdin: 'someone-pw\n',
        env,
      });
      expect([JSON.stringify(env), added.code]).toEqual([JSON.stringify(env), EXIT_UNREACHABLE]);
      expect(added.stderr).toMatch(/administration UI.*(unreachable|disabled)/);
      expect(added.stdout).toBe('');
      expect(added.stderr).not.toContain('someone-pw');
      const deleted = await stack.script(['delete-user', 'someone@example.org'], { env });
      expect(deleted.code).toBe(EXIT_UNREACHABLE);
      expect(deleted.stderr).toMatch(/administration UI.*(unreachable|disabled)/);
    }
    // Nothing was created.
    const signIn = await stack.script(['user-token', 'someone@example.org'], { stdin: 'someone-pw\n' });
    expect(signIn.code).toBe(1);
  });

  it('user-token and automation-token still work', async () => {
    const token = await stack.token(['user-token'], `${adminPassword}\n`);
    expect((await stack.call('GET', '/svc/self', token)).json()).toMatchObject({ principal_id: 'admin' });
    const machine = await stack.token(['automation-token']);
    expect((await stack.call('GET', '/svc/self', machine)).json()).toMatchObject({
      principal_id: 'client:svc-automation',
    });
  });

  it('the admin-ui action idles while disabled (no listener, stays up, ends on SIGTERM)', async () => {
    const child = spawnScript(stack.home, ['admin-ui'], { SVC_AUTH_ADMIN_UI: 'off' });
    children.push(child);
    const out = watch(child);
    await out.line(/administration UI is disabled \(SVC_AUTH_ADMIN_UI=off\); idling/);
    expect(child.exitCode).toBeNull();
    expect((await stack.ports())['admin_ui']).toBeUndefined();
    kill(child, 'SIGTERM');
    expect(await out.exited).toBe(0);
  });

  it('re-enabling needs local access: the admin-ui action with the UI on serves, and add-user works through it', async () => {
    const child = spawnScript(stack.home, ['admin-ui'], {
      SVC_AUTH_ADMIN_LISTEN: '127.0.0.1:0',
      SVC_AUTH_GRPC_LISTEN: '127.0.0.1:0', // the gRPC port is read from work/ports.json
    });
    children.push(child);
    const out = watch(child);
    await out.line(/administration UI listening on/);
    const port = await waitFor(async () => (await stack.ports())['admin_ui'], {
      timeoutMs: 10_000,
      intervalMs: 20,
      what: 'admin_ui in work/ports.json',
    });
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    const added = await stack.script(['add-user', 'local.op@example.org'], { stdin: 'local-op-password\n' });
    expect(added.code, added.stderr).toBe(0);
    const id = keyValues(added.stdout)['principal_id'];
    const token = await stack.token(['user-token', 'local.op@example.org'], 'local-op-password\n');
    expect((await stack.call('GET', '/svc/self', token)).json()).toMatchObject({
      principal_id: id,
      roles: ['svc-viewer'],
    });
    kill(child, 'SIGTERM');
    expect(await out.exited).toBe(0);
    // Stopped: its record leaves work/ports.json, and add-user is unreachable again.
    await waitFor(async () => (await stack.ports())['admin_ui'] === undefined, {
      timeoutMs: 10_000,
      intervalMs: 20,
      what: 'admin_ui to leave work/ports.json',
    });
    const refused = await stack.script(['delete-user', 'local.op@example.org']);
    expect(refused.code).toBe(EXIT_UNREACHABLE);
  });
});
