// The choice of the spawn path (SVC_SPAWNER) where svc-spawner is not there: auto falls back and
// says why, native refuses, inprocess never looks; and SVC_SPAWNER's malformed values.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@svc/platform/config';
import { createLogger } from '../../log/logger.ts';
import { chooseSpawner, spawnerPaths } from './launch.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-launch-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('chooseSpawner without a spawner binary or source', () => {
  it('auto: in-process, logged with the reason; native: refuses; inprocess: never looks', async () => {
    const paths = spawnerPaths(join(dir, 'no-install-root'), join(dir, 'work'));
    const logFile = join(dir, 'log');
    const logger = createLogger({ file: logFile });
    const auto = await chooseSpawner('auto', paths, logger);
    expect(auto.connection).toBeUndefined();
    expect(auto.reason).toMatch(/svc-spawner unavailable: .*svc-spawner is missing/);
    await expect(chooseSpawner('native', paths, logger)).rejects.toThrow(/SVC_SPAWNER=native/);
    expect(await chooseSpawner('inprocess', paths, logger)).toEqual({
      connection: undefined,
      binary: undefined,
      reason: 'SVC_SPAWNER=inprocess',
    });
    await logger.close();
    const log = await readFile(logFile, 'utf8');
    expect(log).toMatch(/"level":"warn","msg":"processes are spawned in-process: svc-spawner unavailable/);
    expect(log).toMatch(/processes are spawned in-process \(SVC_SPAWNER=inprocess\)/);
  });
});

describe('SVC_SPAWNER', () => {
  const env = (value: string | undefined): NodeJS.ProcessEnv => ({
    SVC_HOME: dir,
    SVC_AUTH_MODE: 'external',
    SVC_OIDC_ISSUER: 'https://issuer.example/',
    ...(value === undefined ? {} : { SVC_SPAWNER: value }),
  });
  it('defaults to auto and takes native, inprocess, auto', async () => {
    expect((await loadConfig(env(undefined))).spawner).toBe('auto');
    for (const value of ['native', 'inprocess', 'auto'] as const)
      expect((await loadConfig(env(value))).spawner).toBe(value);
  });
  it('refuses anything else, naming the variable', async () => {
    for (const value of ['NATIVE', 'in-process', ' native', 'native\0', 'x'.repeat(10_000)])
      await expect(loadConfig(env(value)), JSON.stringify(value.slice(0, 20))).rejects.toThrow(/SVC_SPAWNER/);
    await expect(loadConfig(env('bogus'))).rejects.toThrow(ConfigError);
    // A hostile value is not echoed whole.
    const error = await loadConfig(env('y'.repeat(10_000))).catch((e: unknown) => e as Error);
    expect((error as Error).message.length).toBeLessThan(200);
  });
});
