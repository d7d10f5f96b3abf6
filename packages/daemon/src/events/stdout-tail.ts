// STDOUT strategy (spec "Emission rules" 2): one tail per application whose current process has a
// STDOUT subscriber. The child writes work/stdout/<name>.out itself (output-store.ts); the tail
// holds its own read fd on that file and an inotify watch (fs.watch) on it, and reads from its
// last position synchronously as soon as the watch fires: no timer on the path of a line.
//
// - `position` of a chunk is the byte offset of its first byte in the file: the offsets of
//   GET /svc/app/{name}/output (stdout_position / X-Output-Position).
// - A chunk never ends inside a UTF-8 sequence: an incomplete trailing sequence is left unread
//   and re-read with the bytes that complete it (or sent as is by the final drain).
// - The fd and the watch follow the inode, so a rotation (rename to .out.1 at the next start) or
//   a removal of the path does not cut a tail off its file.
import { closeSync, fstatSync, openSync, readSync, watch, type FSWatcher } from 'node:fs';
import { completeUtf8Length } from './utf8.ts';

/** Maximum bytes of output in one STDOUT event. */
export const STDOUT_CHUNK_BYTES = 64 * 1024;
/** Bytes read per turn of the event loop before yielding (setImmediate) to everything else. */
export const STDOUT_TURN_BYTES = 1024 * 1024;

export interface StdoutChunk {
  output: string;
  /** Offset of the first byte of `output` in the file (of the end of the file when finished). */
  position: number;
  finished: boolean;
}

export interface StdoutTailOptions {
  app: string;
  processUuid: string;
  path: string;
  /** 'start' for a process that just started; 'end' to tail only what is written from now on. */
  from: 'start' | 'end';
  emit(chunk: StdoutChunk): void;
  onError(error: Error): void;
}

// Reads are synchronous and their bytes are turned into a string at once: one buffer serves all.
const shared = Buffer.allocUnsafe(STDOUT_CHUNK_BYTES);

export class StdoutTail {
  readonly app: string;
  readonly processUuid: string;
  readonly #options: StdoutTailOptions;
  readonly #fd: number;
  #position: number;
  #watcher: FSWatcher | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #closed = false;

  /** Open the file and start watching it; undefined when the file cannot be opened. */
  static open(options: StdoutTailOptions): StdoutTail | undefined {
    let fd: number;
    try {
      fd = openSync(options.path, 'r');
    } catch {
      return undefined;
    }
    return new StdoutTail(options, fd);
  }

  private constructor(options: StdoutTailOptions, fd: number) {
    this.app = options.app;
    this.processUuid = options.processUuid;
    this.#options = options;
    this.#fd = fd;
    this.#position = options.from === 'end' ? fstatSync(fd).size : 0;
    try {
      this.#watcher = watch(options.path, { persistent: false }, () => this.pump());
      this.#watcher.on('error', () => this.#stopWatching());
    } catch (error) {
      options.onError(error as Error);
    }
    // Bytes written between the open and the watch are found by this first read.
    this.pump();
  }

  get position(): number {
    return this.#position;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Read what is there now, bounded per turn; the rest in the next turn. */
  pump(): void {
    if (this.#closed || this.#immediate !== undefined) return;
    let budget = STDOUT_TURN_BYTES;
    for (;;) {
      const step = this.#read(false);
      if (step.more === false) return;
      budget -= step.bytes;
      if (budget <= 0) {
        this.#immediate = setImmediate(() => {
          this.#immediate = undefined;
          this.pump();
        });
        return;
      }
    }
  }

  /** Stop live delivery: after this only `drain` reads (the process has exited). */
  #stopWatching(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#immediate = undefined;
  }

  /**
   * Final drain, a bounded step of it: reads up to `budget` bytes; true once the end of the file
   * was reached (everything was sent), false when the caller must call again (next turn).
   */
  drain(budget: number = STDOUT_TURN_BYTES): boolean {
    this.#stopWatching();
    if (this.#closed) return true;
    for (;;) {
      const step = this.#read(true);
      if (step.more === false) return true;
      budget -= step.bytes;
      if (budget <= 0) return false;
    }
  }

  /** Send the `finished` chunk and close. */
  finish(): void {
    if (this.#closed) return;
    this.#options.emit({ output: '', position: this.#position, finished: true });
    this.close();
  }

  close(): void {
    if (this.#closed) return;
    this.#stopWatching();
    this.#closed = true;
    try {
      closeSync(this.#fd);
    } catch {
      // already closed
    }
  }

  /** One read of at most one chunk; `more` = a further read may find more bytes right now. */
  #read(final: boolean): { bytes: number; more: boolean } {
    if (this.#closed) return { bytes: 0, more: false };
    let n: number;
    try {
      n = readSync(this.#fd, shared, 0, STDOUT_CHUNK_BYTES, this.#position);
    } catch (error) {
      this.#options.onError(error as Error);
      return { bytes: 0, more: false };
    }
    if (n === 0) return { bytes: 0, more: false };
    const eof = n < STDOUT_CHUNK_BYTES;
    // At the end of the final drain nothing can complete a trailing sequence: send it as is.
    const cut = final && eof ? n : completeUtf8Length(shared, n);
    if (cut === 0) return { bytes: 0, more: false };
    const position = this.#position;
    this.#position += cut;
    this.#options.emit({ output: shared.toString('utf8', 0, cut), position, finished: false });
    return { bytes: cut, more: !eof };
  }
}
