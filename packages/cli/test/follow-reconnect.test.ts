// `svc logs -f` survives a daemon restart: the connection drops, svc reconnects to the same
// address, reads what was written meanwhile from its byte position and prints every line once.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { afterAll, expect, it } from 'vitest';
import { svcEnv, type SvcEnv } from './helpers.ts';

const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

for (const mode of ['events', 'poll'] as const) {
  it(`logs -f (${mode}) resumes by byte position after the daemon restarts`, async () => {
    const port = await freePort();
    const env = { SVC_REST_PORT: String(port) };
    let daemon: TestDaemon = await startTestDaemon({ env });
    const home = daemon.home;
    const issuer = daemon.issuer;
    const svc: SvcEnv = await svcEnv({ SVC_HOME: home, SVC_BEARER_TOKEN: await daemon.token('admin') });
    cleanup.push(async () => {
      await svc.cleanup();
      await daemon.close(); // also kills the app's process group
      await issuer.close();
      await rm(home, { recursive: true, force: true }); // given to the restarted daemon, so ours to remove
    });
    const flag = join(svc.configDir, 'flag');
    const added = await svc.run([
      '-H',
      daemon.restUrl,
      'add',
      'tail-me',
      '--shell',
      '--cmd',
      'echo before; while [ ! -f "$FLAG" ]; do sleep 0.05; done; echo after; exec sleep 600',
      '--env',
      `FLAG=${flag}`,
    ]);
    expect(added.code, added.stderr).toBe(0);
    const follower = svc.spawn([
      '-H',
      daemon.restUrl,
      'logs',
      '-f',
      ...(mode === 'poll' ? ['--poll'] : []),
      'tail-me',
    ]);
    await follower.waitFor(/before\n/);

    await daemon.stop(); // the app keeps running; svc loses its connection
    await follower.waitFor(mode === 'events' ? /resuming at byte 7/ : /reconnecting/, 'stderr');
    await writeFile(flag, ''); // written while no daemon is there
    daemon = await startTestDaemon({ env, home, issuer });

    await follower.waitFor(/after\n/, 'stdout', 40_000);
    expect(follower.stdout()).toBe('before\nafter\n');
    follower.child.kill('SIGINT');
    expect(await follower.exited).toBe(130);
  });
}
