// Output that follows a process live by byte position (pure; the detail and run views drive it).
// STDOUT events carry `position` (byte offset of their first byte) and `process_uuid`; a read
// (GET .../output?stdout_position=N) answers bytes from N and the next position. The follower keeps
// `next`, the byte offset up to which it holds the text, appends an event only when it starts
// exactly there, and otherwise asks for a read from `next` (a gap: missed events, a reconnect). A
// new process starts a new section at 0. The kept text is bounded (oldest characters dropped).

export interface OutputEventData {
  output: string;
  position: number;
  finished?: boolean;
  process_uuid?: string;
}

export interface OutputRead {
  /** The position the read started at. */
  position: number;
  output: string;
  /** Byte length read. */
  bytes: number;
  nextPosition: number;
  processUuid: string | undefined;
  /** Set once the process exited (null: exited with an unknown code). */
  exitCode: number | null | undefined;
}

export type FollowResult = 'appended' | 'duplicate' | 'gap';

const encoder = new TextEncoder();

export class OutputFollower {
  /** The text held, oldest first (bounded by `maxChars`). */
  text = '';
  /** Byte offset (in the current process's file) up to which `text` holds output. */
  next = 0;
  processUuid: string | undefined;
  finished = false;
  /** Characters dropped from the front to stay within `maxChars`. */
  dropped = 0;
  readonly #maxChars: number;

  constructor(options: { maxChars?: number; processUuid?: string | undefined; position?: number } = {}) {
    this.#maxChars = options.maxChars ?? 1_000_000;
    this.processUuid = options.processUuid;
    this.next = options.position ?? 0;
  }

  #append(text: string): void {
    this.text += text;
    if (this.text.length > this.#maxChars) {
      const cut = this.text.length - this.#maxChars;
      this.text = this.text.slice(cut);
      this.dropped += cut;
    }
  }

  #newProcess(uuid: string): void {
    if (this.text !== '' && !this.text.endsWith('\n')) this.#append('\n');
    if (this.processUuid !== undefined) this.#append(`──── new process ${uuid.slice(0, 8)} ────\n`);
    this.processUuid = uuid;
    this.next = 0;
    this.finished = false;
  }

  /** Takes a STDOUT event; 'gap' means: read from `next` (then `applyRead`). */
  accept(data: OutputEventData): FollowResult {
    if (data.process_uuid !== undefined && data.process_uuid !== this.processUuid) {
      this.#newProcess(data.process_uuid);
    }
    const bytes = encoder.encode(data.output).byteLength;
    if (data.position + bytes <= this.next && bytes > 0) return 'duplicate';
    if (data.position !== this.next) return 'gap';
    this.#append(data.output);
    this.next += bytes;
    if (data.finished === true) this.finished = true;
    return 'appended';
  }

  /** Takes a read from `read.position`; a read from another position or process is ignored. */
  applyRead(read: OutputRead): boolean {
    if (read.processUuid !== undefined && read.processUuid !== this.processUuid) {
      if (read.position !== 0) return false;
      this.#newProcess(read.processUuid);
    }
    if (read.position !== this.next) return false;
    this.#append(read.output);
    this.next = read.nextPosition;
    if (read.exitCode !== undefined) this.finished = true;
    return true;
  }
}
