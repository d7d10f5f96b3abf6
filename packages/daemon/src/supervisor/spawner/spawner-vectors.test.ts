// svcd's half of the spawner protocol against spec/spawner-vectors.json (the C half is
// packages/spawner/test/frames-vectors.test.ts): frames.ts encodes every request case to exactly
// its bytes, decodes every reply case to exactly its fields, refuses every malformed reply, and
// reads the status bytes of `svc-spawner exec`.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  decodeExecStatus,
  decodeMessage,
  encodeAck,
  encodeHello,
  encodeList,
  encodeSignal,
  encodeSpawn,
  FrameError,
  FrameReader,
  MAX_FRAME,
  type Message,
  PROTOCOL_VERSION,
  REP,
  REQ,
  STAGE,
} from './frames.ts';
import { type FieldValue, SPAWNER_LIMITS, SPAWNER_MESSAGES, SPAWNER_STAGES } from './protocol-spec.ts';
import type { DecodedFields, SpawnerVector } from './spawner-vectors.ts';

const vectors = JSON.parse(
  readFileSync(new URL('../../../../../spec/spawner-vectors.json', import.meta.url), 'utf8'),
) as SpawnerVector[];

const valid = (kind: SpawnerVector['kind']): [string, SpawnerVector][] =>
  vectors.filter((v) => v.kind === kind && v.decoded !== undefined).map((v) => [v.name, v]);
const malformed = (kind: SpawnerVector['kind']): [string, SpawnerVector][] =>
  vectors.filter((v) => v.kind === kind && v.refused !== undefined).map((v) => [v.name, v]);

type Record_ = { readonly [field: string]: FieldValue };
const str = (v: FieldValue | undefined): string => v as string;
const num = (v: FieldValue | undefined): number => v as number;
const strs = (v: FieldValue | undefined): string[] => [...(v as readonly string[])];

/** The request in `decoded`, encoded by frames.ts. */
function encodeRequest(d: DecodedFields): Buffer {
  const req = num(d['request_id']);
  switch (d.type) {
    case 'HELLO':
      // frames.ts always sends its own version: the vectors hold that one.
      expect(d['version']).toBe(PROTOCOL_VERSION);
      return encodeHello(req);
    case 'SPAWN': {
      const stdin = d['stdin'] as { $hex: string } | null;
      const user = d['user'] as Record_ | null;
      return encodeSpawn(req, {
        tag: str(d['tag']),
        file: str(d['file']),
        cwd: str(d['cwd']),
        outputPath: str(d['output_path']),
        stdin: stdin === null ? undefined : Buffer.from(stdin.$hex, 'hex'),
        argv: strs(d['argv']),
        env: strs(d['env']),
        user:
          user === null
            ? undefined
            : { uid: num(user['uid']), gid: num(user['gid']), groups: [...(user['groups'] as number[])] },
        cgroupProcs: strs(d['cgroup_procs']),
      });
    }
    case 'SIGNAL':
      return encodeSignal(req, num(d['entry_id']), d['group'] as boolean, num(d['signal']));
    case 'LIST':
      return encodeList(req);
    case 'ACK':
      return encodeAck(req, num(d['entry_id']));
    default:
      throw new Error(`no request ${d.type}`);
  }
}

/** frames.ts's Message in the spec's field names. */
function toSpec(m: Message): DecodedFields {
  switch (m.type) {
    case 'ok':
      return { type: 'OK', request_id: m.req, errno: m.errno };
    case 'hello':
      return { type: 'HELLO', request_id: m.req, version: m.version, pid: m.pid };
    case 'spawned':
      return { type: 'SPAWNED', request_id: m.req, entry_id: m.id, pid: m.pid };
    case 'spawnFailed':
      return { type: 'SPAWN_FAILED', request_id: m.req, stage: m.stage, errno: m.errno };
    case 'list':
      return {
        type: 'LIST',
        request_id: m.req,
        entries: m.entries.map((e) => ({
          entry_id: e.id,
          pid: e.pid,
          exited: e.exited,
          code: e.code,
          exit_time_ms: e.exitedAt,
          tag: e.tag,
        })),
      };
    case 'exit':
      return { type: 'EXIT', entry_id: m.id, pid: m.pid, code: m.code, exit_time_ms: m.exitedAt };
  }
}

/** Every payload of `hex` read as svcd reads its socket, decoded. Throws FrameError. */
function readReplies(hex: string): Message[] {
  return new FrameReader().push(Buffer.from(hex, 'hex')).map(decodeMessage);
}

describe('spec/spawner-vectors.json against frames.ts', () => {
  it('covers every message of the protocol, valid and malformed, with unique names', () => {
    const names = vectors.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    for (const m of SPAWNER_MESSAGES) {
      const kind = m.kind;
      const covered = valid(kind).some(([, v]) => (v.decoded as DecodedFields).type === m.name);
      expect(covered, `${kind} ${m.name} has a vector`).toBe(true);
    }
    expect(malformed('request').length).toBeGreaterThan(0);
    expect(malformed('reply').length).toBeGreaterThan(0);
    expect(valid('status').length).toBeGreaterThan(0);
  });

  it("holds frames.ts's constants: version, payload bound, type codes, stages", () => {
    expect(PROTOCOL_VERSION).toBe(SPAWNER_LIMITS.version);
    expect(MAX_FRAME).toBe(SPAWNER_LIMITS.maxPayload);
    const codes = (kind: 'request' | 'reply'): Record<string, number> =>
      Object.fromEntries(SPAWNER_MESSAGES.filter((m) => m.kind === kind).map((m) => [m.name, m.code]));
    expect(codes('request')).toEqual({
      HELLO: REQ.hello,
      SPAWN: REQ.spawn,
      SIGNAL: REQ.signal,
      LIST: REQ.list,
      ACK: REQ.ack,
    });
    expect(codes('reply')).toEqual({
      OK: REP.ok,
      HELLO: REP.hello,
      SPAWNED: REP.spawned,
      SPAWN_FAILED: REP.spawnFailed,
      LIST: REP.list,
      EXIT: REP.exit,
    });
    expect(Object.fromEntries(SPAWNER_STAGES.map((s) => [s.name, s.code]))).toEqual(STAGE);
  });

  it.each(valid('request'))('encodes request %s to exactly its bytes', (_name, v) => {
    expect(encodeRequest(v.decoded as DecodedFields).toString('hex')).toBe(v.hex);
  });

  it.each(valid('reply'))('decodes reply %s to exactly its fields', (_name, v) => {
    expect(readReplies(v.hex).map(toSpec)).toEqual([v.decoded]);
  });

  it.each(malformed('reply'))('refuses reply %s', (_name, v) => {
    expect(() => readReplies(v.hex)).toThrow(FrameError);
  });

  it.each(valid('status'))('reads exec status %s', (_name, v) => {
    expect(decodeExecStatus(Buffer.from(v.hex, 'hex'))).toEqual(v.decoded);
  });

  it('reads no status from an exec that closed its status descriptor without a word', () => {
    expect(decodeExecStatus(Buffer.alloc(0))).toBeUndefined();
  });
});
