// A small write-ahead log: one preallocated file whose blocks are overwritten in place with O_DSYNC,
// so a durable append costs one write and no file-system journal commit (the size and the blocks
// never change). Concurrent appends are group-committed: while one write runs, later appends wait
// and go out together in the next single write. Used by util/journaled-dir.ts (work/apps) so that an
// acknowledged definition is durable after one write, the YAML file being made durable after the
// answer (and replayed from here after a crash).
//
// Layout: block 0 is the header (magic, generation, crc32). Each batch starts at a 4 KiB boundary:
// magic, generation, length, crc32 of (generation, length, payload), then the payload, a sequence
// of records `u32 length + bytes`. A batch never shares a block with an earlier batch, so a write
// torn by a power loss can only damage itself. Reading stops at the first batch that is not whole
// and of the current generation; a reset bumps the generation (durably) and starts again at 4 KiB.
import { constants } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { fsyncDir } from '@svc/platform/atomic-file';

const BLOCK = 4096;
const HEADER_MAGIC = Buffer.from('SVCWAL01');
const BATCH_MAGIC = 0x5356_4342; // "SVCB"
const BATCH_HEAD = 16;
export const DEFAULT_LOG_BYTES = 512 * 1024;

/** The batch does not fit in what is left of the log: make room (checkpoint, reset) and retry. */
export class LogFullError extends Error {
  constructor() {
    super('write-ahead log full');
    this.name = 'LogFullError';
  }
}

interface Append {
  record: Buffer;
  resolve(): void;
  reject(error: unknown): void;
}

interface Reset {
  when: () => boolean;
  resolve(done: boolean): void;
  reject(error: unknown): void;
}

const alignUp = (n: number): number => Math.ceil(n / BLOCK) * BLOCK;

function header(generation: number): Buffer {
  const block = Buffer.alloc(512);
  HEADER_MAGIC.copy(block, 0);
  block.writeUInt32LE(generation, 8);
  block.writeUInt32LE(crc32(block.subarray(0, 12)), 12);
  return block;
}

function readHeader(block: Buffer): number | undefined {
  if (block.length < 16 || !block.subarray(0, 8).equals(HEADER_MAGIC)) return undefined;
  if (block.readUInt32LE(12) !== crc32(block.subarray(0, 12))) return undefined;
  return block.readUInt32LE(8);
}

/** The bytes of one batch of records (head + payload), unpadded. */
export function encodeBatch(generation: number, records: readonly Buffer[]): Buffer {
  const payloadLength = records.reduce((n, r) => n + 4 + r.length, 0);
  const out = Buffer.alloc(BATCH_HEAD + payloadLength);
  out.writeUInt32LE(BATCH_MAGIC, 0);
  out.writeUInt32LE(generation, 4);
  out.writeUInt32LE(payloadLength, 8);
  let at = BATCH_HEAD;
  for (const r of records) {
    out.writeUInt32LE(r.length, at);
    r.copy(out, at + 4);
    at += 4 + r.length;
  }
  const sum = crc32(out.subarray(BATCH_HEAD), crc32(out.subarray(4, 12)));
  out.writeUInt32LE(sum, 12);
  return out;
}

/**
 * Records of the whole batches of `generation` in `file` (the log's bytes), in order, and the
 * offset after the last one.
 */
export function decodeLog(file: Buffer, generation: number): { records: Buffer[]; tail: number } {
  const records: Buffer[] = [];
  let at = BLOCK;
  while (at + BATCH_HEAD <= file.length) {
    if (file.readUInt32LE(at) !== BATCH_MAGIC || file.readUInt32LE(at + 4) !== generation) break;
    const length = file.readUInt32LE(at + 8);
    const end = at + BATCH_HEAD + length;
    if (end > file.length) break;
    const payload = file.subarray(at + BATCH_HEAD, end);
    if (file.readUInt32LE(at + 12) !== crc32(payload, crc32(file.subarray(at + 4, at + 12)))) break;
    const batch: Buffer[] = [];
    let p = 0;
    for (; p + 4 <= payload.length;) {
      const n = payload.readUInt32LE(p);
      if (p + 4 + n > payload.length) break;
      batch.push(Buffer.from(payload.subarray(p + 4, p + 4 + n)));
      p += 4 + n;
    }
    if (p !== payload.length) break; // a crc collision on nonsense: stop here
    records.push(...batch);
    at = alignUp(end);
  }
  return { records, tail: at };
}

export class WriteAheadLog {
  readonly #handle: FileHandle;
  readonly #size: number;
  #generation: number;
  #tail: number;
  #busy = false;
  #failed: Error | undefined;
  readonly #appends: Append[] = [];
  readonly #resets: Reset[] = [];

  private constructor(handle: FileHandle, size: number, generation: number, tail: number) {
    this.#handle = handle;
    this.#size = size;
    this.#generation = generation;
    this.#tail = tail;
  }

  /**
   * Open (creating it durably when missing) the log at `path`; `records` are those of its current
   * generation, to replay before anything is appended. A log whose header is not valid is renamed
   * aside (`<path>.bad-<time>`) and a new one created; `discarded` then names it.
   */
  static async open(
    path: string,
    size = DEFAULT_LOG_BYTES,
  ): Promise<{ log: WriteAheadLog; records: Buffer[]; discarded?: string }> {
    let discarded: string | undefined;
    let handle = await open(path, constants.O_RDWR | constants.O_DSYNC).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
    if (handle !== undefined) {
      const file = await handle.readFile();
      const generation = readHeader(file.subarray(0, 512));
      if (generation !== undefined && file.length >= 2 * BLOCK) {
        const { records, tail } = decodeLog(file, generation);
        return { log: new WriteAheadLog(handle, file.length, generation, tail), records };
      }
      await handle.close();
      discarded = `${path}.bad-${Date.now()}`;
      await rename(path, discarded);
    }
    handle = await create(path, size);
    return {
      log: new WriteAheadLog(handle, size, 1, BLOCK),
      records: [],
      ...(discarded === undefined ? {} : { discarded }),
    };
  }

  /** Bytes used by batches since the last reset. */
  get used(): number {
    return this.#tail - BLOCK;
  }

  /**
   * Append one record; resolves once it is durable. Issued at once (synchronously) when no write
   * runs; otherwise it goes with the next batch. LogFullError when it does not fit.
   */
  append(record: Buffer): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.#failed !== undefined) {
        reject(this.#failed);
        return;
      }
      this.#appends.push({ record, resolve, reject });
      this.#next();
    });
  }

  /**
   * Start a new generation (the log becomes empty) once the running write ended, if `when()` still
   * holds then; resolves true when it did. Appends made meanwhile go after it.
   */
  reset(when: () => boolean = () => true): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#resets.push({ when, resolve, reject });
      this.#next();
    });
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }

  #next(): void {
    if (this.#busy) return;
    const reset = this.#resets.shift();
    if (reset !== undefined) {
      this.#runReset(reset);
      return;
    }
    if (this.#appends.length === 0) return;
    const batch: Append[] = [];
    let bytes = BATCH_HEAD;
    while (this.#appends.length > 0) {
      const next = this.#appends[0]!;
      if (this.#tail + bytes + 4 + next.record.length > this.#size) break;
      bytes += 4 + next.record.length;
      batch.push(this.#appends.shift()!);
    }
    if (batch.length === 0) {
      // The first waiting record does not fit: it and every later one (order is kept) are refused.
      for (const a of this.#appends.splice(0)) a.reject(new LogFullError());
      return;
    }
    const data = encodeBatch(
      this.#generation,
      batch.map((a) => a.record),
    );
    const at = this.#tail;
    this.#busy = true;
    writeAll(this.#handle, data, at).then(
      () => {
        this.#tail = alignUp(at + data.length);
        this.#busy = false;
        for (const a of batch) a.resolve();
        this.#next();
      },
      (error: unknown) => {
        // What reached the disk is unknown: refuse every later append (until the next open).
        this.#failed = error instanceof Error ? error : new Error(String(error));
        this.#busy = false;
        for (const a of [...batch, ...this.#appends.splice(0)]) a.reject(error);
      },
    );
  }

  #runReset(reset: Reset): void {
    if (!reset.when() || this.#failed !== undefined) {
      reset.resolve(false);
      this.#next();
      return;
    }
    if (this.#tail === BLOCK) {
      reset.resolve(true);
      this.#next();
      return;
    }
    const generation = this.#generation + 1;
    this.#busy = true;
    writeAll(this.#handle, header(generation), 0).then(
      () => {
        this.#generation = generation;
        this.#tail = BLOCK;
        this.#busy = false;
        reset.resolve(true);
        this.#next();
      },
      (error: unknown) => {
        this.#failed = error instanceof Error ? error : new Error(String(error));
        this.#busy = false;
        reset.reject(error);
        for (const a of this.#appends.splice(0)) a.reject(error);
      },
    );
  }
}

/** A new log of `size` zero bytes (every block allocated and written) with a header, durably. */
async function create(path: string, size: number): Promise<FileHandle> {
  const temp = join(dirname(path), `.tmp-${basename(path)}`);
  await rm(temp, { force: true });
  const handle = await open(temp, 'wx', 0o600);
  try {
    const zeros = Buffer.alloc(Math.max(alignUp(size), 2 * BLOCK));
    header(1).copy(zeros, 0);
    await writeAll(handle, zeros, 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
  await fsyncDir(dirname(path));
  return open(path, constants.O_RDWR | constants.O_DSYNC);
}

async function writeAll(handle: FileHandle, data: Buffer, position: number): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset, position + offset);
    offset += bytesWritten;
  }
}
