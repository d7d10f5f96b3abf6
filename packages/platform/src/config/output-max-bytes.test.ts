// output_max_bytes / SVC_OUTPUT_MAX_BYTES (the cap of one captured output file): default, file,
// environment, and malformed, oversized and hostile values refused with a ConfigError naming it.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-config-'));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  SVC_HOME: home,
  SVC_AUTH_MODE: 'external',
  SVC_OIDC_ISSUER: 'https://issuer.example/',
  ...extra,
});

async function withFile(text: string | undefined, action: () => Promise<void>): Promise<void> {
  const file = join(home, 'config', 'config.yaml');
  await mkdir(join(home, 'config'), { recursive: true });
  if (text === undefined) await rm(file, { force: true });
  else await writeFile(file, text);
  await action();
}

describe('output_max_bytes', () => {
  it('defaults to 16 MiB; the file sets it; the environment wins', async () => {
    await withFile(undefined, async () => {
      expect((await loadConfig(env())).outputMaxBytes).toBe(16 * 1024 * 1024);
    });
    await withFile('output_max_bytes: 1048576\n', async () => {
      expect((await loadConfig(env())).outputMaxBytes).toBe(1048576);
      expect((await loadConfig(env({ SVC_OUTPUT_MAX_BYTES: '65536' }))).outputMaxBytes).toBe(65536);
    });
  });

  it('refuses malformed, too small, oversized and hostile values', async () => {
    await withFile(undefined, async () => {
      for (const value of [
        'abc',
        '-1',
        '1e9',
        '0x100000',
        '1024',
        String(2 ** 40 + 1),
        '9'.repeat(400),
        ' 65536',
        '65536\n',
      ]) {
        await expect(loadConfig(env({ SVC_OUTPUT_MAX_BYTES: value })), value).rejects.toThrow(ConfigError);
        await expect(loadConfig(env({ SVC_OUTPUT_MAX_BYTES: value })), value).rejects.toThrow(
          /SVC_OUTPUT_MAX_BYTES/,
        );
      }
    });
    for (const value of ['"big"', '1.5', '-1', '1024', String(2 ** 41), '[1]', '{a: 1}', 'null']) {
      await withFile(`output_max_bytes: ${value}\n`, async () => {
        await expect(loadConfig(env()), value).rejects.toThrow(/output_max_bytes/);
      });
      await withFile(`BaseConfig:\n  OutputMaxBytes: ${value}\n`, async () => {
        await expect(loadConfig(env()), value).rejects.toThrow(/BaseConfig\.OutputMaxBytes/);
      });
    }
    await withFile('BaseConfig:\n  OutputMaxBytes: 1048576\n', async () => {
      expect((await loadConfig(env())).outputMaxBytes).toBe(1048576);
    });
  });
});
