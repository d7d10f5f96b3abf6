// One connection to svc-spawner over its Unix socket. Requests are synchronous: the frame is written
// and the reply read on the socket's own file descriptor before `request` returns, because the
// ProcessRunner port returns a pid synchronously (as Node's spawn does, which also blocks the event
// loop until the child has exec'd; here svcd waits for a tiny process's fork + exec instead of
// forking itself). Exit events arrive asynchronously (the socket's 'data') or during a synchronous
// read; either way they are queued and delivered from a microtask, in the order the spawner sent
// them. Every write is synchronous too, so frames never interleave.
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { dirname } from 'node:path';
import {
  decodeMessage,
  encodeHello,
  encodeList,
  FrameReader,
  PROTOCOL_VERSION,
  type HeldEntry,
  type Message,
} from './frames.ts';

export type ExitEvent = Extract<Message, { type: 'exit' }>;

/** A sun_path holds 108 bytes: longer socket paths are reached through /proc/self/fd/<dir fd>. */
const MAX_SOCKET_PATH = 100;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Pause a synchronous wait without burning the CPU the spawner needs (about 50 µs). */
const pause = (): void => void Atomics.wait(sleeper, 0, 0, 0.05);

export class SpawnerGone extends Error {}

export class SpawnerConnection {
  /** The spawner's pid (from HELLO). */
  pid = 0;
  /** What the spawner held at connect time (LIST). */
  held: HeldEntry[] = [];
  #socket: Socket;
  #fd: number;
  #reader = new FrameReader();
  #nextReq = 1;
  #closed = false;
  #events: ExitEvent[] = [];
  #flushing = false;
  #onExit: (event: ExitEvent) => void = () => undefined;
  #onClose: (reason: string) => void = () => undefined;

  private constructor(socket: Socket, fd: number) {
    this.#socket = socket;
    this.#fd = fd;
  }

  /** Connect, say HELLO (version check) and LIST. Rejects when nobody listens or the peer is not a spawner. */
  static async open(socketPath: string, timeoutMs = 5_000): Promise<SpawnerConnection> {
    let dirFd: number | undefined;
    let path = socketPath;
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
      dirFd = openSync(dirname(socketPath), 'r');
      path = `/proc/self/fd/${dirFd}/${socketPath.slice(dirname(socketPath).length + 1)}`;
    }
    try {
      const socket = await new Promise<Socket>((resolve, reject) => {
        const s = createConnection({ path });
        s.once('connect', () => {
          s.off('error', reject);
          resolve(s);
        });
        s.once('error', reject);
      });
      const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
      if (typeof fd !== 'number' || fd < 0) {
        socket.destroy();
        throw new Error('no file descriptor for the spawner socket');
      }
      const connection = new SpawnerConnection(socket, fd);
      socket.on('data', (chunk: Buffer) => {
        try {
          connection.#ingest(chunk, undefined);
        } catch {
          // the connection is gone (#gone reported it)
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => connection.#gone('connection closed'));
      const hello = connection.#call(encodeHello, timeoutMs);
      if (hello.type !== 'hello' || hello.version !== PROTOCOL_VERSION) {
        connection.close();
        throw new Error(
          `svc-spawner speaks protocol ${hello.type === 'hello' ? hello.version : '?'}, svcd ${PROTOCOL_VERSION}`,
        );
      }
      const list = connection.#call(encodeList, timeoutMs);
      if (list.type !== 'list') {
        connection.close();
        throw new Error('svc-spawner answered LIST with something else');
      }
      connection.pid = hello.pid;
      connection.held = list.entries;
      return connection;
    } finally {
      if (dirFd !== undefined) closeSync(dirFd);
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  onExit(listener: (event: ExitEvent) => void): void {
    this.#onExit = listener;
    this.#flush();
  }

  onClose(listener: (reason: string) => void): void {
    this.#onClose = listener;
  }

  /** Send a request and wait (synchronously) for its reply. Throws SpawnerGone when the spawner is. */
  request(encode: (req: number) => Buffer, timeoutMs = 10_000): Message {
    return this.#call(encode, timeoutMs);
  }

  /** Send a request whose reply nobody waits for (SIGNAL, ACK). Throws SpawnerGone. */
  send(encode: (req: number) => Buffer): void {
    this.#write(encode(this.#nextReq++));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.destroy();
  }

  #call(encode: (req: number) => Buffer, timeoutMs: number): Message {
    const req = this.#nextReq++;
    this.#write(encode(req));
    const deadline = Date.now() + timeoutMs;
    const buffer = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      let n: number;
      try {
        n = readSync(this.#fd, buffer, 0, buffer.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN')
          throw this.#gone(`read: ${(error as Error).message}`);
        if (Date.now() > deadline) throw this.#gone(`no reply within ${timeoutMs} ms`);
        pause();
        continue;
      }
      if (n === 0) throw this.#gone('connection closed');
      const reply = this.#ingest(Buffer.from(buffer.subarray(0, n)), req);
      if (reply !== undefined) return reply;
    }
  }

  #write(frame: Buffer): void {
    if (this.#closed) throw new SpawnerGone('svc-spawner connection is closed');
    let at = 0;
    const deadline = Date.now() + 10_000;
    while (at < frame.length) {
      try {
        at += writeSync(this.#fd, frame, at, frame.length - at);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN')
          throw this.#gone(`write: ${(error as Error).message}`);
        if (Date.now() > deadline) throw this.#gone('the spawner does not read its socket');
        pause();
      }
    }
  }

  /** Decode bytes; queue exits; return the reply to `req` when one is among them. */
  #ingest(chunk: Buffer, req: number | undefined): Message | undefined {
    if (this.#closed) return undefined;
    let payloads: Buffer[];
    let reply: Message | undefined;
    try {
      payloads = this.#reader.push(chunk);
      for (const payload of payloads) {
        const message = decodeMessage(payload);
        if (message.type === 'exit') this.#events.push(message);
        else if (req !== undefined && message.req === req) reply = message;
        // Replies to requests nobody waits for (SIGNAL, ACK) end here.
      }
    } catch (error) {
      throw this.#gone(`protocol error: ${(error as Error).message}`);
    }
    if (this.#events.length > 0) queueMicrotask(() => this.#flush());
    return reply;
  }

  #flush(): void {
    if (this.#flushing) return;
    this.#flushing = true;
    try {
      while (this.#events.length > 0) {
        const event = this.#events.shift() as ExitEvent;
        this.#onExit(event);
      }
    } finally {
      this.#flushing = false;
    }
  }

  #gone(reason: string): SpawnerGone {
    if (!this.#closed) {
      this.#closed = true;
      this.#socket.destroy();
      // Exits already received are still delivered (before the loss is reported).
      this.#flush();
      queueMicrotask(() => this.#onClose(reason));
    }
    return new SpawnerGone(`svc-spawner: ${reason}`);
  }
}
