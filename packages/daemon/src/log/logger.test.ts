import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('createLogger', () => {
  it('rotates the file by size and keeps `backups` rotated files, dropping the oldest', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-log-'));
    const file = join(dir, 'server.log');
    const logger = createLogger({ file, maxFileBytes: 1000, backups: 2 });
    for (let i = 0; i < 60; i++) logger.info(`line ${i}`, { filler: 'x'.repeat(100) });
    await logger.close();
    expect((await readdir(dir)).sort()).toEqual(['server.log', 'server.log.1', 'server.log.2']);
    for (const name of ['server.log', 'server.log.1', 'server.log.2'])
      expect((await stat(join(dir, name))).size).toBeLessThanOrEqual(1000);
    // The newest lines are in server.log, the line before them at the end of server.log.1.
    const current = await readFile(file, 'utf8');
    expect(current).toContain('"line 59"');
    const previous = (await readFile(`${file}.1`, 'utf8')).trim().split('\n');
    const firstCurrent = Number(/"line (\d+)"/.exec(current)![1]);
    expect(previous.at(-1)).toContain(`"line ${firstCurrent - 1}"`);
  });

  it('writes at most perWindow lines of one peer, others unaffected, lines without a peer never limited', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-log-'));
    const file = join(dir, 'server.log');
    const logger = createLogger({ file, peerLines: { perWindow: 3, windowMs: 60_000 } });
    for (let i = 0; i < 50; i++) logger.warn('refused', { remote: '10.0.0.1' });
    logger.warn('refused', { remote: '10.0.0.2' });
    for (let i = 0; i < 10; i++) logger.info('no peer');
    await logger.close();
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines.filter((l) => l.includes('10.0.0.1'))).toHaveLength(3);
    expect(lines.filter((l) => l.includes('10.0.0.2'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('no peer'))).toHaveLength(10);
  });
});
