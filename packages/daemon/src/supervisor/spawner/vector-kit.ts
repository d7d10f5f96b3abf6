// The parts spec/spawner-vectors.json is built from (spawner-vectors.ts, spawner-vectors-refused.ts):
// the vector's shape, the frames encoded by protocol-spec.ts's generic encoder, and the edits that
// turn a valid frame into a malformed one.

import { type FieldValue, encodePayload, frameOf, messageSpec } from './protocol-spec.ts';

/** Decoded fields as in the JSON: `type` is the message name, the rest its fields (snake_case). */
export type DecodedFields = { readonly type: string } & { readonly [field: string]: FieldValue };

export interface SpawnerVector {
  /** Unique and stable: the test name in every suite. */
  name: string;
  /** request: svcd → spawner; reply: spawner → svcd (EXIT included); status: `svc-spawner exec`'s bytes. */
  kind: 'request' | 'reply' | 'status';
  description: string;
  /** The whole frame (length header and payload), or the 5 status bytes; lowercase hex. */
  hex: string;
  /** Present when the bytes are valid: what decoding them gives, and what encoding it must give. */
  decoded?: DecodedFields | { readonly stage: number; readonly errno: number };
  /** Requests only: whether `svc-spawner exec` runs this frame (a SPAWN, no output path, no stdin). */
  exec_mode?: boolean;
  /** Present when the bytes must be refused (the connection closed): the rule they break. */
  refused?: Rule;
}

/** The rules of spec/spawner-protocol.md "What closes a connection". */
export type Rule = 'length' | 'type' | 'truncated' | 'trailing' | 'count' | 'nul' | 'value';

// Linux errno numbers (asm-generic, as on x86-64 and arm64): the spawner and svcd share one host.
export const EPERM = 1;
export const ENOENT = 2;
export const ESRCH = 3;
export const EACCES = 13;
export const EBUSY = 16;
export const EPROTO = 71;
export const EMSGSIZE = 90;

export const TAG = '0d1f7c2e-7f5b-4a8e-9d6c-1a2b3c4d5e6f:web';
/** Epoch ms above 2^32: the u64's high word matters. */
export const EXIT_TIME = 1_795_000_000_123;
export const U32_MAX = 0xffffffff;
/** Linux PID_MAX_LIMIT: the largest pid a process can have. */
export const PID_MAX = 4_194_304;

export const hex = (b: Buffer): string => b.toString('hex');
export const bytes = (data: Buffer): { $hex: string } => ({ $hex: hex(data) });

export function payload(kind: 'request' | 'reply', decoded: DecodedFields): Buffer {
  return encodePayload(messageSpec(kind, decoded.type), decoded);
}

export function valid(
  kind: 'request' | 'reply',
  name: string,
  description: string,
  decoded: DecodedFields,
): SpawnerVector {
  const vector: SpawnerVector = {
    name: `${kind}-${name}`,
    kind,
    description,
    hex: hex(frameOf(payload(kind, decoded))),
    decoded,
  };
  if (kind === 'request')
    vector.exec_mode = decoded.type === 'SPAWN' && decoded['output_path'] === '' && decoded['stdin'] === null;
  return vector;
}

export function refused(
  kind: 'request' | 'reply',
  name: string,
  rule: Rule,
  why: string,
  frame: Buffer,
): SpawnerVector {
  const vector: SpawnerVector = {
    name: `${kind}-${name}`,
    kind,
    description: why,
    hex: hex(frame),
    refused: rule,
  };
  if (kind === 'request') vector.exec_mode = false;
  return vector;
}

/** `decoded` encoded, then its payload changed by `edit` (the header follows the new length). */
export function edited(
  kind: 'request' | 'reply',
  decoded: DecodedFields,
  edit: (p: Buffer) => Buffer,
): Buffer {
  return frameOf(edit(payload(kind, decoded)));
}

/** A header alone, announcing `length` bytes: refused before any payload is read. */
export function header(length: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(length);
  return b;
}

export function patchU32(p: Buffer, at: number, value: number): Buffer {
  const copy = Buffer.from(p);
  copy.writeUInt32LE(value, at);
  return copy;
}

/** Offset of the u32 length of the `index`th str of a SPAWN payload (0 = tag). */
export function spawnStrOffset(p: Buffer, index: number): number {
  let at = 5;
  for (let i = 0; i < index; i++) at += 4 + p.readUInt32LE(at);
  return at;
}

export const minimalSpawn = {
  type: 'SPAWN',
  request_id: 1,
  tag: '',
  file: 'true',
  cwd: '',
  output_path: '',
  stdin: null,
  argv: ['true'],
  env: [],
  user: null,
  cgroup_procs: [],
} as const satisfies DecodedFields;

export const fullSpawn = {
  ...minimalSpawn,
  request_id: 5,
  tag: TAG,
  file: 'sleep',
  cwd: '/srv/web',
  output_path: '/proc/4242/fd/31',
  stdin: bytes(Buffer.from('{"app":"web"}\n')),
  argv: ['sleep', '60'],
  env: ['PATH=/usr/bin:/bin', 'LANG=C.UTF-8', 'GREETING=gr\u00fc\u00dfe \u65e5\u672c'],
  user: { uid: 1000, gid: 1000, groups: [1000, 27, 100] },
  cgroup_procs: ['/sys/fs/cgroup/svc/web/cgroup.procs'],
} as const satisfies DecodedFields;
