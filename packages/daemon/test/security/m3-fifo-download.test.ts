// Issue 25 M3: a local user creates a FIFO and a principal downloads it 5 times. Before: 5 shell
// children blocked in open(2) for good, each holding a pipe in svcd. Must be: only regular files
// are transferred, and nothing outlives its request — also a download whose client goes away in
// the middle of the stream.
import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdtemp, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type ApiClient, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';

let daemon: TestDaemon;
let rest: ApiClient;
let admin: string;
let dir: string;

beforeAll(async () => {
  daemon = await startTestDaemon();
  rest = daemon.rest();
  admin = await daemon.token('admin');
  dir = await mkdtemp(join(tmpdir(), 'svc-m3-'));
  await chmod(dir, 0o777);
});
afterAll(async () => {
  await daemon?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** svcd's child processes other than svc-spawner (file transfers run as its direct children). */
async function transferChildren(): Promise<string[]> {
  const children: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = execFileSync('cat', [`/proc/${entry}/stat`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== daemon.pid) continue;
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (name !== 'svc-spawner') children.push(`${entry} ${name}`);
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** svcd's open pipes. */
async function pipes(): Promise<number> {
  let count = 0;
  for (const fd of await readdir(`/proc/${daemon.pid}/fd`)) {
    const target = await readlink(`/proc/${daemon.pid}/fd/${fd}`).catch(() => '');
    if (target.startsWith('pipe:')) count++;
  }
  return count;
}

describe('downloads of what is not a regular file', () => {
  it('refuses a FIFO at once, 5 times in parallel, and leaves no child and no pipe behind', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', ['-m', '666', fifo]);
    const baselinePipes = await pipes();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        rest.call('GET', '/svc/file/download', { token: admin, headers: { 'x-file-path': encodeURIComponent(fifo) } }),
      ),
    );
    for (const r of answers) expect([r.status, r.json<{ error: string }>().error]).toEqual([400, 'bad_request']);
    await waitFor(async () => (await transferChildren()).length === 0, { what: 'no transfer child left' });
    await waitFor(async () => (await pipes()) <= baselinePipes, { what: "svcd's pipes back to the baseline" });
  });

  it('refuses to upload over a FIFO (409): it stays a FIFO, and no child is left', async () => {
    const fifo = join(dir, 'fifo-target');
    execFileSync('mkfifo', ['-m', '666', fifo]);
    const r = await rest.call('POST', '/svc/file/upload', {
      token: admin,
      rawBody: 'data',
      headers: { 'x-file-path': encodeURIComponent(fifo), 'content-type': 'application/octet-stream' },
    });
    expect([r.status, r.json<{ error: string }>().error]).toEqual([409, 'conflict']);
    expect((await lstat(fifo)).isFIFO()).toBe(true);
    await waitFor(async () => (await transferChildren()).length === 0, { what: 'no transfer child left' });
  });

  it('ends the child when the client goes away in the middle of a download', async () => {
    const big = join(dir, 'big');
    await writeFile(big, Buffer.alloc(64 * 1024 * 1024, 7));
    const url = new URL('/svc/file/download', daemon.restUrl);
    await new Promise<void>((resolve, reject) => {
      const req = request(
        url,
        { ca: daemon.ca, headers: { authorization: `Bearer ${admin}`, 'x-file-path': encodeURIComponent(big) } },
        (res) => {
          expect(res.statusCode).toBe(200);
          // Read one chunk, then hang up with most of the file unsent.
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ECONNRESET') reject(error);
      });
      req.end();
    });
    await waitFor(async () => (await transferChildren()).length === 0, {
      what: 'the download child gone with its client',
    });
  });
});
