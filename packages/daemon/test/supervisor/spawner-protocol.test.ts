// svc-spawner's protocol against the real binary (packages/spawner): spawns, exits held until
// acknowledged, signals, and hostile peers (malformed, oversized, truncated frames, a flood of
// random bytes, a peer of another uid): the spawner must neither crash nor leak (fds, memory).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  openSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeMessage,
  encodeAck,
  encodeHello,
  encodeSignal,
  encodeSpawn,
  FrameReader,
  type Message,
  type SpawnFrame,
} from '../../src/supervisor/spawner/frames.ts';
import { waitFor } from '../helpers/wait-for.ts';

const BINARY = resolve(import.meta.dirname, '../../../spawner/build/svc-spawner');
const BUILD = resolve(import.meta.dirname, '../../../spawner/build.js');

let dir: string;
let spawner: ChildProcess;
let spawnerPid: number;
let keeper: Peer;

class Peer {
  readonly socket: Socket;
  readonly messages: Message[] = [];
  closed = false;
  #reader = new FrameReader();
  constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      for (const payload of this.#reader.push(chunk)) this.messages.push(decodeMessage(payload));
    });
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => undefined);
  }
  static async connect(): Promise<Peer> {
    const socket = createConnection({ path: join(dir, 'spawner.sock') });
    await new Promise<void>((ok, fail) => socket.once('connect', ok).once('error', fail));
    return new Peer(socket);
  }
  send(frame: Buffer): void {
    this.socket.write(frame);
  }
  async reply<T extends Message['type']>(type: T, req?: number): Promise<Extract<Message, { type: T }>> {
    return waitFor(
      () =>
        this.messages.find(
          (m): m is Extract<Message, { type: T }> =>
            m.type === type && (req === undefined || !('req' in m) || m.req === req),
        ),
      { timeoutMs: 10_000, intervalMs: 5, what: `${type} from svc-spawner` },
    );
  }
  async waitClosed(): Promise<void> {
    await waitFor(() => this.closed, {
      timeoutMs: 10_000,
      intervalMs: 5,
      what: 'the spawner to close the connection',
    });
  }
  close(): void {
    this.socket.destroy();
  }
}

function spawnRequest(command: string, extra: Partial<SpawnFrame> = {}): SpawnFrame {
  return {
    tag: `${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}:proto`,
    file: '/bin/sh',
    argv: ['/bin/sh', '-c', command],
    env: ['PATH=/usr/bin:/bin'],
    cwd: '/',
    outputPath: join(dir, 'out.log'),
    stdin: undefined,
    user: undefined,
    cgroupProcs: [],
    ...extra,
  };
}

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
function rssKiB(pid: number): number {
  return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

beforeAll(async () => {
  expect(spawnSync(process.execPath, [BUILD, '--strict'], { encoding: 'utf8' }).status).toBe(0);
  dir = mkdtempSync(join(tmpdir(), 'svc-spawner-'));
  const log = openSync(join(dir, 'spawner.log'), 'a');
  spawner = spawn(BINARY, [dir], { stdio: ['ignore', 'pipe', log], detached: true });
  closeSync(log);
  spawnerPid = await new Promise<number>((ok, fail) => {
    let out = '';
    spawner.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /^ready (\d+)\n/.exec(out);
      if (match !== null) ok(Number(match[1]));
    });
    spawner.once('exit', (code) => fail(new Error(`svc-spawner exited ${code}`)));
  });
  // The spawner leaves once nobody is connected and it holds nothing (as after svcd's last
  // acknowledged exit with no app running): one peer stays connected across the tests.
  keeper = await Peer.connect();
});

afterAll(() => {
  keeper.close();
  spawner.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('svc-spawner protocol (real binary)', () => {
  it('answers HELLO, spawns, reports the exit and keeps it until acknowledged', async () => {
    expect(readFileSync(join(dir, 'spawner.pid'), 'utf8').trim()).toBe(String(spawnerPid));
    const peer = await Peer.connect();
    peer.send(encodeHello(1));
    expect(await peer.reply('hello', 1)).toMatchObject({ version: 1, pid: spawnerPid });
    peer.send(
      encodeSpawn(2, spawnRequest('read line; echo "got $line"; exit 7', { stdin: Buffer.from('meta\n') })),
    );
    const spawned = await peer.reply('spawned', 2);
    const exit = await peer.reply('exit');
    expect(exit).toMatchObject({ id: spawned.id, pid: spawned.pid, code: 7 });
    expect(readFileSync(join(dir, 'out.log'), 'utf8')).toContain('got meta');
    // Held until acknowledged: a second connection (a restarted svcd) lists it with its code.
    const other = await Peer.connect();
    other.send(encodeHello(1));
    await other.reply('hello');
    other.send(Buffer.from([5, 0, 0, 0, 4, 9, 0, 0, 0])); // LIST, req 9
    const list = await other.reply('list', 9);
    expect(list.entries).toContainEqual(expect.objectContaining({ id: spawned.id, exited: true, code: 7 }));
    other.send(encodeAck(10, spawned.id));
    expect(await other.reply('ok', 10)).toMatchObject({ errno: 0 });
    other.send(Buffer.from([5, 0, 0, 0, 4, 11, 0, 0, 0]));
    expect((await other.reply('list', 11)).entries.find((e) => e.id === spawned.id)).toBeUndefined();
    peer.close();
    other.close();
  });

  it('reports spawn failures with the errno and stage, and signals only what it has not reaped', async () => {
    const peer = await Peer.connect();
    peer.send(encodeSpawn(1, spawnRequest('', { file: 'no-such-command-x', argv: ['no-such-command-x'] })));
    expect(await peer.reply('spawnFailed', 1)).toMatchObject({ stage: 6, errno: 2 }); // exec, ENOENT
    peer.send(encodeSpawn(2, spawnRequest('true', { cwd: join(dir, 'missing') })));
    expect(await peer.reply('spawnFailed', 2)).toMatchObject({ stage: 4, errno: 2 }); // chdir
    peer.send(encodeSpawn(3, spawnRequest('true', { outputPath: join(dir, 'missing', 'out') })));
    // (the output file is opened with O_CREAT, in a directory that must exist)
    expect(await peer.reply('spawnFailed', 3)).toMatchObject({ stage: 1 });
    peer.send(encodeSpawn(4, spawnRequest('sleep 30')));
    const spawned = await peer.reply('spawned', 4);
    peer.send(encodeSignal(5, spawned.id, true, 15));
    expect(await peer.reply('ok', 5)).toMatchObject({ errno: 0 });
    expect(await peer.reply('exit')).toMatchObject({ id: spawned.id, code: -15 });
    // Reaped: its pid may be reused now, so the spawner refuses to signal it.
    peer.send(encodeSignal(6, spawned.id, true, 9));
    expect(await peer.reply('ok', 6)).toMatchObject({ errno: 3 }); // ESRCH
    peer.send(encodeAck(7, spawned.id));
    await peer.reply('ok', 7);
    peer.close();
  });

  it('survives hostile frames: each closes only its own connection, nothing leaks', async () => {
    // Warm up allocations first, then measure.
    const baseline = { fds: fdCount(spawnerPid), rss: rssKiB(spawnerPid) };
    const hostile: Buffer[] = [
      Buffer.from([0xff, 0xff, 0xff, 0xff]), // 4 GiB header
      Buffer.concat([Buffer.from([0x01, 0x00, 0x80, 0x00])]), // 8 MiB + 1
      Buffer.from([1, 0, 0, 0, 0x42]), // too short for a request id
      Buffer.from([5, 0, 0, 0, 0x42, 1, 0, 0, 0]), // unknown type
      Buffer.from([5, 0, 0, 0, 4, 1, 0, 0, 0, 0]).subarray(0, 9), // LIST then nothing more (fine)
      Buffer.from([6, 0, 0, 0, 4, 1, 0, 0, 0, 0]), // LIST with a trailing byte
      Buffer.from([13, 0, 0, 0, 2, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]), // string length beyond the frame
      (() => {
        const f = encodeSpawn(1, spawnRequest('true'));
        return f.subarray(0, f.length - 3); // truncated, then the connection ends
      })(),
      (() => {
        const f = Buffer.from(encodeSpawn(1, spawnRequest('true', { env: ['A=xx'] })));
        f[f.indexOf('A=xx') + 2] = 0; // a NUL inside a string
        return f;
      })(),
      (() => {
        // SPAWN: empty strings, no stdin, then an argv count of 2^20 with nothing behind it.
        const payload = Buffer.alloc(26);
        payload[0] = 2;
        payload.writeUInt32LE(1, 1);
        payload.writeUInt32LE(1 << 20, 22);
        return Buffer.concat([Buffer.from([26, 0, 0, 0]), payload]);
      })(),
      Buffer.from([9, 0, 0, 0, 3, 1, 0, 0, 0, 1, 0, 0, 0]), // SIGNAL missing its fields
      Buffer.from([11, 0, 0, 0, 3, 1, 0, 0, 0, 1, 0, 0, 0, 1, 200]), // signal 200
    ];
    for (let round = 0; round < 3; round++) {
      for (const frame of hostile) {
        const peer = await Peer.connect();
        peer.send(frame);
        peer.socket.end();
        await peer.waitClosed();
      }
      for (let i = 0; i < 40; i++) {
        const peer = await Peer.connect();
        const junk = randomBytes(5 + ((i * 37) % 300));
        junk.writeUInt32LE(junk.length - 4, 0);
        peer.send(junk);
        peer.socket.end();
        await peer.waitClosed();
      }
    }
    // More connections than it serves at once: the extra ones are closed, the first ones work.
    const many = await Promise.all(Array.from({ length: 12 }, () => Peer.connect()));
    await waitFor(() => many.filter((p) => p.closed).length >= 4, {
      timeoutMs: 10_000,
      what: 'extra peers refused',
    });
    for (const p of many) p.close();
    // Still alive and serving; no fd left behind; memory bounded.
    const peer = await Peer.connect();
    peer.send(encodeHello(1));
    await peer.reply('hello', 1);
    peer.close();
    // At most the baseline: a connection an earlier case closed without waiting may still have
    // been open in the spawner when the baseline was read.
    await waitFor(() => fdCount(spawnerPid) <= baseline.fds, {
      timeoutMs: 10_000,
      what: 'connection fds released',
    });
    expect(rssKiB(spawnerPid)).toBeLessThan(baseline.rss + 4096);
    expect(existsSync(`/proc/${spawnerPid}`)).toBe(true);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'refuses a peer of another uid (SO_PEERCRED), even on a socket everyone may open',
    async () => {
      chmodSync(dir, 0o755);
      chmodSync(join(dir, 'spawner.sock'), 0o777);
      try {
        const script = `
        const s = require('node:net').createConnection(${JSON.stringify(join(dir, 'spawner.sock'))});
        s.on('connect', () => s.write(Buffer.from([9,0,0,0,1,1,0,0,0,1,0,0,0])));
        let got = 0; s.on('data', (d) => { got += d.length; });
        s.on('close', () => { process.stdout.write(String(got)); });
        s.on('error', () => undefined);`;
        const result = spawnSync(process.execPath, ['-e', script], {
          uid: 65534,
          gid: 65534,
          encoding: 'utf8',
          timeout: 10_000,
        });
        expect(result.stdout).toBe('0'); // connected, answered nothing, closed
        expect(readFileSync(join(dir, 'spawner.log'), 'utf8')).toContain('peer of uid 65534 refused');
        expect(existsSync(`/proc/${spawnerPid}`)).toBe(true);
      } finally {
        chmodSync(join(dir, 'spawner.sock'), 0o600);
        chmodSync(dir, 0o700);
      }
    },
  );
});
