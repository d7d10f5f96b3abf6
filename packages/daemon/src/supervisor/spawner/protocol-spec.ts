// The spawner protocol (spec/spawner-protocol.md) as one typed table: every message with its fields
// in wire order, their encodings and their limits. `npm run gen:spec` renders the message tables of
// spec/spawner-protocol.md from it and encodes spec/spawner-vectors.json with the generic encoder
// below; the two hand-written codecs (frames.ts, and packages/spawner/src/svc-spawner.c) are tested
// against those vectors, so neither can drift from this table. Change the protocol here first.

/** The protocol's constants: svc-spawner.c and frames.ts must hold the same (both are tested). */
export const SPAWNER_LIMITS = {
  /** Protocol version of HELLO. */
  version: 1,
  /** Smallest payload a request may announce: type and request id. */
  minPayload: 5,
  /** Largest payload either side accepts (a SPAWN carries the whole environment). */
  maxPayload: 8 * 1024 * 1024,
  /** Entries of SPAWN's argv and env, each. */
  maxStrings: 1 << 20,
  /** Supplementary groups of SPAWN's user (Linux NGROUPS_MAX). */
  maxGroups: 65536,
  /** cgroup.procs paths of a SPAWN. */
  maxCgroups: 16,
  /** SIGNAL's signal must be below this (Linux NSIG). */
  nsig: 65,
} as const;

export type Scalar = 'u8' | 'flag' | 'u32' | 'i32' | 'u64' | 'str' | 'bytes';

export type FieldType =
  | Scalar
  | { readonly list: FieldType; readonly min?: number; readonly max?: number }
  | { readonly optional: FieldType }
  | { readonly record: readonly Field[] };

export interface Field {
  readonly name: string;
  readonly type: FieldType;
  readonly meaning: string;
}

export interface MessageSpec {
  readonly name: string;
  readonly code: number;
  readonly kind: 'request' | 'reply';
  /** Fields after the type byte, in wire order. */
  readonly fields: readonly Field[];
  readonly meaning: string;
}

/** A decoded value as in spawner-vectors.json: bytes as {"$hex"}, an absent optional as null. */
export type FieldValue =
  | number
  | boolean
  | string
  | null
  | { readonly $hex: string }
  | readonly FieldValue[]
  | { readonly [field: string]: FieldValue };

const requestId: Field = {
  name: 'request_id',
  type: 'u32',
  meaning: 'chosen by the client, echoed by the reply',
};
const entryId: Field = {
  name: 'entry_id',
  type: 'u32',
  meaning: "the spawner's id of the process (SPAWNED)",
};

export const SPAWNER_MESSAGES: readonly MessageSpec[] = [
  {
    name: 'HELLO',
    code: 1,
    kind: 'request',
    meaning: 'The first request of a connection. Reply: HELLO.',
    fields: [requestId, { name: 'version', type: 'u32', meaning: "the client's protocol version" }],
  },
  {
    name: 'SPAWN',
    code: 2,
    kind: 'request',
    meaning: "Start a process. Reply: SPAWNED once it has exec'd, or SPAWN_FAILED.",
    fields: [
      requestId,
      {
        name: 'tag',
        type: 'str',
        meaning: 'kept with the entry and returned by LIST: `<process uuid>:<app name>`',
      },
      { name: 'file', type: 'str', meaning: 'what `execvp` runs (not empty), looked up in `PATH` of `env`' },
      { name: 'cwd', type: 'str', meaning: "working directory, entered as the user; '' = the spawner's" },
      {
        name: 'output_path',
        type: 'str',
        meaning:
          "stdout and stderr, opened `O_WRONLY|O_APPEND|O_CREAT` (0600) by the spawner; '' = /dev/null",
      },
      {
        name: 'stdin',
        type: { optional: 'bytes' },
        meaning: "the child's stdin data (may hold NUL); absent = /dev/null",
      },
      {
        name: 'argv',
        type: { list: 'str', min: 1, max: SPAWNER_LIMITS.maxStrings },
        meaning: 'argv[0] first',
      },
      {
        name: 'env',
        type: { list: 'str', max: SPAWNER_LIMITS.maxStrings },
        meaning: 'exactly the environment, `K=V`',
      },
      {
        name: 'user',
        type: {
          optional: {
            record: [
              { name: 'uid', type: 'u32', meaning: '`setuid`' },
              { name: 'gid', type: 'u32', meaning: '`setgid`' },
              {
                name: 'groups',
                type: { list: 'u32', max: SPAWNER_LIMITS.maxGroups },
                meaning: '`setgroups`',
              },
            ],
          },
        },
        meaning: "the execution user; absent = the spawner's",
      },
      {
        name: 'cgroup_procs',
        type: { list: 'str', max: SPAWNER_LIMITS.maxCgroups },
        meaning: 'cgroup.procs files the child writes itself into before exec',
      },
    ],
  },
  {
    name: 'SIGNAL',
    code: 3,
    kind: 'request',
    meaning: 'Signal a running entry. Reply: OK (0, ESRCH once it has exited, or the errno of `kill`).',
    fields: [
      requestId,
      entryId,
      { name: 'group', type: 'flag', meaning: 'signal its process group (true) or the process alone' },
      { name: 'signal', type: 'u8', meaning: `the signal number, below ${SPAWNER_LIMITS.nsig}` },
    ],
  },
  {
    name: 'LIST',
    code: 4,
    kind: 'request',
    meaning: 'Every entry the spawner holds. Reply: LIST.',
    fields: [requestId],
  },
  {
    name: 'ACK',
    code: 5,
    kind: 'request',
    meaning: 'Forget an exited entry. Reply: OK (0, ESRCH unknown, EBUSY still running).',
    fields: [requestId, entryId],
  },
  {
    name: 'OK',
    code: 0x80,
    kind: 'reply',
    meaning: 'Reply to SIGNAL and ACK.',
    fields: [requestId, { name: 'errno', type: 'i32', meaning: '0 = done' }],
  },
  {
    name: 'HELLO',
    code: 0x81,
    kind: 'reply',
    meaning: 'Reply to HELLO, whatever version the client sent: the client decides.',
    fields: [
      requestId,
      { name: 'version', type: 'u32', meaning: "the spawner's protocol version" },
      { name: 'pid', type: 'u32', meaning: "the spawner's pid" },
    ],
  },
  {
    name: 'SPAWNED',
    code: 0x82,
    kind: 'reply',
    meaning: "Reply to SPAWN: the child has exec'd. Always before that entry's EXIT.",
    fields: [
      requestId,
      { ...entryId, meaning: 'the new entry' },
      { name: 'pid', type: 'u32', meaning: 'its pid' },
    ],
  },
  {
    name: 'SPAWN_FAILED',
    code: 0x83,
    kind: 'reply',
    meaning: 'Reply to SPAWN: nothing runs.',
    fields: [
      requestId,
      { name: 'stage', type: 'u8', meaning: 'where it failed (stages below)' },
      { name: 'errno', type: 'i32', meaning: 'why' },
    ],
  },
  {
    name: 'LIST',
    code: 0x85,
    kind: 'reply',
    meaning: 'Reply to LIST: every entry, running or exited and not acknowledged yet.',
    fields: [
      requestId,
      {
        name: 'entries',
        type: {
          list: {
            record: [
              entryId,
              { name: 'pid', type: 'u32', meaning: 'its pid' },
              { name: 'exited', type: 'flag', meaning: 'reaped' },
              { name: 'code', type: 'i32', meaning: 'exit status, or minus the signal (0 while running)' },
              {
                name: 'exit_time_ms',
                type: 'u64',
                meaning: 'when reaped, ms since the epoch (0 while running)',
              },
              { name: 'tag', type: 'str', meaning: "SPAWN's tag" },
            ],
          },
        },
        meaning: 'each at least 25 bytes',
      },
    ],
  },
  {
    name: 'EXIT',
    code: 0x90,
    kind: 'reply',
    meaning: 'Event, sent to every connected client when an entry is reaped (no request id).',
    fields: [
      entryId,
      { name: 'pid', type: 'u32', meaning: 'its pid' },
      { name: 'code', type: 'i32', meaning: 'exit status, or minus the signal' },
      { name: 'exit_time_ms', type: 'u64', meaning: 'when reaped, ms since the epoch' },
    ],
  },
];

/** Where a spawn failed: SPAWN_FAILED's stage, and the first status byte of `svc-spawner exec`. */
export const SPAWNER_STAGES: readonly { code: number; name: string; meaning: string }[] = [
  { code: 1, name: 'output', meaning: 'opening output_path (or /dev/null), or placing it on fds 1 and 2' },
  { code: 2, name: 'stdin', meaning: 'the stdin pipe or memory file; in exec mode: the frame itself' },
  { code: 3, name: 'fork', meaning: '`pipe2` or `fork`, or no memory left for the entry' },
  { code: 4, name: 'chdir', meaning: 'entering cwd, as the user' },
  { code: 5, name: 'user', meaning: '`setgroups`, `setgid`, `setuid`, or uid 0 could be regained' },
  { code: 6, name: 'exec', meaning: '`execvp`' },
  { code: 7, name: 'cgroup', meaning: 'writing into a cgroup.procs file' },
];

/** The message `name` of `kind`; throws for a name the table lacks (a bug of the caller). */
export function messageSpec(kind: MessageSpec['kind'], name: string): MessageSpec {
  const spec = SPAWNER_MESSAGES.find((m) => m.kind === kind && m.name === name);
  if (spec === undefined) throw new Error(`no ${kind} ${name} in the spawner protocol`);
  return spec;
}

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
}

function encodeValue(type: FieldType, value: FieldValue | undefined, path: string): Buffer[] {
  const wrong = (): Error => new Error(`${path}: ${JSON.stringify(value)} is no ${JSON.stringify(type)}`);
  if (typeof type === 'object') {
    if ('optional' in type)
      return value === null
        ? [Buffer.from([0])]
        : [Buffer.from([1]), ...encodeValue(type.optional, value, path)];
    if ('list' in type) {
      if (!Array.isArray(value)) throw wrong();
      const items = value as readonly FieldValue[];
      return [
        u32(items.length),
        ...items.flatMap((item, i) => encodeValue(type.list, item, `${path}[${i}]`)),
      ];
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw wrong();
    const record = value as { readonly [field: string]: FieldValue };
    return type.record.flatMap((f) => encodeValue(f.type, record[f.name], `${path}.${f.name}`));
  }
  switch (type) {
    case 'flag':
      if (typeof value !== 'boolean') throw wrong();
      return [Buffer.from([value ? 1 : 0])];
    case 'str':
      if (typeof value !== 'string') throw wrong();
      return [u32(Buffer.byteLength(value)), Buffer.from(value, 'utf8')];
    case 'bytes': {
      if (value === null || typeof value !== 'object' || !('$hex' in value)) throw wrong();
      const bytes = Buffer.from(value.$hex as string, 'hex');
      return [u32(bytes.length), bytes];
    }
    default: {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw wrong();
      if (type === 'u8') return [Buffer.from([value])];
      if (type === 'u64') return [u32(value % 2 ** 32), u32(Math.floor(value / 2 ** 32))];
      return [u32(value)]; // u32, i32: the same four bytes
    }
  }
}

/**
 * The payload of `message` with these field values (`type` is ignored), in the table's wire order.
 * Validates types, not limits or rules: malformed vectors are built with it too.
 */
export function encodePayload(
  message: MessageSpec,
  fields: { readonly [field: string]: FieldValue },
): Buffer {
  return Buffer.concat([
    Buffer.from([message.code]),
    ...message.fields.flatMap((f) => encodeValue(f.type, fields[f.name], `${message.name}.${f.name}`)),
  ]);
}

/** A frame: u32 little-endian payload length, then the payload. */
export function frameOf(payload: Buffer): Buffer {
  return Buffer.concat([u32(payload.length), payload]);
}
