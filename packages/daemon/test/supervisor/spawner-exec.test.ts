// `svc-spawner exec <request-fd> <status-fd>` against the real binary: the privilege boundary of
// the processes svcd starts itself (packages/spawner/README.md). A valid frame execs with exactly
// its environment, user and working directory; anything malformed, oversized or hostile runs
// nothing and says why on the status descriptor. The user-switch order (uid first, then chdir)
// is proved with real users by test/security/c1-privilege-boundary.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeSpawn, STAGE, type SpawnFrame } from '../../src/supervisor/spawner/frames.ts';

const BINARY = resolve(import.meta.dirname, '../../../spawner/build/svc-spawner');
const BUILD = resolve(import.meta.dirname, '../../../spawner/build.js');
const EPROTO = 71;
const EMSGSIZE = 90;

let dir: string;

beforeAll(() => {
  expect(spawnSync(process.execPath, [BUILD, '--strict'], { encoding: 'utf8' }).status).toBe(0);
  dir = mkdtempSync(join(tmpdir(), 'svc-spawner-exec-'));
});
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  code: number | null;
  stdout: string;
  /** The status bytes: empty when the program was exec'd. */
  status: Buffer;
}

/** Run the exec mode with `request` written to fd 3 (then closed); status on fd 4. */
function execMode(request: Buffer, args = ['exec', '3', '4']): Promise<Outcome> {
  const child = spawn(BINARY, args, { env: {}, cwd: '/', stdio: ['ignore', 'pipe', 'ignore', 'pipe', 'pipe'] });
  const input = child.stdio[3] as Writable;
  input.on('error', () => undefined);
  input.end(request);
  const read = (stream: Readable): Promise<Buffer> =>
    new Promise((ok) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('close', () => ok(Buffer.concat(chunks)));
    });
  const stdout = read(child.stdout as Readable);
  const status = read(child.stdio[4] as Readable);
  return new Promise((ok) =>
    child.on('close', (code) => {
      void Promise.all([stdout, status]).then(([out, st]) => ok({ code, stdout: out.toString('utf8'), status: st }));
    }),
  );
}

const frame = (over: Partial<SpawnFrame> = {}): Buffer =>
  encodeSpawn(0, {
    tag: '',
    file: '/bin/sh',
    argv: ['/bin/sh', '-c', 'echo "$GREETING"; pwd'],
    env: ['GREETING=hello from exec', 'PATH=/usr/bin:/bin'],
    cwd: '/tmp',
    outputPath: '',
    stdin: undefined,
    user: undefined,
    cgroupProcs: [],
    ...over,
  });

describe('svc-spawner exec', () => {
  it('execs with exactly the frame environment and working directory; the status pipe closes empty', async () => {
    const out = await execMode(frame());
    expect(out).toMatchObject({ code: 0, stdout: 'hello from exec\n/tmp\n' });
    expect(out.status.length).toBe(0);
  });

  it('reports a working directory that does not exist (stage chdir) and runs nothing', async () => {
    const out = await execMode(frame({ cwd: join(dir, 'missing') }));
    expect(out.code).toBe(127);
    expect(out.stdout).toBe('');
    expect([out.status[0], out.status.readInt32LE(1)]).toEqual([STAGE.chdir, 2 /* ENOENT */]);
  });

  it('reports a program that does not exist (stage exec)', async () => {
    const out = await execMode(frame({ file: join(dir, 'nope'), argv: [join(dir, 'nope')] }));
    expect(out.code).toBe(127);
    expect([out.status[0], out.status.readInt32LE(1)]).toEqual([STAGE.exec, 2]);
  });

  it('refuses malformed, oversized, truncated and hostile requests: nothing runs', async () => {
    const good = frame();
    const cases: [string, Buffer, number][] = [
      ['empty', Buffer.alloc(0), EPROTO],
      ['truncated header', good.subarray(0, 3), EPROTO],
      ['truncated payload', good.subarray(0, good.length - 1), EPROTO],
      ['oversized length', Buffer.from([0xff, 0xff, 0xff, 0x7f, 2]), EMSGSIZE],
      ['not a SPAWN', Buffer.concat([good.subarray(0, 4), Buffer.from([3]), good.subarray(5)]), EPROTO],
      ['an output path (only the given descriptors)', frame({ outputPath: '/tmp/x' }), EPROTO],
      ['stdin data', frame({ stdin: Buffer.from('x') }), EPROTO],
      ['random bytes', Buffer.concat([Buffer.from([64, 0, 0, 0]), Buffer.alloc(64, 0xab)]), EPROTO],
    ];
    for (const [what, request, errno] of cases) {
      const out = await execMode(request);
      expect({ what, code: out.code, stdout: out.stdout }).toEqual({ what, code: 127, stdout: '' });
      expect({ what, stage: out.status[0], errno: out.status.readInt32LE(1) }).toEqual({
        what,
        stage: STAGE.stdin,
        errno,
      });
    }
  });

  it('refuses bad descriptor arguments with exit 2', async () => {
    for (const args of [['exec', '0', '4'], ['exec', '3', '3'], ['exec', 'x', '4'], ['exec', '3', '99999']]) {
      const out = await execMode(frame(), args);
      expect({ args, code: out.code, stdout: out.stdout }).toEqual({ args, code: 2, stdout: '' });
    }
  });
});
