// Files and variables edited by hand: a bad configuration or policy stops svcd before it serves
// anything, with a message naming the file (or variable) and the key, and the file is left exactly
// as the operator wrote it. A broken application file does not stop the daemon: it is logged, left
// byte-identical on disk, and every other application loads.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { closeDaemons, getApp, killGroup, ok, serverLog, waitRunning } from './helpers.ts';

let homes: string[] = [];
let daemons: TestDaemon[] = [];
let orphans: number[] = [];
afterEach(async () => {
  await closeDaemons(daemons);
  for (const pgid of orphans) killGroup(pgid);
  for (const home of homes) await rm(home, { recursive: true, force: true });
  homes = [];
  daemons = [];
  orphans = [];
});

interface Refusal {
  label: string;
  files?: Record<string, string>;
  env?: Record<string, string>;
  /** What svcd's stderr must say (file or variable, key, problem). */
  message: RegExp;
}

const POLICY_OK = 'principals:\n  test-admin:\n    roles: [svc-admin]\n';

const REFUSALS: Refusal[] = [
  {
    label: 'config.yaml that is not YAML',
    files: { 'config/config.yaml': 'rest_port: [1, 2\nlimits: {\n' },
    message: /\/config\/config\.yaml: not valid YAML/,
  },
  {
    label: 'config.yaml with an unknown key',
    files: { 'config/config.yaml': 'rest_prot: 6058\n' },
    message: /\/config\/config\.yaml: .*rest_prot/,
  },
  {
    label: 'config.yaml with an unknown nested key',
    files: { 'config/config.yaml': 'limits:\n  max_conections: 5\n' },
    message: /\/config\/config\.yaml: limits: .*max_conections/,
  },
  {
    label: 'config.yaml with port 70000',
    files: { 'config/config.yaml': 'tcp_port: 70000\n' },
    message: /\/config\/config\.yaml: tcp_port: .*65535/,
  },
  {
    label: 'config.yaml with a wrong type',
    files: { 'config/config.yaml': 'limits:\n  max_body_bytes: lots\n' },
    message: /\/config\/config\.yaml: limits\.max_body_bytes: .*number/,
  },
  {
    label: 'work/config/config.yaml (the writable overrides) with a wrong type',
    files: { 'work/config/config.yaml': 'stop_grace_seconds: soon\n' },
    message: /\/work\/config\/config\.yaml: stop_grace_seconds: /,
  },
  {
    label: 'limits with a headers timeout longer than the request timeout',
    files: { 'config/config.yaml': 'limits:\n  request_timeout_ms: 1000\n  headers_timeout_ms: 5000\n' },
    message: /limits\.headers_timeout_ms \(5000\) must not exceed limits\.request_timeout_ms \(1000\)/,
  },
  {
    label: 'SVC_REST_PORT=abc',
    env: { SVC_REST_PORT: 'abc' },
    message: /SVC_REST_PORT: not a port number: abc/,
  },
  {
    label: 'SVC_TCP_PORT=70000',
    env: { SVC_TCP_PORT: '70000' },
    message: /SVC_TCP_PORT: not a port number: 70000/,
  },
  {
    label: 'SVC_AUTH_MODE=weird',
    env: { SVC_AUTH_MODE: 'weird' },
    message: /SVC_AUTH_MODE: expected builtin or external, got weird/,
  },
  {
    label: 'policy.yaml that is garbage',
    files: { 'work/auth/policy.yaml': 'principals: [unclosed\n\u0000\u0001 ::: {\n' },
    message: /\/work\/auth\/policy\.yaml: not valid YAML/,
  },
  {
    label: 'policy.yaml with an unknown permission in a custom role',
    files: { 'work/auth/policy.yaml': `${POLICY_OK}roles:\n  ops: [app-view, fly-to-the-moon]\n` },
    message: /\/work\/auth\/policy\.yaml: roles\.ops: unknown permission "fly-to-the-moon"/,
  },
  {
    label: 'policy.yaml granting a role that does not exist',
    files: { 'work/auth/policy.yaml': 'principals:\n  alice:\n    roles: [svc-admn]\n' },
    message: /\/work\/auth\/policy\.yaml: principals\."alice"\.roles: unknown role "svc-admn"/,
  },
];

describe('svcd refuses to start on a bad configuration, naming the source and the key', () => {
  for (const refusal of REFUSALS) {
    it(refusal.label, async () => {
      // Our own home, so that it survives the failed start and can be inspected.
      const home = await mkdtemp(join(tmpdir(), 'svc-test-config-'));
      homes.push(home);
      const files = { 'work/auth/policy.yaml': POLICY_OK, ...refusal.files };
      const error = await startTestDaemon({
        home,
        files,
        ...(refusal.env === undefined ? {} : { env: refusal.env }),
      }).then(
        (daemon) => {
          daemons.push(daemon);
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      expect(error, 'svcd must refuse to start').toBeInstanceOf(Error);
      expect(error!.message).toMatch(/svcd: cannot start: /);
      expect(error!.message).toMatch(refusal.message);
      // Nothing the operator wrote was changed or "repaired".
      for (const [file, content] of Object.entries(files))
        expect(await readFile(join(home, file), 'utf8'), file).toBe(content);
    });
  }
});

describe('a hand-edited application file', () => {
  it('is logged and left untouched; the daemon starts and the other apps load', async () => {
    const first = await startTestDaemon();
    daemons.push(first);
    const admin = await first.token('admin');
    for (const name of ['fine', 'victim'])
      ok(
        await first.rest().call('PUT', `/svc/app/${name}`, { token: admin, body: { command: 'sleep 600' } }),
        name,
      );
    const fine = await waitRunning(first, 'fine');
    const victim = await waitRunning(first, 'victim');
    orphans.push(victim.pid!); // its definition becomes unreadable: nobody else will stop it
    await first.stop();

    const apps = join(first.workDir, 'apps');
    const broken: Record<string, Buffer> = {
      // the registered file overwritten with garbage (not YAML, not UTF-8)
      'victim.yaml': Buffer.concat([
        Buffer.from('name: victim\ncommand: [unclosed\n  {{{ '),
        Buffer.from([0xff, 0xfe, 0x00]),
      ]),
      // valid YAML, invalid definition
      'schema.yaml': Buffer.from('name: schema\ncommand: 42\nstatus: 7\n'),
      // a copy under another name
      'copy.yaml': await readFile(join(apps, 'fine.yaml')),
    };
    for (const [file, bytes] of Object.entries(broken))
      await writeFile(join(apps, file), bytes, { mode: 0o600 });

    const second = await startTestDaemon({ home: first.home, issuer: first.issuer });
    daemons.push(second);
    const log = await serverLog(second);
    for (const file of Object.keys(broken))
      expect(log, `server.log names ${file}`).toMatch(
        new RegExp(`application file rejected[^\\n]*apps/${file.replace('.', '\\.')}`),
      );
    const after = await getApp(second, 'fine');
    expect(after.pid, 'the valid app was re-attached').toBe(fine.pid);
    const token = await second.token('admin');
    for (const name of ['victim', 'schema', 'copy'])
      expect((await second.rest().call('GET', `/svc/app/${name}`, { token })).status, name).toBe(404);

    // Nothing rewrote or removed the broken files, not even a clean shutdown.
    await second.stop();
    for (const [file, bytes] of Object.entries(broken))
      expect((await readFile(join(apps, file))).equals(bytes), `${file} is byte-identical`).toBe(true);
  });
});
