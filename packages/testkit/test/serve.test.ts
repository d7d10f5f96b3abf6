// `svc-testkit serve --json` (spec/testkit.md) driven as another language's test suite would: the
// real bin as a child process with a pipe as stdin, its one line checked against
// spec/testkit.schema.json, every token used against the real daemon, and nothing left behind.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { restClient } from '../src/clients.ts';

const BIN = resolve(import.meta.dirname, '../bin/svc-testkit.js');
const SCHEMA = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../../../spec/testkit.schema.json'), 'utf8'),
) as Parameters<typeof z.fromJSONSchema>[0];

interface Served {
  child: ChildProcessWithoutNullStreams;
  info: Record<string, unknown> & {
    home: string;
    rest: string;
    ca: string;
    pid: number;
    tokens: Record<string, string>;
    principals: Record<string, string>;
  };
  exited: Promise<number | null>;
  stderr(): string;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function run(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
} {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'] },
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

async function serve(extra: string[] = []): Promise<Served> {
  const started = run(['serve', '--json', ...extra]);
  const line = await new Promise<string>((done, reject) => {
    const check = (): void => {
      const out = started.stdout();
      if (out.includes('\n')) done(out.slice(0, out.indexOf('\n')));
    };
    started.child.stdout.on('data', check);
    void started.exited.then((code) => reject(new Error(`serve exited ${code}:\n${started.stderr()}`)));
  });
  return {
    child: started.child,
    info: JSON.parse(line) as Served['info'],
    exited: started.exited,
    stderr: () => started.stderr(),
  };
}

/** Whether `pid` is a live process (a zombie waiting for init to reap it counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Waits (bounded) until `pid` is gone: SIGKILL is delivered asynchronously. */
async function gone(pid: number): Promise<boolean> {
  const deadline = Date.now() + 15_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20));
  return !alive(pid);
}

describe('svc-testkit serve --json', () => {
  it('prints one line of the documented shape whose tokens work, and removes everything when stdin closes', async () => {
    const served = await serve();
    const { info } = served;
    expect(() => z.fromJSONSchema(SCHEMA).parse(info)).not.toThrow();
    expect(existsSync(info.ca)).toBe(true);
    const rest = restClient(info.rest, readFileSync(info.ca, 'utf8'));

    for (const identity of ['svc-admin', 'svc-maintenance', 'svc-viewer', 'machine'] as const) {
      const self = await rest.call('GET', '/svc/self', { token: info.tokens[identity] });
      expect(self.status, identity).toBe(200);
      const body = self.json<{ principal_id: string; roles: string[] }>();
      expect(body.principal_id).toBe(info.principals[identity]);
      if (identity !== 'machine') expect(body.roles).toEqual([identity]);
    }
    expect((await rest.call('GET', '/svc/applications')).status).toBe(401);
    const app = { command: 'sleep 600' };
    expect(
      (await rest.call('PUT', '/svc/app/kept', { token: info.tokens['svc-viewer'], body: app })).status,
    ).toBe(403);
    expect(
      (await rest.call('PUT', '/svc/app/kept', { token: info.tokens['svc-admin'], body: app })).status,
    ).toBe(200);
    let pid = 0;
    const deadline = Date.now() + 30_000;
    while (pid === 0 && Date.now() < deadline) {
      const view = await rest.call('GET', '/svc/app/kept', { token: info.tokens['svc-admin'] });
      pid = view.json<{ pid?: number }>().pid ?? 0;
      // Bounded condition poll: the app's process starts asynchronously after registration.
      if (pid === 0) await new Promise((done) => setTimeout(done, 50));
    }
    expect(alive(pid)).toBe(true);

    served.child.stdin.end();
    expect(await served.exited).toBe(0);
    expect(await gone(info.pid)).toBe(true);
    expect(await gone(pid)).toBe(true);
    expect(existsSync(info.home)).toBe(false);
  });

  it('--agent also runs svc-agent and names its URL; the agent goes with everything else', async () => {
    const served = await serve(['--agent']);
    const { info } = served;
    expect(() => z.fromJSONSchema(SCHEMA).parse(info)).not.toThrow();
    const agentUrl = info['agent'] as string;
    expect(agentUrl).toBe(`https://127.0.0.1:${(info['ports'] as { agent: number }).agent}`);
    const agent = restClient(agentUrl, readFileSync(info.ca, 'utf8'));
    const self = await agent.call('GET', '/svc/self', { token: info.tokens['svc-viewer'] });
    expect(self.status).toBe(200);
    served.child.stdin.end();
    expect(await served.exited).toBe(0);
    // With the right CA and token, only a gone agent can make this call fail.
    await expect(agent.call('GET', '/svc/self', { token: info.tokens['svc-viewer'] })).rejects.toThrow();
    expect(existsSync(info.home)).toBe(false);
  });

  it('--builtin runs the built-in issuer and the agent: real tokens, and credentials that sign in at {agent}/auth/token', async () => {
    const served = await serve(['--builtin']);
    const { info } = served;
    expect(() => z.fromJSONSchema(SCHEMA).parse(info)).not.toThrow();
    const auth = info['auth'] as {
      token_endpoint: string;
      scope: string;
      users: Record<'svc-admin' | 'svc-viewer', { username: string; password: string; principal: string }>;
    };
    const ca = readFileSync(info.ca, 'utf8');
    const rest = restClient(info.rest, ca);
    for (const identity of ['svc-admin', 'svc-maintenance', 'svc-viewer', 'machine'] as const) {
      const self = await rest.call('GET', '/svc/self', { token: info.tokens[identity] });
      expect(self.status, identity).toBe(200);
      expect(self.json<{ principal_id: string }>().principal_id).toBe(info.principals[identity]);
    }
    const app = { command: 'sleep 600' };
    expect(
      (await rest.call('PUT', '/svc/app/b', { token: info.tokens['svc-viewer'], body: app })).status,
    ).toBe(403);
    // The printed credentials work at the printed token endpoint (the agent's route to the issuer).
    const agent = restClient(info['agent'] as string, ca);
    const granted = await agent.call('POST', new URL(auth.token_endpoint).pathname, {
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('svc-cli:').toString('base64')}`,
      },
      rawBody: new URLSearchParams({
        grant_type: 'password',
        username: auth.users['svc-viewer'].username,
        password: auth.users['svc-viewer'].password,
        scope: auth.scope,
      }).toString(),
    });
    expect(granted.status).toBe(200);
    const token = granted.json<{ access_token: string }>().access_token;
    const self = await rest.call('GET', '/svc/self', { token });
    expect(self.json<{ principal_id: string }>().principal_id).toBe(auth.users['svc-viewer'].principal);
    served.child.stdin.end();
    expect(await served.exited).toBe(0);
    expect(await gone(info.pid)).toBe(true);
    expect(existsSync(info.home)).toBe(false);
  }, 120_000);

  it('stops and cleans up on SIGTERM as well', async () => {
    const served = await serve(['--token-ttl', '600']);
    expect(served.info['tokens_expire_at']).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 600);
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
    expect(await gone(served.info.pid)).toBe(true);
    expect(existsSync(served.info.home)).toBe(false);
  });

  it.each([
    [['serve', '--bogus']],
    [['serve', '--token-ttl']],
    [['serve', '--token-ttl', '-5']],
    [['serve', '--token-ttl', '1e9']],
    [['serve', '--token-ttl', '99999999999999']],
    [['serve', '--token-ttl', '59']],
    [['serve', 'x'.repeat(100_000)]],
    [['serve', '--builtin', '--token-ttl', '600']],
    [['nothing']],
    [[]],
  ])('refuses %j with exit 2 and starts nothing', async (args) => {
    const started = run(args);
    expect(await started.exited).toBe(2);
    expect(started.stdout()).toBe('');
    expect(started.stderr()).toMatch(/usage: svc-testkit serve/);
    expect(started.stderr().length).toBeLessThan(1000);
  });
});
