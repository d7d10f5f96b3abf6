import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LogFullError, WriteAheadLog, decodeLog, encodeBatch } from './write-ahead-log.ts';

const rec = (s: string): Buffer => Buffer.from(s);
const text = (records: Buffer[]): string[] => records.map((r) => r.toString());

describe('write-ahead log: encoding', () => {
  /** A log image: header block, then batches at 4 KiB boundaries. */
  function image(generation: number, batches: string[][], size = 8 * 4096): Buffer {
    const file = Buffer.alloc(size);
    let at = 4096;
    for (const batch of batches) {
      const bytes = encodeBatch(generation, batch.map(rec));
      bytes.copy(file, at);
      at = Math.ceil((at + bytes.length) / 4096) * 4096;
    }
    return file;
  }

  it('reads back whole batches of the current generation in order', () => {
    const { records, tail } = decodeLog(image(3, [['a', 'b'], ['c'], ['']]), 3);
    expect(text(records)).toEqual(['a', 'b', 'c', '']);
    expect(tail).toBe(4 * 4096);
  });

  it('stops at a torn batch: a flipped byte, a cut payload, zeros', () => {
    const file = image(1, [['first'], ['second'], ['third']]);
    file.writeUInt8(file.readUInt8(2 * 4096 + 20) ^ 0xff, 2 * 4096 + 20); // inside "second"
    expect(text(decodeLog(file, 1).records)).toEqual(['first']);
    const cut = image(1, [['first'], ['x'.repeat(5000)]]).subarray(0, 4096 * 2 + 100);
    expect(text(decodeLog(cut, 1).records)).toEqual(['first']);
    expect(decodeLog(Buffer.alloc(4 * 4096), 1).records).toEqual([]);
  });

  it('ignores batches of another generation (left from before a reset)', () => {
    const file = image(1, [['old-1'], ['old-2']]);
    encodeBatch(2, [rec('new')]).copy(file, 4096);
    expect(text(decodeLog(file, 2).records)).toEqual(['new']); // old-2 at the next block: generation 1
    expect(text(decodeLog(file, 1).records)).toEqual([]);
  });

  it('hostile lengths never read past the end', () => {
    const file = image(1, [['a']]);
    file.writeUInt32LE(0xffff_fff0, 4096 + 8);
    expect(decodeLog(file, 1).records).toEqual([]);
    const inner = encodeBatch(1, [rec('abc')]);
    inner.writeUInt32LE(1000, 16); // a record longer than its batch, with a valid crc
    inner.writeUInt32LE(crc32(inner.subarray(16), crc32(inner.subarray(4, 12))), 12);
    const forged = Buffer.alloc(3 * 4096);
    inner.copy(forged, 4096);
    expect(decodeLog(forged, 1).records).toEqual([]);
  });
});

describe('write-ahead log: file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-wal-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a preallocated log, appends durably, reads the records at the next open', async () => {
    const path = join(dir, 'log');
    const { log, records } = await WriteAheadLog.open(path, 64 * 1024);
    expect(records).toEqual([]);
    expect((await stat(path)).size).toBe(64 * 1024);
    await log.append(rec('one'));
    await Promise.all([log.append(rec('two')), log.append(rec('three')), log.append(rec('four'))]);
    expect((await stat(path)).size).toBe(64 * 1024); // overwritten in place, never grown
    await log.close();
    const again = await WriteAheadLog.open(path, 64 * 1024);
    expect(text(again.records)).toEqual(['one', 'two', 'three', 'four']);
    // Group commit: 'two' went out at once, 'three' and 'four' waited for it and shared one write.
    expect(again.log.used).toBe(3 * 4096);
    await again.log.close();
  });

  it('a reset empties it; later appends are the only records read back', async () => {
    const path = join(dir, 'log');
    const { log } = await WriteAheadLog.open(path, 64 * 1024);
    await log.append(rec('before'));
    expect(await log.reset(() => false)).toBe(false); // condition not met: kept
    expect(await log.reset()).toBe(true);
    expect(log.used).toBe(0);
    await log.append(rec('after'));
    await log.close();
    const again = await WriteAheadLog.open(path, 64 * 1024);
    expect(text(again.records)).toEqual(['after']);
    await again.log.close();
  });

  it('refuses with LogFullError what does not fit, in order, and takes appends again after a reset', async () => {
    const path = join(dir, 'log');
    const { log } = await WriteAheadLog.open(path, 4 * 4096); // room for 3 one-block batches
    for (const s of ['a', 'b', 'c']) await log.append(rec(s));
    await expect(log.append(rec('d'))).rejects.toBeInstanceOf(LogFullError);
    await expect(log.append(rec('x'.repeat(20_000)))).rejects.toBeInstanceOf(LogFullError);
    await log.reset();
    await log.append(rec('e'));
    await log.close();
    expect(text((await WriteAheadLog.open(path, 4 * 4096)).records)).toEqual(['e']);
  });

  it('a log with a broken header is set aside and replaced', async () => {
    const path = join(dir, 'log');
    await writeFile(path, Buffer.alloc(3 * 4096, 7));
    const { log, records, discarded } = await WriteAheadLog.open(path, 8 * 4096);
    expect(records).toEqual([]);
    expect(discarded).toMatch(/log\.bad-\d+$/);
    expect((await readdir(dir)).sort()).toEqual(['log', discarded!.slice(dir.length + 1)].sort());
    await log.append(rec('ok'));
    await log.close();
    expect((await readFile(discarded!)).every((b) => b === 7)).toBe(true);
  });
});
