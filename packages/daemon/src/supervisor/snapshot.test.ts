import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../log/logger.ts';
import { SnapshotWriter, type SnapshotData } from './snapshot.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('SnapshotWriter', () => {
  it('close() writes the current state at once, even while a throttled write is pausing', async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-snapshot-'));
    const file = join(dir, '.snapshot');
    let pids: number[] = [];
    const collect = (): SnapshotData => ({
      version: 1,
      writtenAt: 0,
      processes: pids.map((pid) => ({ app: `a${pid}`, pid, startTicks: 1, processUuid: 'u', startedAt: 0 })),
      apps: {},
    });
    // A one-hour pause between writes: close() must not wait for it (at shutdown, the pause's
    // unref'd timer would let the process exit before the final write).
    const writer = new SnapshotWriter(file, collect, silentLogger, 3_600_000);
    await writer.flush(); // first write: nothing running
    pids = [42];
    writer.schedule(); // pauses an hour before writing
    const started = Date.now();
    await writer.close();
    expect(Date.now() - started).toBeLessThan(2_000);
    const written = JSON.parse(readFileSync(file, 'utf8')) as SnapshotData;
    expect(written.processes.map((p) => p.pid)).toEqual([42]);
  });
});
