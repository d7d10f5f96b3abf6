// script/test-deps.sh (the pretest step of `npm test`): a machine that has everything passes at
// once; one that lacks packages and cannot install them stops at once naming the one command.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../../../script/test-deps.sh');
const run = promisify(execFile);

describe('script/test-deps.sh', () => {
  it('returns 0 without output on this machine, which has every dependency', async () => {
    const { stdout, stderr } = await run('bash', [SCRIPT]);
    expect(stdout + stderr).toBe('');
  });

  it('names the missing packages and the one command that installs them when it cannot install', async () => {
    // A PATH with no openssl, ps, python3 or cargo, and an `id` that says "not root".
    const bin = await mkdtemp(join(tmpdir(), 'svc-test-deps-'));
    try {
      await writeFile(join(bin, 'id'), '#!/bin/sh\necho 1000\n', { mode: 0o755 });
      await symlink('/bin/sh', join(bin, 'sh'));
      // CARGO_HOME without cargo: rustup's ~/.cargo/bin is not found either.
      const failed = await run('/bin/bash', [SCRIPT], { env: { PATH: bin, CARGO_HOME: bin } }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toContain('missing');
      for (const pkg of [
        'openssl',
        'procps',
        'python3',
        'python3-venv',
        'python3-pip',
        'python3-yaml',
        'util-linux',
        'systemd',
        'dpkg',
        'cmake',
        'g++',
        'openjdk-17-jdk-headless',
        'maven',
      ])
        expect(failed?.stderr).toContain(pkg);
      expect(failed?.stderr).toMatch(/apt-get update && apt-get install -y /);
      // Rust (clients/rust) is not an apt package: the rustup command is named as well.
      expect(failed?.stderr).toContain('rustup');
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
});
