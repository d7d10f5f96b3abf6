// The operator helper reads the auth mode as svcd does: SVC_AUTH_MODE, else the configuration
// files (sectioned `Auth.Mode`, or the earlier flat `auth_mode`), the writable overrides first.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authMode } from './operator.ts';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-operator-'));
  await mkdir(join(home, 'config'), { recursive: true });
  await mkdir(join(home, 'work', 'config'), { recursive: true });
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('authMode', () => {
  it('reads Auth.Mode of the sectioned files, overrides first, and the flat auth_mode', async () => {
    expect(await authMode(home, {})).toBe('builtin');
    await writeFile(join(home, 'config', 'config.yaml'), 'auth_mode: external\n');
    expect(await authMode(home, {})).toBe('external');
    await writeFile(join(home, 'work', 'config', 'config.yaml'), 'Auth:\n  Mode: builtin\nLabels: {}\n');
    expect(await authMode(home, {})).toBe('builtin');
    await writeFile(join(home, 'work', 'config', 'config.yaml'), 'Labels: {zone: a}\n');
    expect(await authMode(home, {})).toBe('external');
    expect(await authMode(home, { SVC_AUTH_MODE: 'builtin' })).toBe('builtin');
  });

  it('refuses an unknown mode', async () => {
    await writeFile(join(home, 'config', 'config.yaml'), 'Auth:\n  Mode: weird\n');
    await expect(authMode(home, {})).rejects.toThrow(/expected builtin or external/);
  });
});
