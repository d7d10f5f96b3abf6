// Issue 12 item 13: an app named `.tmp-…` was acknowledged (200), its file skipped at load, and its
// process ran on unsupervised after a restart. Names with a prefix svc uses for its own files are
// refused (400 invalid_name) on every way an app can be named, and a daemon restart finds nothing.
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killGroup, serverLog, trackDaemons } from '../robustness/helpers.ts';
import { MARK_VARIABLE, markedProcesses } from './helpers.ts';

const { start } = trackDaemons();
let mark = randomUUID();
afterEach(() => {
  for (const p of markedProcesses(mark)) killGroup(p.pid);
  mark = randomUUID();
});

const RESERVED = ['.tmp-ghost', '.tmp-', '.tmp-pool.x', '.pool-ghost', '.pool-'];

describe('reserved names (issue 12 item 13)', () => {
  it('refuses .tmp- and .pool- names with 400 and nothing survives a restart', async () => {
    const daemon = await start();
    const token = await daemon.token('admin');
    const rest = daemon.rest();
    for (const name of RESERVED) {
      const body = { name, command: 'sleep 600', env: { [MARK_VARIABLE]: mark } };
      const put = await rest.call('PUT', `/svc/app/${encodeURIComponent(name)}`, { token, body });
      expect(put.status, `PUT ${name}: ${put.text()}`).toBe(400);
      expect(put.json<{ error?: string; message?: string }>().message ?? put.text()).toMatch(/reserved/);
      const run = await rest.call('POST', '/svc/app/run', { token, body });
      expect(run.status, `run ${name}: ${run.text()}`).toBe(400);
    }
    // Neighbours of the reserved prefixes are ordinary names.
    for (const name of ['.tmpghost', 'x.tmp-ghost', '.poolx', 'tmp-ghost']) {
      const put = await rest.call('PUT', `/svc/app/${encodeURIComponent(name)}`, {
        token,
        body: { name, command: 'true', status: 0 },
      });
      expect(put.status, `PUT ${name}: ${put.text()}`).toBe(200);
    }
    expect(markedProcesses(mark), 'no process was started for a refused name').toEqual([]);
    const files = readdirSync(join(daemon.workDir, 'apps'));
    expect(files.filter((f) => f.startsWith('.tmp-') && f.endsWith('.yaml'))).toEqual([]);

    await daemon.stop();
    const again = await start({ home: daemon.home, issuer: daemon.issuer });
    const list = await again.rest().call('GET', '/svc/applications', { token: await again.token('admin') });
    const names = list.json<{ name: string }[]>().map((a) => a.name);
    for (const name of RESERVED) expect(names).not.toContain(name);
    for (const name of ['.tmpghost', 'x.tmp-ghost', '.poolx', 'tmp-ghost']) expect(names).toContain(name);
    expect(markedProcesses(mark)).toEqual([]);
  });

  it('lists a reserved-name file an older svc wrote as rejected and leaves it in place', async () => {
    const daemon = await start({
      files: { 'work/apps/.tmp-ghost.yaml': 'name: .tmp-ghost\ncommand: sleep 600\n' },
    });
    const list = await daemon.rest().call('GET', '/svc/applications', { token: await daemon.token('admin') });
    expect(list.json<{ name: string }[]>().map((a) => a.name)).not.toContain('.tmp-ghost');
    expect(existsSync(join(daemon.workDir, 'apps', '.tmp-ghost.yaml'))).toBe(true);
    expect(await serverLog(daemon)).toMatch(/\.tmp-ghost\.yaml: the name is reserved/);
  });
});
