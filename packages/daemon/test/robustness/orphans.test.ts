// Orphan recovery end to end: svcd is SIGKILLed right after acknowledging a registration, before
// its coalesced snapshot write could record the new process, and the snapshot is lost. The next
// daemon must find that process in /proc (SVC_* environment, verified process key) and adopt it:
// same pid, no second process, `starts` unchanged.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  getApp,
  ok,
  processAlive,
  readOutputUntil,
  serverLog,
  waitFor,
  COUNTER,
  trackDaemons,
} from './helpers.ts';

const { start, orphans } = trackDaemons();

/** Process groups of live processes whose environment names `app` (our own user's, readable). */
function groupsOf(app: string): Set<number> {
  const groups = new Set<number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`SVC_APPLICATION_NAME=${app}`))
        continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') groups.add(Number(fields[2]));
    } catch {
      // gone or not ours
    }
  }
  return groups;
}

function completeLines(text: string): number[] {
  const lines = text.split('\n');
  lines.pop();
  return lines.map(Number);
}

describe('orphan recovery after a daemon crash that lost the snapshot', () => {
  it('SIGKILL right after the PUT, snapshot deleted: the same process is adopted, none is started', async () => {
    const first = await start();
    const name = `orphan-${randomBytes(4).toString('hex')}`;
    const registered = ok<{ pid: number; process_uuid: string; starts: number }>(
      await first.rest().call('PUT', `/svc/app/${name}`, {
        token: await first.token('admin'),
        body: { command: COUNTER, shell: true },
      }),
      'register',
    );
    await first.kill(); // immediately: the snapshot write (≤ 1 per 50 ms) may not have happened
    const pid = registered.pid;
    orphans.push(pid);
    expect(processAlive(pid), 'the app outlives its daemon').toBe(true);
    await rm(join(first.workDir, '.snapshot'), { force: true }); // whatever was written is lost

    const second = await start({ home: first.home, issuer: first.issuer });
    const after = await getApp(second, name);
    expect({
      pid: after.pid,
      process_uuid: after.process_uuid,
      starts: after.starts,
      state: after.state,
    }).toEqual({ pid, process_uuid: registered.process_uuid, starts: registered.starts, state: 'running' });
    expect([...groupsOf(name)]).toEqual([pid]); // no second process of the app anywhere
    expect(await serverLog(second)).toMatch(/re-attached to a process the snapshot did not list/);

    // Output is still captured in the current file and reads continue by position.
    const part = await readOutputUntil(second, name, 0, (t) => completeLines(t).length >= 10);
    const numbers = completeLines(part.text);
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));

    const removed = await second
      .rest()
      .call('DELETE', `/svc/app/${name}`, { token: await second.token('admin') });
    expect(removed.status, removed.text()).toBe(200);
    await waitFor(() => groupsOf(name).size === 0, { timeoutMs: 10_000, what: 'the app gone after DELETE' });
  });
});
