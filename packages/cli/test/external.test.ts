// `svc` against a real svcd in external mode (testkit issuer), authenticated by SVC_BEARER_TOKEN:
// the forms scripts rely on (ls -o json, add -f, run --, logs [-f], view, rm, loginfo), exit codes,
// TLS trust and that the token is never printed.
import { writeFile, rm as remove } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svcEnv, type SvcEnv, type SvcRun } from './helpers.ts';

let daemon: TestDaemon;
let svc: SvcEnv;
let token: string;
const outputs: SvcRun[] = [];

beforeAll(async () => {
  daemon = await startTestDaemon();
  token = await daemon.token('admin');
  // SVC_HOME makes svc trust $SVC_HOME/work/ssl/ca.pem, the daemon's generated CA.
  svc = await svcEnv({ SVC_HOME: daemon.home, SVC_BEARER_TOKEN: token });
});
afterAll(async () => {
  await svc?.cleanup();
  await daemon?.close();
});

async function run(args: string[], options?: Parameters<SvcEnv['run']>[1]): Promise<SvcRun> {
  const result = await svc.run(['-H', daemon.restUrl, ...args], options);
  outputs.push(result);
  return result;
}

describe('svc with SVC_BEARER_TOKEN against a real daemon', () => {
  it('add -f app.yaml, ls -o json, view, logs, logs -f, rm', async () => {
    const flag = join(svc.configDir, 'flag');
    const file = join(svc.configDir, 'app.yaml');
    await writeFile(
      file,
      [
        'name: cli-web',
        'description: a test app',
        'shell: true',
        'command: |',
        '  echo first line',
        '  while [ ! -f "$FLAG" ]; do sleep 0.05; done',
        '  echo second line',
        '  exec sleep 600',
        'env:',
        `  FLAG: ${flag}`,
        '',
      ].join('\n'),
    );
    const added = await run(['add', '-f', file]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('application/cli-web registered');

    const listed = await run(['ls', '-o', 'json']);
    expect(listed.code, listed.stderr).toBe(0);
    const apps = JSON.parse(listed.stdout) as { name: string; command: string }[];
    expect(apps.map((a) => a.name)).toContain('cli-web');

    const table = await run(['ls']);
    expect(table.stdout).toMatch(/^NAME\s+STATE/);
    expect(table.stdout).toMatch(/cli-web\s+(running|stopped)/);

    const viewed = await run(['view', 'cli-web', '-o', 'json']);
    expect(viewed.code, viewed.stderr).toBe(0);
    expect((JSON.parse(viewed.stdout) as { description: string }).description).toBe('a test app');

    // `logs -f` (STDOUT events over WSS) and `logs -f --poll` (long-poll) print what is there,
    // then receive the line written later.
    const events = svc.spawn(['-H', daemon.restUrl, 'logs', '-f', 'cli-web']);
    const poll = svc.spawn(['-H', daemon.restUrl, 'logs', '-f', '--poll', 'cli-web']);
    for (const follower of [events, poll]) await follower.waitFor(/first line\n/);
    expect(events.stdout() + poll.stdout()).not.toContain('second line');
    await writeFile(flag, '');
    for (const follower of [events, poll]) {
      await follower.waitFor(/second line\n/);
      expect(follower.stdout()).toBe('first line\nsecond line\n');
      follower.child.kill('SIGINT');
      expect(await follower.exited).toBe(130);
    }
    expect(events.stderr()).not.toContain('unavailable'); // the events path, not the fallback

    const printed = await run(['logs', 'cli-web']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toBe('first line\nsecond line\n');

    const removed = await run(['rm', 'cli-web']);
    expect(removed.code, removed.stderr).toBe(0);
    const gone = await run(['view', 'cli-web']);
    expect(gone.code).toBe(5);
    expect(gone.stderr).toMatch(/^svc: .*cli-web/);
    expect(gone.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('add with flags and restart/disable/enable', async () => {
    const added = await run(['add', 'cli-flags', '--cmd', 'sleep 600', '--env', 'A=1', '--env', 'B=two']);
    expect(added.code, added.stderr).toBe(0);
    const viewed = JSON.parse((await run(['view', 'cli-flags', '-o', 'json'])).stdout) as {
      env: Record<string, string>;
    };
    expect(viewed.env).toEqual({ A: '1', B: 'two' });
    for (const action of ['disable', 'enable', 'restart']) {
      const r = await run([action, 'cli-flags']);
      expect(r.code, r.stderr).toBe(0);
    }
    const disabled = await run(['disable', 'cli-flags']);
    expect(disabled.stdout).toContain('application/cli-flags disabled');
    const yaml = await run(['view', 'cli-flags', '-o', 'yaml']);
    expect(yaml.stdout).toMatch(/^enabled: false$/m);
    expect((await run(['rm', 'cli-flags'])).code).toBe(0);
  });

  it('run -- <command> streams the output and exits with the exit code; signals map to 128+N', async () => {
    const three = await run(['run', '--', 'sh', '-c', 'echo hi; exit 3']);
    expect(three.stdout).toBe('hi\n');
    expect(three.code, three.stderr).toBe(3);
    const ok = await run(['run', '--', 'echo', 'a b', "it's"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe("a b it's\n");
    const killed = await run(['run', '--', 'sh', '-c', 'kill -TERM $$']);
    expect(killed.code).toBe(143);
    // The transient run apps are deleted after the observed exit.
    const apps = JSON.parse((await run(['ls', '-o', 'json'])).stdout) as { name: string }[];
    expect(apps.filter((a) => a.name.startsWith('run'))).toEqual([]);
  });

  it("task <app> <payload> prints the worker's result", async () => {
    const worker = join(import.meta.dirname, 'fixtures', 'upper-worker.ts');
    const added = await run([
      'add',
      'cli-worker',
      '--cmd',
      `${process.execPath} ${worker}`,
      '--env',
      `WORKER_CA=${join(daemon.workDir, 'ssl', 'ca.pem')}`,
    ]);
    expect(added.code, added.stderr).toBe(0);
    const answered = await run(['task', '--timeout', '30', 'cli-worker', 'hello worker']);
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toBe('HELLO WORKER');
    const piped = await run(['task', 'cli-worker', '-'], { stdin: 'from stdin' });
    expect(piped.stdout).toBe('FROM STDIN');
    expect((await run(['rm', 'cli-worker'])).code).toBe(0);
  });

  it('labels, config, resources and principal print structured output', async () => {
    expect((await run(['labels', 'set', 'zone=cli'])).code).toBe(0);
    const labels = await run(['labels', '-o', 'json']);
    expect((JSON.parse(labels.stdout) as Record<string, string>)['zone']).toBe('cli');
    expect((await run(['labels', 'rm', 'zone'])).code).toBe(0);
    const config = await run(['config', '-o', 'json']);
    expect(config.code, config.stderr).toBe(0);
    expect(typeof JSON.parse(config.stdout)).toBe('object');
    const resources = await run(['resources', '-o', 'json']);
    expect(resources.code, resources.stderr).toBe(0);
    const self = await run(['principal', '-o', 'json']);
    expect((JSON.parse(self.stdout) as { principal_id: string }).principal_id).toBe('test-admin');
  });

  it('loginfo exits nonzero with only a bearer; no credentials is exit 3; 403 is exit 4', async () => {
    const info = await run(['loginfo']);
    expect(info.code).toBe(3);
    expect(info.stderr).toContain('SVC_BEARER_TOKEN');
    const none = await run(['ls'], { env: { SVC_BEARER_TOKEN: undefined } });
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('svc login');
    const viewer = await run(['add', 'nope', '--cmd', 'true'], {
      env: { SVC_BEARER_TOKEN: await daemon.token('viewer') },
    });
    expect(viewer.code).toBe(4);
    expect(viewer.stderr).toMatch(/^svc: /);
  });

  it('the password grant is refused when the server does not advertise it', async () => {
    const r = await run(['login', '--username', 'someone@example.org', '--password-stdin'], {
      stdin: 'not-sent\n',
      env: { SVC_BEARER_TOKEN: undefined },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('does not offer the password grant');
    expect(r.stderr + r.stdout).not.toContain('not-sent');
  });

  it('TLS is verified: without the CA exit 6 with a hint; --ca and NODE_EXTRA_CA_CERTS trust it', async () => {
    const untrusted = await run(['ls'], { env: { SVC_HOME: undefined } });
    expect(untrusted.code).toBe(6);
    expect(untrusted.stderr).toMatch(/not trusted[\s\S]*--ca/);
    const ca = join(daemon.workDir, 'ssl', 'ca.pem');
    expect((await run(['--ca', ca, 'ls'], { env: { SVC_HOME: undefined } })).code).toBe(0);
    expect((await run(['ls'], { env: { SVC_HOME: undefined, NODE_EXTRA_CA_CERTS: ca } })).code).toBe(0);
  });

  it('usage errors exit 2 without a stack trace', async () => {
    const unknown = await run(['frobnicate']);
    expect(unknown.code).toBe(2);
    const badFlag = await run(['ls', '--nope']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).not.toMatch(/\n\s+at /);
    const completion = await run(['completion', 'bash']);
    expect(completion.code).toBe(0);
    expect(completion.stdout).toContain('complete -F _svc svc');
  });

  it('never prints the token', async () => {
    expect(outputs.length).toBeGreaterThan(10);
    for (const r of outputs) {
      expect(r.stdout.includes(token)).toBe(false);
      expect(r.stderr.includes(token)).toBe(false);
    }
    await remove(join(svc.configDir, 'app.yaml'), { force: true });
  });
});
