// secret_env values: the process sees them, nothing else does. Not the API (any transport), not the
// definition file, the snapshot or the log, not the process table; and they survive a restart
// (decrypted from disk for the next process).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import {
  closeDaemons,
  ok,
  readOutputUntil,
  serverLog,
  waitFor,
  waitRunning,
  type AppView,
} from './helpers.ts';

let daemons: TestDaemon[] = [];
afterEach(async () => {
  await closeDaemons(daemons);
  daemons = [];
});

/** Every file under `dir`, recursively (skipping the app's own captured output). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && !entry.parentPath.endsWith('/stdout')) out.push(join(entry.parentPath, entry.name));
  }
  return out;
}

describe('secret_env', () => {
  it('reaches the process and nothing else, and survives a restart', async () => {
    // Unique per run so that a hit can only come from this test.
    const secret = `super-secret-value-${randomUUID()}`;
    const first = await startTestDaemon();
    daemons.push(first);
    const admin = await first.token('admin');
    const rest = first.rest();
    const registered = ok<AppView>(
      await rest.call('PUT', '/svc/app/keeper', {
        token: admin,
        body: {
          command: 'echo "token=$TOKEN"; exec sleep 600',
          shell: true,
          env: { VISIBLE: 'plain' },
          secret_env: { TOKEN: secret },
        },
      }),
      'register',
    );
    expect(JSON.stringify(registered)).not.toContain(secret);
    expect(Object.keys(registered['secret_env'] as object)).toEqual(['TOKEN']);
    const running = await waitRunning(first, 'keeper');

    // The owner reading its own output is fine: the process did receive the value.
    const out = await readOutputUntil(first, 'keeper', 0, (t) => t.includes('\n'));
    expect(out.text).toBe(`token=${secret}\n`);

    // The API never returns it, on any transport.
    const tcp = await first.tcp();
    const wss = await first.wss(admin);
    for (const client of [rest, tcp, wss]) {
      for (const path of ['/svc/app/keeper', '/svc/applications']) {
        const r = await client.call('GET', path, { token: admin });
        expect(r.status).toBe(200);
        expect(r.text(), `${client.kind} ${path}`).not.toContain(secret);
      }
    }

    // Not in the process table (arguments of every process), nor in any file of the work dir.
    const { stdout: ps } = await promisify(execFile)('ps', ['-eo', 'args'], { maxBuffer: 16 * 1024 * 1024 });
    expect(ps).toContain('sleep 600');
    expect(ps).not.toContain(secret);
    const definition = await readFile(join(first.workDir, 'apps', 'keeper.yaml'), 'utf8');
    expect(definition).toContain('TOKEN');
    expect(definition).toContain('VISIBLE');
    for (const file of await filesUnder(first.workDir))
      expect((await readFile(file)).includes(secret), file).toBe(false);
    expect(await serverLog(first)).not.toContain(secret);

    // After a restart the stored (encrypted) value still reaches a new process.
    await first.stop();
    const second = await startTestDaemon({ home: first.home, issuer: first.issuer });
    daemons.push(second);
    const token = await second.token('admin');
    ok(await second.rest().call('POST', '/svc/app/keeper/disable', { token }), 'disable');
    ok(await second.rest().call('POST', '/svc/app/keeper/enable', { token }), 'enable');
    const restarted = await waitFor(
      async () => {
        const app = await waitRunning(second, 'keeper');
        return app.process_uuid !== running.process_uuid ? app : undefined;
      },
      { timeoutMs: 10_000, what: 'a new keeper process' },
    );
    expect(restarted.pid).not.toBe(running.pid);
    const again = await readOutputUntil(second, 'keeper', 0, (t) => t.includes('\n'));
    expect(again.text).toBe(`token=${secret}\n`);
    expect(await serverLog(second)).not.toContain(secret);
  });
});
