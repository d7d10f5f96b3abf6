// Golden frames of the spawner protocol (spec/spawner-vectors.json), encoded from the one table of
// protocol-spec.ts. `npm run gen:spec` writes the file from buildSpawnerVectors() and
// test/spec-sync.test.ts fails when the two drift apart. Both hand-written codecs are tested
// against it: frames.ts (encodes requests, decodes replies: spawner-vectors.test.ts beside it) and
// svc-spawner.c (decodes requests, encodes replies: packages/spawner/test/frames-vectors.test.ts).

import { SPAWNER_LIMITS } from './protocol-spec.ts';
import { refusedReplies, refusedRequests, refusedSpawns } from './spawner-vectors-refused.ts';
import {
  EACCES,
  EBUSY,
  EMSGSIZE,
  ENOENT,
  EPERM,
  EPROTO,
  ESRCH,
  EXIT_TIME,
  PID_MAX,
  TAG,
  U32_MAX,
  bytes,
  type DecodedFields,
  fullSpawn,
  hex,
  minimalSpawn,
  type SpawnerVector,
  valid,
} from './vector-kit.ts';

export type { DecodedFields, Rule, SpawnerVector } from './vector-kit.ts';

function requests(): SpawnerVector[] {
  const req = (name: string, description: string, decoded: DecodedFields): SpawnerVector =>
    valid('request', name, description, decoded);
  return [
    req('hello', 'HELLO of protocol version 1.', { type: 'HELLO', request_id: 1, version: 1 }),
    req('hello-request-id-max', 'The largest request id.', {
      type: 'HELLO',
      request_id: U32_MAX,
      version: 1,
    }),
    req(
      'spawn-minimal',
      'Only what is required: a file and argv[0]; every list empty, no stdin, no user.',
      minimalSpawn,
    ),
    req(
      'spawn-exec-mode',
      "What svcd writes to `svc-spawner exec`: request id 0, tag '', output '', no stdin.",
      {
        ...minimalSpawn,
        request_id: 0,
        file: '/bin/sh',
        cwd: '/home/app',
        argv: ['/bin/sh', '-c', 'echo "$HOME"'],
        env: ['HOME=/home/app', 'PATH=/usr/bin:/bin'],
        user: { uid: 1001, gid: 1001, groups: [1001, 27] },
      },
    ),
    req(
      'spawn-full',
      'Every field: tag, cwd, output path, stdin, UTF-8 in env, a user with groups, a cgroup.',
      fullSpawn,
    ),
    req('spawn-stdin-with-nul', 'stdin is bytes: NUL and 0xff pass through.', {
      ...fullSpawn,
      stdin: bytes(Buffer.from([0x00, 0x01, 0xff, 0x00, 0x0a])),
    }),
    req('spawn-stdin-empty', 'stdin present with zero bytes (an empty pipe), not absent (/dev/null).', {
      ...minimalSpawn,
      stdin: bytes(Buffer.alloc(0)),
    }),
    req(
      'spawn-user-root-no-groups',
      'User uid 0, gid 0, no supplementary groups (setgroups with 0 entries).',
      {
        ...minimalSpawn,
        user: { uid: 0, gid: 0, groups: [] },
      },
    ),
    req('spawn-user-ids-max', 'uid and gid 0xfffffffe (the largest valid), groups likewise.', {
      ...minimalSpawn,
      user: { uid: U32_MAX - 1, gid: U32_MAX - 1, groups: [U32_MAX - 1, 0] },
    }),
    req(
      'spawn-empty-strings',
      'An empty argument and an empty environment entry are strings like any other.',
      {
        ...minimalSpawn,
        file: 'printf',
        argv: ['printf', ''],
        env: [''],
      },
    ),
    req('spawn-cgroups-at-limit', `Exactly ${SPAWNER_LIMITS.maxCgroups} cgroup.procs paths.`, {
      ...minimalSpawn,
      cgroup_procs: Array.from(
        { length: SPAWNER_LIMITS.maxCgroups },
        (_, i) => `/sys/fs/cgroup/svc/c${i}/cgroup.procs`,
      ),
    }),
    req('signal-group', 'SIGTERM to the process group of entry 4.', {
      type: 'SIGNAL',
      request_id: 3,
      entry_id: 4,
      group: true,
      signal: 15,
    }),
    req(
      'signal-process-largest',
      `Signal ${SPAWNER_LIMITS.nsig - 1}, the largest, to the process alone; ids at their maximum.`,
      {
        type: 'SIGNAL',
        request_id: U32_MAX,
        entry_id: U32_MAX,
        group: false,
        signal: SPAWNER_LIMITS.nsig - 1,
      },
    ),
    req('signal-zero', 'Signal 0: only whether the process can be signalled.', {
      type: 'SIGNAL',
      request_id: 6,
      entry_id: 1,
      group: false,
      signal: 0,
    }),
    req('list', 'LIST: the request id alone.', { type: 'LIST', request_id: 7 }),
    req('ack', 'ACK of entry 9.', { type: 'ACK', request_id: 2, entry_id: 9 }),
  ];
}

function replies(): SpawnerVector[] {
  const rep = (name: string, description: string, decoded: DecodedFields): SpawnerVector =>
    valid('reply', name, description, decoded);
  return [
    rep('ok', 'OK: done.', { type: 'OK', request_id: 3, errno: 0 }),
    rep('ok-esrch', 'OK with ESRCH: the entry is unknown or has exited.', {
      type: 'OK',
      request_id: 3,
      errno: ESRCH,
    }),
    rep('ok-ebusy', 'OK with EBUSY: ACK of an entry still running.', {
      type: 'OK',
      request_id: 2,
      errno: EBUSY,
    }),
    rep('hello', "HELLO: the spawner's version and pid.", {
      type: 'HELLO',
      request_id: 1,
      version: 1,
      pid: 4242,
    }),
    rep('spawned', 'SPAWNED: entry 1, pid 12345.', {
      type: 'SPAWNED',
      request_id: 5,
      entry_id: 1,
      pid: 12345,
    }),
    rep('spawned-max', 'Ids at their maximum, the largest pid.', {
      type: 'SPAWNED',
      request_id: U32_MAX,
      entry_id: U32_MAX,
      pid: PID_MAX,
    }),
    rep('spawn-failed-exec', 'execvp failed: ENOENT.', {
      type: 'SPAWN_FAILED',
      request_id: 5,
      stage: 6,
      errno: ENOENT,
    }),
    rep('spawn-failed-chdir', 'cwd could not be entered as the user: EACCES.', {
      type: 'SPAWN_FAILED',
      request_id: 5,
      stage: 4,
      errno: EACCES,
    }),
    rep('spawn-failed-user', 'setuid failed: EPERM.', {
      type: 'SPAWN_FAILED',
      request_id: 5,
      stage: 5,
      errno: EPERM,
    }),
    rep('list-empty', 'LIST of a spawner holding nothing.', { type: 'LIST', request_id: 4, entries: [] }),
    rep(
      'list-entries',
      'A running entry, one killed by a signal (exit time above 2^32), one exited 0 with an empty tag.',
      {
        type: 'LIST',
        request_id: 4,
        entries: [
          { entry_id: 1, pid: 300, exited: false, code: 0, exit_time_ms: 0, tag: TAG },
          {
            entry_id: 2,
            pid: 301,
            exited: true,
            code: -9,
            exit_time_ms: EXIT_TIME,
            tag: `${TAG.slice(0, 37)}worker`,
          },
          { entry_id: 3, pid: PID_MAX, exited: true, code: 0, exit_time_ms: EXIT_TIME + 1, tag: '' },
        ],
      },
    ),
    rep('list-utf8-tag', 'A tag holding UTF-8 beyond ASCII.', {
      type: 'LIST',
      request_id: 4,
      entries: [
        {
          entry_id: 7,
          pid: 42,
          exited: true,
          code: 255,
          exit_time_ms: EXIT_TIME,
          tag: `${TAG.slice(0, 37)}caf\u00e9`,
        },
      ],
    }),
    rep('exit', 'EXIT with status 0.', {
      type: 'EXIT',
      entry_id: 2,
      pid: 300,
      code: 0,
      exit_time_ms: 1_767_225_600_000,
    }),
    rep('exit-signal', 'EXIT of a process killed by SIGKILL: code -9.', {
      type: 'EXIT',
      entry_id: 2,
      pid: 300,
      code: -9,
      exit_time_ms: EXIT_TIME,
    }),
    rep('exit-code-255', 'EXIT with status 255.', {
      type: 'EXIT',
      entry_id: U32_MAX,
      pid: 1,
      code: 255,
      exit_time_ms: EXIT_TIME,
    }),
    rep(
      'exit-time-max-exact',
      'The largest exit time a JSON number (and a double) holds exactly: 2^53 - 1.',
      {
        type: 'EXIT',
        entry_id: 3,
        pid: 300,
        code: 1,
        exit_time_ms: Number.MAX_SAFE_INTEGER,
      },
    ),
  ];
}

function statuses(): SpawnerVector[] {
  const status = (name: string, description: string, stage: number, errno: number): SpawnerVector => {
    const b = Buffer.alloc(5);
    b[0] = stage;
    b.writeInt32LE(errno, 1);
    return { name: `status-${name}`, kind: 'status', description, hex: hex(b), decoded: { stage, errno } };
  };
  return [
    status(
      'frame-malformed',
      'The exec frame is malformed, not a SPAWN, or has an output path or stdin: stage 2, EPROTO.',
      2,
      EPROTO,
    ),
    status(
      'frame-size',
      'The exec frame announces more than 8 MiB or fewer than 5 bytes: stage 2, EMSGSIZE.',
      2,
      EMSGSIZE,
    ),
    status('user', 'setuid failed: stage 5, EPERM.', 5, EPERM),
    status('chdir', 'cwd could not be entered as the user: stage 4, EACCES.', 4, EACCES),
    status('exec', 'execvp found nothing to run: stage 6, ENOENT.', 6, ENOENT),
    status('cgroup', 'A cgroup.procs file is missing: stage 7, ENOENT.', 7, ENOENT),
  ];
}

/** Every vector, in the order of spec/spawner-vectors.json. */
export function buildSpawnerVectors(): SpawnerVector[] {
  return [
    ...requests(),
    ...refusedRequests(),
    ...refusedSpawns(),
    ...replies(),
    ...refusedReplies(),
    ...statuses(),
  ];
}
