// The malformed frames of spec/spawner-vectors.json, each with the rule of spec/spawner-protocol.md
// "What closes a connection" it breaks: svc-spawner.c must refuse every request here (on the socket
// and in exec mode), frames.ts every reply.

import { type FieldValue, SPAWNER_LIMITS, frameOf } from './protocol-spec.ts';
import {
  type DecodedFields,
  EXIT_TIME,
  type Rule,
  type SpawnerVector,
  U32_MAX,
  edited,
  fullSpawn,
  header,
  patchU32,
  payload,
  refused,
  spawnStrOffset,
} from './vector-kit.ts';

/** Requests other than SPAWN breaking each rule, and headers refused before any payload. */
export function refusedRequests(): SpawnerVector[] {
  const bad = (name: string, rule: Rule, why: string, frame: Buffer): SpawnerVector =>
    refused('request', name, rule, why, frame);
  const hello = { type: 'HELLO', request_id: 1, version: 1 } as const;
  const { maxPayload, minPayload } = SPAWNER_LIMITS;
  return [
    bad(
      'header-over-limit',
      'length',
      `A header announcing ${maxPayload} + 1 bytes: refused from the header alone.`,
      header(maxPayload + 1),
    ),
    bad('header-max', 'length', 'A header announcing 0xffffffff bytes.', header(U32_MAX)),
    bad(
      'header-under-minimum',
      'length',
      `A payload of ${minPayload - 1} bytes cannot hold a type and a request id.`,
      Buffer.concat([header(minPayload - 1), Buffer.from([1, 1, 0, 0])]),
    ),
    bad('header-zero', 'length', 'An empty payload.', header(0)),
    bad(
      'unknown-type-0',
      'type',
      'Type 0 is no request.',
      edited('request', hello, (p) => Buffer.concat([Buffer.from([0]), p.subarray(1)])),
    ),
    bad(
      'unknown-type-6',
      'type',
      'Type 6 is no request.',
      edited('request', hello, (p) => Buffer.concat([Buffer.from([6]), p.subarray(1)])),
    ),
    bad(
      'reply-type',
      'type',
      'An OK reply sent to the spawner.',
      frameOf(payload('reply', { type: 'OK', request_id: 1, errno: 0 })),
    ),
    bad(
      'hello-truncated',
      'truncated',
      'HELLO without its version.',
      edited('request', hello, (p) => p.subarray(0, 5)),
    ),
    bad(
      'hello-trailing-byte',
      'trailing',
      'HELLO with one byte after its last field.',
      edited('request', hello, (p) => Buffer.concat([p, Buffer.from([0])])),
    ),
    bad(
      'list-trailing-byte',
      'trailing',
      'LIST with one byte after the request id.',
      edited('request', { type: 'LIST', request_id: 7 }, (p) => Buffer.concat([p, Buffer.from([0])])),
    ),
    bad(
      'ack-truncated',
      'truncated',
      'ACK with 3 bytes of its entry id.',
      edited('request', { type: 'ACK', request_id: 2, entry_id: 9 }, (p) => p.subarray(0, 8)),
    ),
    bad(
      'signal-truncated',
      'truncated',
      'SIGNAL without its signal byte.',
      edited('request', { type: 'SIGNAL', request_id: 3, entry_id: 4, group: true, signal: 15 }, (p) =>
        p.subarray(0, p.length - 1),
      ),
    ),
    bad(
      'signal-nsig',
      'value',
      `Signal ${SPAWNER_LIMITS.nsig}: no signal has that number.`,
      frameOf(
        payload('request', {
          type: 'SIGNAL',
          request_id: 3,
          entry_id: 4,
          group: false,
          signal: SPAWNER_LIMITS.nsig,
        }),
      ),
    ),
    bad(
      'signal-255',
      'value',
      'Signal 255.',
      frameOf(payload('request', { type: 'SIGNAL', request_id: 3, entry_id: 4, group: false, signal: 255 })),
    ),
  ];
}

/** SPAWNs breaking each rule a SPAWN can break (NUL in every kind of str). */
export function refusedSpawns(): SpawnerVector[] {
  const bad = (name: string, rule: Rule, why: string, frame: Buffer): SpawnerVector =>
    refused('request', name, rule, why, frame);
  const spawn = (over: { readonly [field: string]: FieldValue }): DecodedFields => ({
    ...fullSpawn,
    ...over,
  });
  const spawnFrame = (over: { readonly [field: string]: FieldValue }): Buffer =>
    frameOf(payload('request', spawn(over)));
  const nul: [name: string, why: string, over: { readonly [field: string]: FieldValue }][] = [
    ['file', 'A NUL byte in file.', { file: 'sle\0ep' }],
    ['argv', 'A NUL byte in an argument.', { argv: ['sleep', '6\x000'] }],
    ['env', 'A NUL byte in an environment entry.', { env: ['A=1\0B=2'] }],
    ['cwd', 'A NUL byte in cwd.', { cwd: '/srv\0/web' }],
    ['tag', 'A NUL byte in the tag: every str of a request is NUL-free.', { tag: 'a\0b' }],
    ['output-path', 'A NUL byte in output_path.', { output_path: '/tmp/x\0y' }],
    ['cgroup-path', 'A NUL byte in a cgroup.procs path.', { cgroup_procs: ['/sys/fs/cgroup\0'] }],
  ];
  return [
    bad('spawn-argv-empty', 'value', 'argv must hold at least argv[0].', spawnFrame({ argv: [] })),
    bad('spawn-file-empty', 'value', 'file must not be empty.', spawnFrame({ file: '' })),
    ...nul.map(([name, why, over]) => bad(`spawn-nul-in-${name}`, 'nul', why, spawnFrame(over))),
    bad(
      'spawn-string-beyond-frame',
      'truncated',
      "The tag's length runs past the end of the payload.",
      edited('request', spawn({}), (p) => patchU32(p, spawnStrOffset(p, 0), p.length)),
    ),
    bad(
      'spawn-stdin-beyond-frame',
      'truncated',
      "stdin's length runs past the end of the payload.",
      edited('request', spawn({}), (p) => patchU32(p, spawnStrOffset(p, 4) + 1, p.length)),
    ),
    bad(
      'spawn-argv-count-beyond-frame',
      'count',
      'argv announces 0xffffffff entries: more than the payload could hold (4 bytes each at least).',
      edited('request', spawn({ stdin: null }), (p) => patchU32(p, spawnStrOffset(p, 4) + 1, U32_MAX)),
    ),
    bad(
      'spawn-argv-count-over-limit',
      'count',
      `argv announces ${SPAWNER_LIMITS.maxStrings} + 1 entries.`,
      edited('request', spawn({ stdin: null }), (p) =>
        patchU32(p, spawnStrOffset(p, 4) + 1, SPAWNER_LIMITS.maxStrings + 1),
      ),
    ),
    bad(
      'spawn-groups-count-beyond-frame',
      'count',
      'The user announces more groups than the rest of the payload holds.',
      edited('request', spawn({ user: { uid: 1, gid: 1, groups: [7] }, cgroup_procs: [] }), (p) =>
        patchU32(p, p.length - 4 - 4 - 4, 3),
      ),
    ),
    bad(
      'spawn-cgroups-over-limit',
      'count',
      `${SPAWNER_LIMITS.maxCgroups + 1} cgroup.procs paths.`,
      spawnFrame({ cgroup_procs: Array.from({ length: SPAWNER_LIMITS.maxCgroups + 1 }, (_, i) => `/c${i}`) }),
    ),
    bad(
      'spawn-user-flag-without-user',
      'truncated',
      'The user flag is 1 but only the (empty) cgroup list follows.',
      edited('request', spawn({ user: null, cgroup_procs: [] }), (p) =>
        Buffer.concat([p.subarray(0, p.length - 5), Buffer.from([1]), p.subarray(p.length - 4)]),
      ),
    ),
    bad(
      'spawn-truncated',
      'truncated',
      'A SPAWN cut after its env: no user flag, no cgroup list.',
      edited('request', spawn({ user: null, cgroup_procs: [] }), (p) => p.subarray(0, p.length - 5)),
    ),
    bad(
      'spawn-trailing-byte',
      'trailing',
      'A SPAWN with one byte after its cgroup list.',
      edited('request', spawn({}), (p) => Buffer.concat([p, Buffer.from([0])])),
    ),
  ];
}

/** Replies and events breaking each rule svcd checks. */
export function refusedReplies(): SpawnerVector[] {
  const bad = (name: string, rule: Rule, why: string, frame: Buffer): SpawnerVector =>
    refused('reply', name, rule, why, frame);
  const entry = { entry_id: 1, pid: 300, exited: true, code: 0, exit_time_ms: EXIT_TIME, tag: 't' };
  return [
    bad(
      'header-over-limit',
      'length',
      `A header announcing ${SPAWNER_LIMITS.maxPayload} + 1 bytes.`,
      header(SPAWNER_LIMITS.maxPayload + 1),
    ),
    bad('header-zero', 'length', 'An empty payload has no type.', header(0)),
    bad(
      'unknown-type',
      'type',
      'Type 0x84 is no reply.',
      edited('reply', { type: 'OK', request_id: 1, errno: 0 }, (p) =>
        Buffer.concat([Buffer.from([0x84]), p.subarray(1)]),
      ),
    ),
    bad(
      'request-type',
      'type',
      'A HELLO request sent to svcd.',
      frameOf(payload('request', { type: 'HELLO', request_id: 1, version: 1 })),
    ),
    bad(
      'ok-trailing-byte',
      'trailing',
      'OK with one byte after errno.',
      edited('reply', { type: 'OK', request_id: 1, errno: 0 }, (p) => Buffer.concat([p, Buffer.from([0])])),
    ),
    bad(
      'spawned-truncated',
      'truncated',
      'SPAWNED without its pid.',
      edited('reply', { type: 'SPAWNED', request_id: 1, entry_id: 2, pid: 3 }, (p) => p.subarray(0, 9)),
    ),
    bad(
      'spawn-failed-truncated',
      'truncated',
      'SPAWN_FAILED with 3 bytes of errno.',
      edited('reply', { type: 'SPAWN_FAILED', request_id: 1, stage: 6, errno: 2 }, (p) =>
        p.subarray(0, p.length - 1),
      ),
    ),
    bad(
      'list-count-beyond-frame',
      'count',
      'LIST announces 0xffffffff entries (25 bytes each at least) in a 9-byte payload.',
      edited('reply', { type: 'LIST', request_id: 1, entries: [] }, (p) => patchU32(p, 5, U32_MAX)),
    ),
    bad(
      'list-tag-beyond-frame',
      'truncated',
      "An entry's tag length runs past the end of the payload.",
      edited('reply', { type: 'LIST', request_id: 1, entries: [entry] }, (p) =>
        patchU32(p, p.length - 5, 99),
      ),
    ),
    bad(
      'list-trailing-byte',
      'trailing',
      'LIST with one byte after its last entry.',
      edited('reply', { type: 'LIST', request_id: 1, entries: [entry] }, (p) =>
        Buffer.concat([p, Buffer.from([0])]),
      ),
    ),
    bad(
      'exit-truncated',
      'truncated',
      "EXIT without the exit time's high word.",
      edited('reply', { type: 'EXIT', entry_id: 2, pid: 300, code: 0, exit_time_ms: EXIT_TIME }, (p) =>
        p.subarray(0, p.length - 4),
      ),
    ),
  ];
}
