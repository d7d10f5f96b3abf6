// Issue 12 item 16: resource limits never applied on a cgroup v1 host although its memory and cpu
// hierarchies are writable. Against a real svcd here: a process over its memory limit is killed
// by the kernel and svc says so (return_code -9, last_error names the OOM kill), cpu_shares and
// memory_mb are what the cgroup files read back, and the app's cgroups are removed after its
// process exits and on delete.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestDaemon } from '@svc/testkit';
import { getApp, ok, trackDaemons, waitFor, waitRunning, type AppView } from '../robustness/helpers.ts';

const { start } = trackDaemons();
const ROOT = '/sys/fs/cgroup';
const writable =
  process.getuid?.() === 0 &&
  (existsSync(join(ROOT, 'memory', 'memory.limit_in_bytes')) || existsSync(join(ROOT, 'cgroup.controllers')));
// In CI (these machines: cgroup v1, root) the test must run; elsewhere it needs root and cgroups.
const required = process.env['CI'] === 'true';
const v1 = existsSync(join(ROOT, 'memory', 'memory.limit_in_bytes'));

/** The cgroup directory of `pid` in `controller` (v1 hierarchy, or the v2 unified one). */
function cgroupDir(pid: number, controller: string): string {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  if (!v1) return join(ROOT, lines.find((l) => l.startsWith('0::'))!.slice(3));
  const line = lines.find((l) => l.split(':')[1]!.split(',').includes(controller))!;
  return join(ROOT, controller, line.split(':')[2]!);
}

async function put(daemon: TestDaemon, body: Record<string, unknown>): Promise<AppView> {
  const token = await daemon.token('admin');
  return ok<AppView>(
    await daemon.rest().call('PUT', `/svc/app/${String(body['name'])}`, { token, body }),
    'PUT',
  );
}

// Waits (in the child, not the test) until svcd moved it into its app cgroup, then allocates
// 8 MiB at a time, touching every page, up to 1 GiB; without a limit it would print "survived".
const HOG = [
  "while ! grep -q '/svc\\.[0-9a-f]*/hog' /proc/self/cgroup; do sleep 0.01; done;",
  'exec python3 -c "',
  'b = []',
  'for i in range(128): b.append(bytes([i % 251]) * (8 << 20))',
  "print('survived', flush=True)",
  '"',
].join('\n');

describe.skipIf(!writable && !required)('resource limits through cgroups (issue 12 item 16)', () => {
  it('kills a process over memory_mb and reports it; the cgroup is removed after the exit', async () => {
    expect(writable, 'root and a writable cgroup hierarchy are required in CI').toBe(true);
    const daemon = await start();
    await put(daemon, {
      name: 'hog',
      command: HOG,
      shell: true,
      resource_limit: { memory_mb: 64 },
      behavior: { exit: 'standby' },
    });
    const exited = await waitFor(
      async () => {
        const app = await getApp(daemon, 'hog');
        return app.state !== 'running' && app.starts > 0 && app['last_exit_time'] !== undefined
          ? app
          : undefined;
      },
      { what: 'the hog to exit', timeoutMs: 60_000, intervalMs: 50 },
    );
    expect(exited['resource_limit_status']).toBe('applied');
    expect(exited['return_code'], JSON.stringify(exited)).toBe(-9);
    expect(String(exited['last_error'])).toMatch(/out of memory.*memory_mb 64/);
    const output = await daemon
      .rest()
      .call('GET', '/svc/app/hog/output', { token: await daemon.token('admin') });
    expect(output.text()).not.toContain('survived');
    // Its cgroups are gone with it.
    const log = readFileSync(join(daemon.workDir, 'server.log'), 'utf8');
    expect(log).toMatch(/resource limits through cgroup v[12]/);
    const scopes = [...log.matchAll(/"cgroups":\["([^"]+)"/g)].map((m) => m[1]!);
    expect(scopes.length).toBeGreaterThan(0);
    expect(existsSync(join(scopes[0]!, 'hog'))).toBe(false);
  });

  it('applies cpu_shares and memory_mb (read back from the cgroup) and cleans up on disable and delete', async () => {
    const daemon = await start();
    await put(daemon, {
      name: 'limited',
      command: 'sleep 600',
      resource_limit: { memory_mb: 96, cpu_shares: 256 },
    });
    const app = await waitRunning(daemon, 'limited');
    await waitFor(
      async () =>
        (await getApp(daemon, 'limited'))['resource_limit_status'] === 'applied' ? true : undefined,
      {
        what: 'limits applied',
      },
    );
    const cpuDir = cgroupDir(app.pid!, 'cpu');
    const memoryDir = cgroupDir(app.pid!, 'memory');
    expect(cpuDir).toMatch(/\/svc\.[0-9a-f]{12}\/limited$/);
    if (v1) {
      expect(readFileSync(join(cpuDir, 'cpu.shares'), 'utf8').trim()).toBe('256');
      expect(readFileSync(join(memoryDir, 'memory.limit_in_bytes'), 'utf8').trim()).toBe(
        String(96 * 1024 * 1024),
      );
    } else {
      expect(readFileSync(join(cpuDir, 'cpu.weight'), 'utf8').trim()).toBe('25');
      expect(readFileSync(join(memoryDir, 'memory.max'), 'utf8').trim()).toBe(String(96 * 1024 * 1024));
    }
    const token = await daemon.token('admin');
    ok(await daemon.rest().call('POST', '/svc/app/limited/disable', { token }), 'disable');
    await waitFor(() => !existsSync(cpuDir) && !existsSync(memoryDir), {
      what: 'cgroups removed after disable',
    });
    ok(await daemon.rest().call('POST', '/svc/app/limited/enable', { token }), 'enable');
    const again = await waitRunning(daemon, 'limited');
    expect(cgroupDir(again.pid!, 'cpu')).toBe(cpuDir);
    ok(await daemon.rest().call('DELETE', '/svc/app/limited', { token }), 'delete');
    await waitFor(() => !existsSync(cpuDir) && !existsSync(memoryDir), {
      what: 'cgroups removed after delete',
    });
  });
});
