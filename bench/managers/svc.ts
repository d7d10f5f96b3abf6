// svc as a Manager: a real svcd from @svc/testkit, driven over REST with a keep-alive agent and the
// admin token. PUT /svc/app/<name> answers after the spawn (the view carries the pid).
import { spawnerPid, startTestDaemon, type TestDaemon } from '@svc/testkit';
import { keepAliveRest, ok, type KeepAliveRest } from '../lib/rest.ts';
import { killGroup, onCleanup } from '../lib/util.ts';
import { commandLine, type AppSpec, type Manager, type Timed } from './types.ts';

export interface SvcManager extends Manager {
  readonly daemon: TestDaemon;
  readonly rest: KeepAliveRest;
  readonly token: string;
}

interface AppView {
  pid?: number;
  starts?: number;
}

export async function startSvc(options: { env?: Record<string, string> } = {}): Promise<SvcManager> {
  const daemon = await startTestDaemon(options.env === undefined ? {} : { env: options.env });
  const seen = new Set<number>();
  const cleanup = onCleanup('svcd', async () => {
    rest.close();
    await daemon.close();
    for (const pid of seen) killGroup(pid);
  });
  const token = await daemon.token('admin');
  const rest = keepAliveRest(daemon.restUrl, daemon.ca, token);
  const pids = new Map<string, number>();
  const path = (name: string): string => `/svc/app/${encodeURIComponent(name)}`;
  return {
    kind: 'svc',
    version: 'svcd (this checkout)',
    pid: daemon.pid,
    helperPids() {
      const pid = spawnerPid(daemon.workDir); // undefined: in-process spawns, no spawner
      return pid === undefined ? [] : [pid];
    },
    daemon,
    rest,
    token,
    async prepare() {},
    async start(spec: AppSpec): Promise<Timed<void>> {
      const body = {
        name: spec.name,
        command: commandLine(spec.argv),
        behavior: { exit: spec.restart ? 'restart' : 'standby' },
      };
      const view = ok(await rest.call('PUT', path(spec.name), body), `PUT ${spec.name}`).json<AppView>();
      if (typeof view.pid === 'number') {
        pids.set(spec.name, view.pid);
        seen.add(view.pid);
      }
      return { value: undefined };
    },
    async pidOf(name) {
      return pids.get(name) ?? 0;
    },
    async stop(name): Promise<Timed<void>> {
      ok(await rest.call('POST', `${path(name)}/disable`), `disable ${name}`);
      return { value: undefined };
    },
    async remove(name) {
      const result = await rest.call('DELETE', path(name));
      if (result.status !== 404) ok(result, `DELETE ${name}`);
      pids.delete(name);
    },
    close: cleanup,
  };
}
