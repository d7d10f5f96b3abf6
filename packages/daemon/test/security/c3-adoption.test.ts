// Issue 25 C3: process adoption (`{"command": …, "pid": N}`) and the signals it leads to reach only
// what the caller owns. The attack: a principal with app-reg + app-control adopted a root process,
// svc-spawner, another daemon's agent and pid 1, then disabled the app: each was killed (the
// spawner's death lost every app's exit code; in a pid namespace the disable became kill(-1)).
// Must be: only processes of the caller's execution user (all uids), never svcd, the spawner, a
// system app or pid 1 whoever asks, and an adopted process is signalled alone, never its group.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOsUser,
  IS_ROOT,
  startTestDaemon,
  waitFor,
  type ApiClient,
  type TestDaemon,
  type TestOsUser,
} from '@svc/testkit';

let user: TestOsUser;
const started: ChildProcess[] = [];

beforeAll(() => {
  if (IS_ROOT) user = createOsUser();
});
afterAll(() => {
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  user?.remove();
});

/** A process group of two sleeps (leader + member) as `uid` (undefined = root), in its own session. */
function sleepers(uid?: number, gid?: number): { leader: number; member: () => Promise<number> } {
  const child = spawn('/bin/sh', ['-c', 'sleep 300 & echo $!; exec sleep 300'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
    ...(uid === undefined ? {} : { uid, gid }),
  });
  started.push(child);
  const member = new Promise<number>((resolve) =>
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
  );
  return { leader: child.pid as number, member: () => member };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(!IS_ROOT).each([{ spawner: 'native' as const }, { spawner: 'inprocess' as const }])(
  'adoption by pid, SVC_SPAWNER=$spawner',
  ({ spawner }) => {
    let daemon: TestDaemon;
    let rest: ApiClient;
    let adopter: string;
    let admin: string;

    beforeAll(async () => {
      daemon = await startTestDaemon({ env: { SVC_SPAWNER: spawner } });
      rest = daemon.rest();
      admin = await daemon.token('admin');
      const set = async (path: string, body: unknown): Promise<void> => {
        const r = await rest.call('POST', path, { token: admin, body });
        expect(r.status, `${path}: ${r.text()}`).toBe(200);
      };
      await set('/svc/role/adopter', { permissions: ['app-reg', 'app-control', 'app-view'] });
      await set('/svc/principal/c3-adopter', { roles: ['adopter'], execution_user: user.name });
      adopter = await daemon.issuer.mint({ sub: 'c3-adopter' });
    });
    afterAll(async () => {
      await daemon?.close();
    });

    const adopt = (token: string, name: string, pid: number) =>
      rest.call('PUT', `/svc/app/${name}`, { token, body: { command: 'true', pid } });

    it("refuses a root process, svcd, svc-spawner and pid 1 to a principal running as a user, and kills nothing", async () => {
      const root = sleepers();
      const targets: [string, number][] = [
        ['a root process', root.leader],
        ['svcd', daemon.pid],
        ['pid 1', 1],
      ];
      if (spawner === 'native') {
        const spawnerPid = Number((await readFile(join(daemon.workDir, 'run', 'spawner.pid'), 'utf8')).trim());
        targets.push(['svc-spawner', spawnerPid]);
      }
      for (const [what, pid] of targets) {
        const r = await adopt(adopter, `c3-${spawner}-x`, pid);
        expect({ what, status: r.status, error: r.json<{ error: string }>().error }).toEqual({
          what,
          status: 400,
          error: 'invalid_app',
        });
        // Nothing registered: a disable has nothing to signal.
        expect((await rest.call('POST', `/svc/app/c3-${spawner}-x/disable`, { token: adopter })).status).toBe(404);
        expect(alive(pid), what).toBe(true);
      }
    });

    it('refuses svcd, svc-spawner and pid 1 to an administrator running as root too', async () => {
      const targets = [daemon.pid, 1];
      if (spawner === 'native')
        targets.push(Number((await readFile(join(daemon.workDir, 'run', 'spawner.pid'), 'utf8')).trim()));
      for (const pid of targets) {
        const r = await adopt(admin, `c3-${spawner}-root`, pid);
        expect([pid, r.status]).toEqual([pid, 400]);
        expect(alive(pid)).toBe(true);
      }
    });

    it("adopts the user's own process and signals it alone on disable, never its group", async () => {
      const own = sleepers(user.uid, user.groupId);
      const member = await own.member();
      const r = await adopt(adopter, `c3-${spawner}-own`, own.leader);
      expect(r.status, r.text()).toBe(200);
      const disabled = await rest.call('POST', `/svc/app/c3-${spawner}-own/disable`, { token: adopter });
      expect(disabled.status, disabled.text()).toBe(200);
      await waitFor(() => !alive(own.leader), { what: 'the adopted process to exit on SIGTERM' });
      // The other process of its group was not svc's to signal.
      expect(alive(member)).toBe(true);
      expect((await rest.call('DELETE', `/svc/app/c3-${spawner}-own`, { token: adopter })).status).toBe(200);
    });

    it('lets a principal running as root adopt a root process (it could kill it with a run anyway)', async () => {
      const root = sleepers();
      const r = await adopt(admin, `c3-${spawner}-rootproc`, root.leader);
      expect(r.status, r.text()).toBe(200);
      expect((await rest.call('DELETE', `/svc/app/c3-${spawner}-rootproc`, { token: admin })).status).toBe(200);
      await waitFor(() => !alive(root.leader), { what: 'the adopted root process to be stopped' });
    });
  },
);
