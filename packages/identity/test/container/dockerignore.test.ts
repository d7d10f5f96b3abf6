// The container build context (issue 12 item 17): computed as Docker computes it — every file under
// the context root, filtered by `.dockerignore` with Docker's matcher (@balena/dockerignore) — it
// holds no local state, secret, key, dependency or build output, and keeps what the image needs.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import dockerignoreModule from '@balena/dockerignore';
import type { Ignore } from '@balena/dockerignore';
import { describe, expect, it } from 'vitest';

// A CommonJS module whose typings declare an ES default export: its `module.exports` is the factory.
const dockerignore = dockerignoreModule as unknown as () => Ignore;
const ROOT = resolve(import.meta.dirname, '../../../..');

async function rules() {
  return dockerignore().add((await readFile(join(ROOT, '.dockerignore'), 'utf8')).split('\n'));
}

/** Files Docker would send: a walk that, like Docker, does not enter an excluded directory with no exception. */
async function buildContext(): Promise<string[]> {
  const matcher = await rules();
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const rel = relative(ROOT, full);
      if (matcher.ignores(rel)) continue;
      if (entry.isDirectory()) await walk(full);
      else files.push(rel);
    }
  };
  await walk(ROOT);
  return files;
}

/** Example paths each `.gitignore` entry ignores, at the root and nested (git matches both). */
function samplesOf(pattern: string): string[] {
  const body = pattern.replace(/\/$/, '');
  const concrete = body.replace(/\*\*/g, 'a').replace(/\*/g, 'x');
  const inside = `${concrete}/inner/file.txt`;
  if (body.startsWith('/')) return [concrete.slice(1), inside.slice(1)];
  if (body.includes('/')) return [concrete, inside];
  return [concrete, inside, `packages/identity/${concrete}`, `packages/identity/${inside}`];
}

describe('docker build context (.dockerignore)', () => {
  it('excludes work/, node_modules/, keys and every path .gitignore ignores', async () => {
    const matcher = await rules();
    const hostile = [
      'work/auth/secrets/secret-master-key',
      'work/auth/secrets/initial-admin-credentials',
      'work/auth/admin-tls/client-key.pem',
      'work/ssl/server-key.pem',
      'node_modules/oidc-provider/package.json',
      'packages/identity/node_modules/.bin/x',
      'packages/daemon/work/leftover',
      'packages/platform/dist/svcd.mjs',
      'some/dir/private.key',
      'config/server.pem',
      '.env',
      'packages/agent/.env.local',
      'server.log',
      'packages/daemon/test-output.log',
      '.git/config',
    ];
    const gitignore = (await readFile(join(ROOT, '.gitignore'), 'utf8'))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('!'));
    expect(gitignore.length).toBeGreaterThan(3);
    const leaked = [...hostile, ...gitignore.flatMap(samplesOf)].filter((path) => !matcher.ignores(path));
    expect(leaked).toEqual([]);
  });

  it('the computed context of this checkout has no such file and keeps what the image builds from', async () => {
    const context = await buildContext();
    const forbidden = context.filter((path) =>
      /(^|\/)(work|node_modules|\.git|\.tmp)(\/|$)|\.(pem|key|log)$|(^|\/)\.env/.test(path),
    );
    expect(forbidden).toEqual([]);
    for (const needed of [
      'package.json',
      'package-lock.json',
      'docker/Dockerfile',
      'docker/entrypoint.sh',
      'apps/identity.yaml',
      'apps/authadmin.yaml',
      'packages/platform/build/build.js',
      'packages/identity/bin/svc-identity.ts',
      'packages/identity/bin/svc-identity.js',
      'script/svc-auth.sh',
    ])
      expect(context).toContain(needed);
  });
});
