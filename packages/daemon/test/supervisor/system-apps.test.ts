// Bundled system apps are part of svc itself: a new daemon replaces an adopted system process
// (so its code, configuration and credentials are read anew), while user apps are kept.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import { alive, fixture, type Fixture } from './helpers.ts';

let f: Fixture | undefined;
afterEach(async () => {
  await f?.cleanup();
  f = undefined;
});

describe('system apps across a daemon restart', () => {
  it('replaces the adopted system process and keeps the user app', async () => {
    f = await fixture();
    mkdirSync(join(f.dir, 'bundled'), { recursive: true });
    writeFileSync(join(f.dir, 'bundled', 'sysapp.yaml'), 'name: sysapp\ncommand: sleep 600\nsystem: true\n');
    const first = await f.make({ bundledAppsDir: join(f.dir, 'bundled') });
    await first.register({ name: 'userapp', command: 'sleep 600' }, 'owner');
    const sysPid = await waitFor(() => first.get('sysapp')?.['pid'] as number | undefined, {
      what: 'sysapp running',
    });
    const userPid = first.get('userapp')?.['pid'] as number;
    f.pids.add(sysPid);
    await first.detach();

    const second = await f.make({ bundledAppsDir: join(f.dir, 'bundled') });
    expect(second.get('userapp')?.['pid']).toBe(userPid); // kept
    const newSysPid = await waitFor(
      () => {
        const pid = second.get('sysapp')?.['pid'] as number | undefined;
        return pid !== undefined && pid !== sysPid ? pid : undefined;
      },
      { what: 'sysapp replaced by a new process', timeoutMs: 10_000 },
    );
    f.pids.add(newSysPid);
    await waitFor(() => !alive(sysPid), { what: 'the old system process to be stopped' });
    expect(alive(userPid)).toBe(true);
  });
});
