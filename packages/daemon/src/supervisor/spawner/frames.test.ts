import { describe, expect, it } from 'vitest';
import {
  decodeMessage,
  encodeAck,
  encodeHello,
  encodeSignal,
  encodeSpawn,
  FrameError,
  FrameReader,
  MAX_FRAME,
  parseTag,
  REP,
  type SpawnFrame,
} from './frames.ts';

const spawnFrame: SpawnFrame = {
  tag: '0d1f7c2e-7f5b-4a8e-9d6c-1a2b3c4d5e6f:web',
  file: 'sleep',
  argv: ['sleep', '5'],
  env: ['A=1', 'B=é'],
  cwd: '/tmp',
  outputPath: '/proc/1/fd/3',
  stdin: Buffer.from('meta'),
  user: { uid: 1000, gid: 1000, groups: [1000, 27] },
  cgroupProcs: [],
};

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}

describe('spawner frames', () => {
  it('frames requests: u32 LE payload length, type, request id', () => {
    expect(encodeHello(7).toString('hex')).toBe('09000000' + '01' + '07000000' + '01000000');
    expect(encodeAck(2, 9).toString('hex')).toBe('09000000' + '05' + '02000000' + '09000000');
    expect(encodeSignal(3, 4, true, 15).toString('hex')).toBe(
      '0b000000' + '03' + '03000000' + '04000000' + '01' + '0f',
    );
    const spawn = encodeSpawn(5, spawnFrame);
    expect(spawn.readUInt32LE(0)).toBe(spawn.length - 4);
    expect(spawn[4]).toBe(2);
    expect(spawn.readUInt32LE(5)).toBe(5);
    // The strings follow as length + UTF-8 bytes, the tag first.
    expect(spawn.readUInt32LE(9)).toBe(Buffer.byteLength(spawnFrame.tag));
  });

  it('refuses what the spawner would refuse: NUL bytes, oversized requests', () => {
    expect(() => encodeSpawn(1, { ...spawnFrame, env: ['A=\0'] })).toThrow(FrameError);
    expect(() => encodeSpawn(1, { ...spawnFrame, argv: ['a\0b'] })).toThrow(FrameError);
    expect(() => encodeSpawn(1, { ...spawnFrame, cwd: '/x\0' })).toThrow(FrameError);
    expect(() => encodeSpawn(1, { ...spawnFrame, env: ['X=' + 'x'.repeat(MAX_FRAME)] })).toThrow(/exceeds/);
  });

  it('decodes every reply and event, and nothing malformed', () => {
    const payload = (...parts: Buffer[]): Buffer => Buffer.concat(parts);
    expect(decodeMessage(payload(Buffer.from([REP.spawned]), u32(1), u32(2), u32(300)))).toEqual({
      type: 'spawned',
      req: 1,
      id: 2,
      pid: 300,
    });
    const at = 1_795_000_000_123; // epoch ms beyond 2^32: two words
    expect(
      decodeMessage(
        payload(
          Buffer.from([REP.exit]),
          u32(2),
          u32(300),
          u32(-9 >>> 0),
          u32(at % 2 ** 32),
          u32(Math.floor(at / 2 ** 32)),
        ),
      ),
    ).toEqual({ type: 'exit', id: 2, pid: 300, code: -9, exitedAt: at });
    const tag = Buffer.from('t');
    expect(
      decodeMessage(
        payload(
          Buffer.from([REP.list]),
          u32(4),
          u32(1),
          u32(2),
          u32(300),
          Buffer.from([1]),
          u32(7),
          u32(5),
          u32(0),
          u32(1),
          tag,
        ),
      ),
    ).toEqual({
      type: 'list',
      req: 4,
      entries: [{ id: 2, pid: 300, exited: true, code: 7, exitedAt: 5, tag: 't' }],
    });
    // Short, trailing bytes, unknown type, a list count beyond the frame.
    expect(() => decodeMessage(payload(Buffer.from([REP.spawned]), u32(1)))).toThrow(FrameError);
    expect(() => decodeMessage(payload(Buffer.from([REP.ok]), u32(1), u32(0), Buffer.from([0])))).toThrow(
      /trailing/,
    );
    expect(() => decodeMessage(Buffer.from([0x42]))).toThrow(/unknown/);
    expect(() => decodeMessage(Buffer.alloc(0))).toThrow(FrameError);
    expect(() => decodeMessage(payload(Buffer.from([REP.list]), u32(1), u32(0xffffffff)))).toThrow(/count/);
    expect(() =>
      decodeMessage(
        payload(
          Buffer.from([REP.list]),
          u32(1),
          u32(1),
          u32(2),
          u32(3),
          Buffer.from([0]),
          u32(0),
          u32(0),
          u32(0),
          u32(99),
        ),
      ),
    ).toThrow(FrameError);
  });

  it('splits a stream however it is cut, and refuses an oversized header at once', () => {
    const frames = [encodeHello(1), encodeAck(2, 3), encodeSpawn(4, spawnFrame)];
    const stream = Buffer.concat(frames);
    for (const step of [1, 3, 7, stream.length]) {
      const reader = new FrameReader();
      const got: Buffer[] = [];
      for (let at = 0; at < stream.length; at += step)
        got.push(...reader.push(stream.subarray(at, at + step)));
      expect(got.map((p) => p.length)).toEqual(frames.map((f) => f.length - 4));
    }
    expect(() => new FrameReader(16).push(u32(17))).toThrow(/exceeds/);
    expect(new FrameReader(16).push(u32(16))).toEqual([]);
  });

  it('parses tags: <uuid>:<app>, anything else is not ours', () => {
    expect(parseTag(spawnFrame.tag)).toEqual({
      processUuid: '0d1f7c2e-7f5b-4a8e-9d6c-1a2b3c4d5e6f',
      app: 'web',
    });
    expect(parseTag('')).toBeUndefined();
    expect(parseTag('x:web')).toBeUndefined();
    expect(parseTag('0D1F7C2E-7F5B-4A8E-9D6C-1A2B3C4D5E6F:web')).toBeUndefined();
  });
});
