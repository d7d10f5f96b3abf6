// svcd's side of the spawner protocol (spec/spawner-protocol.md): it encodes requests and decodes
// replies, pure, no I/O; svc-spawner.c has the other two halves. A frame is a u32 little-endian
// payload length, then the payload: u8 type, u32 request id (events: the first field instead), then
// the type's fields. Strings are u32 length + bytes; lists are u32 count + items. Every frame of
// spec/spawner-vectors.json is checked against this file (spawner-vectors.test.ts).

import { constants as osConstants } from 'node:os';

export const PROTOCOL_VERSION = 1;
/** Largest payload either side accepts (a SPAWN carries the whole environment). */
export const MAX_FRAME = 8 * 1024 * 1024;

export const REQ = { hello: 1, spawn: 2, signal: 3, list: 4, ack: 5 } as const;
export const REP = {
  ok: 0x80,
  hello: 0x81,
  spawned: 0x82,
  spawnFailed: 0x83,
  list: 0x85,
  exit: 0x90,
} as const;
/** Where a spawn failed (SPAWN_FAILED's stage). */
export const STAGE = { output: 1, stdin: 2, fork: 3, chdir: 4, user: 5, exec: 6, cgroup: 7 } as const;

export interface SpawnFrame {
  /** Kept by the spawner with the process and returned by LIST: `<process uuid>:<app name>`. */
  tag: string;
  file: string;
  argv: string[];
  env: string[];
  cwd: string;
  /** Opened by the spawner O_WRONLY|O_APPEND for stdout and stderr; '' = /dev/null. */
  outputPath: string;
  stdin: Buffer | undefined;
  user: { uid: number; gid: number; groups: readonly number[] } | undefined;
  /** cgroup.procs files the child writes itself into before exec. */
  cgroupProcs: readonly string[];
}

export interface HeldEntry {
  id: number;
  pid: number;
  exited: boolean;
  /** Exit status or minus the signal number (when exited). */
  code: number;
  /** When the spawner reaped it, epoch ms (0 while running). */
  exitedAt: number;
  tag: string;
}

export type Message =
  | { type: 'ok'; req: number; errno: number }
  | { type: 'hello'; req: number; version: number; pid: number }
  | { type: 'spawned'; req: number; id: number; pid: number }
  | { type: 'spawnFailed'; req: number; stage: number; errno: number }
  | { type: 'list'; req: number; entries: HeldEntry[] }
  | { type: 'exit'; id: number; pid: number; code: number; exitedAt: number };

export class FrameError extends Error {}

function errnoName(errno: number): string {
  for (const [name, value] of Object.entries(osConstants.errno)) if (value === errno) return name;
  return `errno ${errno}`;
}

function stageName(stage: number): string {
  for (const [name, value] of Object.entries(STAGE)) if (value === stage) return name;
  return `stage ${stage}`;
}

/**
 * A child's report of why it never ran (SPAWN_FAILED, or `svc-spawner exec`'s status bytes): the
 * message and the shell-like exit code (127 not found, 126 not executable, 1 otherwise) both
 * runners report.
 */
export function describeSpawnFailure(
  stage: number,
  errno: number,
  file: string,
  cwd: string | undefined,
): { message: string; exitCode: number } {
  const code = errnoName(errno);
  const where = code === 'ENOENT' && cwd !== undefined ? ` (command or working_dir ${cwd})` : '';
  const what =
    stage === STAGE.exec || stage === STAGE.chdir ? `spawn ${file} ${code}${where}` : `${stageName(stage)}: ${code}`;
  const exitCode = code === 'ENOENT' ? 127 : code === 'EACCES' || code === 'ENOEXEC' ? 126 : 1;
  return { message: `spawn failed: ${what}`, exitCode };
}

/** Why `svc-spawner exec` did not run its program: 5 status bytes (u8 stage, i32 errno LE); none = it exec'd. */
export function decodeExecStatus(bytes: Buffer): { stage: number; errno: number } | undefined {
  return bytes.length >= 5 ? { stage: bytes[0] as number, errno: bytes.readInt32LE(1) } : undefined;
}

class Writer {
  #chunks: Buffer[] = [];
  #length = 0;
  u8(v: number): this {
    return this.raw(Buffer.from([v & 0xff]));
  }
  u32(v: number): this {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32LE(v >>> 0);
    return this.raw(b);
  }
  bytes(b: Buffer): this {
    return this.u32(b.length).raw(b);
  }
  str(s: string): this {
    return this.bytes(Buffer.from(s, 'utf8'));
  }
  strs(list: readonly string[]): this {
    this.u32(list.length);
    for (const s of list) this.str(s);
    return this;
  }
  raw(b: Buffer): this {
    this.#chunks.push(b);
    this.#length += b.length;
    return this;
  }
  /** The frame: length header + payload. Throws FrameError when the payload exceeds MAX_FRAME. */
  frame(): Buffer {
    if (this.#length > MAX_FRAME)
      throw new FrameError(`request of ${this.#length} bytes exceeds the spawner's ${MAX_FRAME}`);
    const header = Buffer.allocUnsafe(4);
    header.writeUInt32LE(this.#length);
    return Buffer.concat([header, ...this.#chunks], 4 + this.#length);
  }
}

export const encodeHello = (req: number): Buffer =>
  new Writer().u8(REQ.hello).u32(req).u32(PROTOCOL_VERSION).frame();
export const encodeList = (req: number): Buffer => new Writer().u8(REQ.list).u32(req).frame();
export const encodeAck = (req: number, id: number): Buffer =>
  new Writer().u8(REQ.ack).u32(req).u32(id).frame();
export const encodeSignal = (req: number, id: number, group: boolean, signal: number): Buffer =>
  new Writer()
    .u8(REQ.signal)
    .u32(req)
    .u32(id)
    .u8(group ? 1 : 0)
    .u8(signal)
    .frame();

/** Strings the spawner passes to exec must not hold NUL (it refuses the frame): checked here first. */
function noNul(what: string, values: readonly string[]): void {
  for (const v of values) if (v.includes('\0')) throw new FrameError(`${what} contains a NUL byte`);
}

export function encodeSpawn(req: number, s: SpawnFrame): Buffer {
  noNul('command', [s.file, ...s.argv]);
  noNul('environment', s.env);
  noNul('working_dir', [s.cwd]);
  const w = new Writer().u8(REQ.spawn).u32(req).str(s.tag).str(s.file).str(s.cwd).str(s.outputPath);
  if (s.stdin === undefined) w.u8(0);
  else w.u8(1).bytes(s.stdin);
  w.strs(s.argv).strs(s.env);
  if (s.user === undefined) w.u8(0);
  else {
    w.u8(1).u32(s.user.uid).u32(s.user.gid).u32(s.user.groups.length);
    for (const g of s.user.groups) w.u32(g);
  }
  return w.strs(s.cgroupProcs).frame();
}

class Reader {
  #at = 0;
  readonly #b: Buffer;
  constructor(b: Buffer) {
    this.#b = b;
  }
  #need(n: number): void {
    if (this.#at + n > this.#b.length) throw new FrameError('frame too short');
  }
  u8(): number {
    this.#need(1);
    return this.#b[this.#at++] as number;
  }
  u32(): number {
    this.#need(4);
    const v = this.#b.readUInt32LE(this.#at);
    this.#at += 4;
    return v;
  }
  /** u64 (two u32 LE words), as a double: exact for epoch milliseconds. */
  u64(): number {
    const low = this.u32();
    return this.u32() * 2 ** 32 + low;
  }
  i32(): number {
    this.#need(4);
    const v = this.#b.readInt32LE(this.#at);
    this.#at += 4;
    return v;
  }
  str(): string {
    const n = this.u32();
    this.#need(n);
    const s = this.#b.toString('utf8', this.#at, this.#at + n);
    this.#at += n;
    return s;
  }
  end(): void {
    if (this.#at !== this.#b.length) throw new FrameError('trailing bytes in frame');
  }
}

/** Decode one payload (without its length header). Throws FrameError on anything malformed. */
export function decodeMessage(payload: Buffer): Message {
  const r = new Reader(payload);
  const type = r.u8();
  let message: Message;
  switch (type) {
    case REP.ok:
      message = { type: 'ok', req: r.u32(), errno: r.i32() };
      break;
    case REP.hello:
      message = { type: 'hello', req: r.u32(), version: r.u32(), pid: r.u32() };
      break;
    case REP.spawned:
      message = { type: 'spawned', req: r.u32(), id: r.u32(), pid: r.u32() };
      break;
    case REP.spawnFailed:
      message = { type: 'spawnFailed', req: r.u32(), stage: r.u8(), errno: r.i32() };
      break;
    case REP.list: {
      const req = r.u32();
      const count = r.u32();
      if (count > payload.length / 25) throw new FrameError('list count exceeds the frame');
      const entries: HeldEntry[] = [];
      for (let i = 0; i < count; i++)
        entries.push({
          id: r.u32(),
          pid: r.u32(),
          exited: r.u8() !== 0,
          code: r.i32(),
          exitedAt: r.u64(),
          tag: r.str(),
        });
      message = { type: 'list', req, entries };
      break;
    }
    case REP.exit:
      message = { type: 'exit', id: r.u32(), pid: r.u32(), code: r.i32(), exitedAt: r.u64() };
      break;
    default:
      throw new FrameError(`unknown message type ${type}`);
  }
  r.end();
  return message;
}

/** Splits a byte stream into payloads; a header announcing more than `max` bytes is an error. */
export class FrameReader {
  #buffer: Buffer = Buffer.alloc(0);
  readonly #max: number;
  constructor(max = MAX_FRAME) {
    this.#max = max;
  }
  /** Append bytes; returns the complete payloads now available. Throws FrameError (stream dead). */
  push(chunk: Buffer): Buffer[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const payloads: Buffer[] = [];
    let at = 0;
    while (this.#buffer.length - at >= 4) {
      const length = this.#buffer.readUInt32LE(at);
      if (length > this.#max) throw new FrameError(`frame of ${length} bytes exceeds ${this.#max}`);
      if (this.#buffer.length - at - 4 < length) break;
      payloads.push(Buffer.from(this.#buffer.subarray(at + 4, at + 4 + length)));
      at += 4 + length;
    }
    this.#buffer = at === 0 ? this.#buffer : Buffer.from(this.#buffer.subarray(at));
    return payloads;
  }
}

/** Tag of a spawned process: `<uuid>:<app>`; undefined for anything else. */
export function parseTag(tag: string): { processUuid: string; app: string } | undefined {
  const colon = tag.indexOf(':');
  if (colon !== 36) return undefined;
  const processUuid = tag.slice(0, 36);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(processUuid)) return undefined;
  return { processUuid, app: tag.slice(37) };
}
