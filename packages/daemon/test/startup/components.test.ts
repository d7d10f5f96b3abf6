// The daemon's components (docs/architecture.md "The daemon's components"): a real svcd logs the
// order in which they went live and, on SIGTERM, stops them in exactly the reverse order, the
// shutdown order `close()` kept by hand before the daemon was assembled from setup steps. After
// the stop the pid file is gone and a managed process still runs.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';

let daemon: TestDaemon | undefined;
afterEach(async () => {
  await daemon?.close();
  daemon = undefined;
});

const LIVE = [
  'log',
  'pid file',
  'supervisor',
  'ports merge',
  'forward links',
  'events',
  'listeners',
  'task queues',
  'task link',
];

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the daemon's components", () => {
  it('go live in order and stop in reverse; the pid file goes, a managed process stays', async () => {
    daemon = await startTestDaemon();
    const admin = await daemon.token('admin');
    const registered = await daemon.rest().call('PUT', '/svc/app/keeps-running', {
      token: admin,
      body: { command: 'sleep 600' },
    });
    expect(registered.status).toBe(200);
    const pid = registered.json<{ pid: number }>().pid;
    expect(existsSync(join(daemon.workDir, 'svcd.pid'))).toBe(true);
    await daemon.stop();
    const lines = (await readFile(join(daemon.workDir, 'server.log'), 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { msg: string; components?: string });
    const started = lines.find((line) => line.msg === 'svcd started');
    const stopping = lines.find((line) => line.msg.startsWith('svcd stopping'));
    expect(started?.components).toBe(LIVE.join(' → '));
    expect(stopping?.components).toBe([...LIVE].reverse().join(' → '));
    expect(lines.some((line) => line.msg.startsWith('shutdown step failed'))).toBe(false);
    expect(existsSync(join(daemon.workDir, 'svcd.pid'))).toBe(false);
    expect(alive(pid)).toBe(true);
  }, 60_000);
});
