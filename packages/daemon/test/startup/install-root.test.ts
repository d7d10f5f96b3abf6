// CONTRACT §2: system applications come from the install root, SVC_HOME holds state only. `svcd` with
// an empty SVC_HOME in builtin mode is the complete service (identity provider, agent, admin UI),
// writes nothing outside that home, and says on a foreground stop what keeps running. Setting
// A malformed registry configuration (cluster mode) is a start-up error naming its source, never
// echoing credentials.
import { spawn, execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { EPHEMERAL_PORTS_ENV, killManagedProcesses, restClient, svcdCommand } from '@svc/testkit';

const INSTALL_ROOT = resolve(import.meta.dirname, '../../../..');

const homes: string[] = [];
afterEach(async () => {
  for (const home of homes.splice(0)) {
    await killManagedProcesses(join(home, 'work'));
    await rm(home, { recursive: true, force: true });
  }
});

function startSvcd(env: Record<string, string>): {
  exited: Promise<number | null>;
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
} {
  const [node, ...args] = svcdCommand();
  const child = spawn(node!, args, {
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { exited, stderr: () => stderr, kill: (signal) => child.kill(signal) };
}

/** Files of the install root changed since `since` (ms), outside what builds and test runners own. */
async function installRootChangesSince(since: number): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    'find',
    [
      INSTALL_ROOT,
      '(',
      '-name',
      'node_modules',
      '-o',
      '-name',
      '.git',
      '-o',
      '-name',
      'dist',
      '-o',
      '-name',
      '.ci-out',
      ')',
      '-prune',
      '-o',
      '-newermt',
      `@${(since / 1000).toFixed(3)}`,
      '-type',
      'f',
      '-print',
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout.split('\n').filter(Boolean);
}

describe('install root and SVC_HOME', () => {
  it('an empty SVC_HOME in builtin mode gives issuer, agent and admin UI, with every write inside it', async () => {
    const since = Date.now();
    const home = await mkdtemp(join(tmpdir(), 'svc-install-root-'));
    homes.push(home);
    const svcd = startSvcd({ SVC_HOME: home, ...EPHEMERAL_PORTS_ENV });
    const wanted = ['rest', 'tcp', 'agent', 'issuer', 'telemetry', 'admin_ui', 'grpc'];
    let ports: Record<string, number> = {};
    const deadline = Date.now() + 60_000;
    while (!wanted.every((key) => ports[key] !== undefined)) {
      if (Date.now() > deadline)
        throw new Error(`ports.json has ${JSON.stringify(ports)}:\n${svcd.stderr()}`);
      // Bounded condition poll: svcd rewrites work/ports.json atomically as each system app reports.
      await new Promise((done) => setTimeout(done, 50));
      ports = await readFile(join(home, 'work', 'ports.json'), 'utf8')
        .then((text) => JSON.parse(text) as Record<string, number>)
        .catch(() => ({}));
    }
    const discovery = await fetch(
      `http://127.0.0.1:${ports['issuer']}/auth/.well-known/openid-configuration`,
    );
    expect(discovery.status).toBe(200);
    const adminUi = await fetch(`http://127.0.0.1:${ports['admin_ui']}/`);
    expect(adminUi.status).toBeLessThan(500);
    const ca = readFileSync(join(home, 'work', 'ssl', 'ca.pem'), 'utf8');
    const viaAgent = await restClient(`https://127.0.0.1:${ports['agent']}`, ca).call(
      'GET',
      '/svc/auth/config',
    );
    expect(viaAgent.status).toBe(200);
    expect(viaAgent.json<{ mode: string }>().mode).toBe('builtin');

    svcd.kill('SIGINT');
    expect(await svcd.exited).toBe(0);
    expect(svcd.stderr()).toMatch(/keep running/);
    expect(svcd.stderr()).toContain('svc daemon stop --all');
    expect(await installRootChangesSince(since)).toEqual([]);
  });

  it.each([
    [
      'SVC_REGISTRY_URL: endpoint 1: expected http:// or https://',
      { SVC_REGISTRY_URL: 'ftp://127.0.0.1:1' },
      undefined,
    ],
    // The earlier flat key is read as Registry.Url.
    [
      'Registry.Url: endpoint 1: credentials in the URL are not supported',
      {},
      'registry_url: http://root:hunter2@127.0.0.1:1\n',
    ],
    [
      'Registry.SessionTTL: at least 2 seconds',
      {},
      'Registry:\n  Url: http://127.0.0.1:1\n  SessionTTL: 1\n',
    ],
  ])('refuses to start with a bad registry configuration (%s)', async (what, env, configYaml) => {
    const home = await mkdtemp(join(tmpdir(), 'svc-registry-'));
    homes.push(home);
    if (configYaml !== undefined) {
      await mkdir(join(home, 'config'), { recursive: true });
      await writeFile(join(home, 'config', 'config.yaml'), configYaml);
    }
    const svcd = startSvcd({
      SVC_HOME: home,
      SVC_AUTH_MODE: 'external',
      SVC_OIDC_ISSUER: 'http://127.0.0.1:1',
      ...EPHEMERAL_PORTS_ENV,
      ...env,
    });
    expect(await svcd.exited).toBe(1);
    expect(svcd.stderr()).toContain(`svcd: cannot start: ${what}`);
    expect(svcd.stderr()).not.toContain('hunter2');
  });
});
