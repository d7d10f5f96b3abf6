// uploadAs when the request body fails at any moment of the upload's start: the shell may be
// killed before, during or after its mktemp, and must never leave its temp file behind (its
// traps are set before the temp file exists). Real child processes; no daemon needed.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SvcError } from '@svc/protocol';
import { uploadAs } from '../../src/files/file-transfer.ts';
import { UserSwitch } from '../../src/privilege/user-switch.ts';

// As the daemon's own user: no switch, so no helper binary is needed.
const users = new UserSwitch(undefined);

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-upload-cut-'));
});
afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

it('leaves the target as it was and no temp file, wherever in its start the upload is cut', async () => {
  const target = join(dir, 'target.txt');
  await writeFile(target, 'before');
  for (let i = 0; i < 200; i++) {
    const body = new PassThrough();
    const upload = uploadAs(users, undefined, { path: target, allow: () => undefined, attributes: {} }, body);
    // Cut after 0 to ~3 ms: before the shell runs, during mktemp, while it copies.
    const delayMs = (i % 20) * 0.15;
    setTimeout(() => body.destroy(new Error('client gone')), delayMs);
    await expect(upload).rejects.toBeInstanceOf(SvcError);
  }
  expect((await readdir(dir)).sort()).toEqual(['target.txt']);
  expect(await readFile(target, 'utf8')).toBe('before');
}, 60_000);
