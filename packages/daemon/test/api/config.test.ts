// GET/POST /svc/config in App Mesh 3.0's sectioned form against a real daemon: a partial document
// merges, live keys act at once (the log level: DEBUG lines appear after the POST and not before),
// start-only keys are listed in `restart_required` and apply after a restart, bad input changes
// nothing. The earlier flat file shape is still read at start.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import { waitFor } from '../helpers/wait-for.ts';

let first: TestDaemon;
/** The daemon now running on first's home (restarted by one test). */
let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  // The earlier flat shape in the install file: translated at start.
  first = await startTestDaemon({ files: { 'config/config.yaml': 'labels:\n  zone: flat-file\n' } });
  daemon = first;
  admin = await daemon.token('admin');
});
afterAll(async () => {
  if (daemon !== first) await daemon?.close();
  await first?.close(); // removes the home and the issuer
});

type Doc = Record<string, Record<string, unknown>> & { restart_required?: string[] };

async function logLines(): Promise<
  { level: string; msg: string; path?: string; restart_required?: string[] }[]
> {
  const text = await readFile(join(daemon.workDir, 'server.log'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { level: string; msg: string });
}

async function post(body: unknown, token = admin) {
  return daemon.rest().call('POST', '/svc/config', { token, body });
}

describe('GET /svc/config', () => {
  it('answers the sectioned document (the flat install file translated)', async () => {
    const r = await daemon.rest().call('GET', '/svc/config', { token: await daemon.token('viewer') });
    expect(r.status, r.text()).toBe(200);
    const doc = r.json<Doc>();
    expect(Object.keys(doc).sort()).toEqual(['Auth', 'BaseConfig', 'Labels', 'REST', 'Registry']);
    expect(doc['BaseConfig']).toMatchObject({
      LogLevel: 'INFO',
      DefaultExecUser: '',
      DisableExecUser: false,
      ScheduleIntervalSeconds: 10,
      PosixTimezone: '',
    });
    expect(doc['REST']).toMatchObject({ ListenAddress: '127.0.0.1', Limits: { MaxConnections: 4096 } });
    expect(doc['Registry']).toMatchObject({ Url: null });
    expect(doc['Labels']).toEqual({ zone: 'flat-file' });
  });
});

describe('POST /svc/config', () => {
  it('turns DEBUG on at once: debug lines appear after the POST and not before', async () => {
    const rest = daemon.rest();
    expect((await rest.call('GET', '/svc/labels', { token: admin })).status).toBe(200);
    const r = await post({ BaseConfig: { LogLevel: 'DEBUG' } });
    expect(r.status, r.text()).toBe(200);
    expect(r.json<Doc>()['BaseConfig']!['LogLevel']).toBe('DEBUG');
    expect(r.json<Doc>().restart_required).toEqual([]);
    // The info line of this change comes after everything logged before it.
    const before = await waitFor(
      async () => {
        const lines = await logLines();
        const at = lines.findIndex((l) => l.msg === 'configuration changed');
        return at === -1 ? undefined : lines.slice(0, at);
      },
      { what: 'the configuration change in server.log', timeoutMs: 15_000 },
    );
    expect(before.filter((l) => l.level === 'debug')).toEqual([]);
    await rest.call('GET', '/svc/resources', { token: admin });
    await waitFor(
      async () =>
        (await logLines()).some(
          (l) => l.level === 'debug' && l.msg === 'request' && l.path === '/svc/resources',
        ),
      { what: 'a debug line for GET /svc/resources', timeoutMs: 15_000 },
    );
    // And off again: a request after INFO is not logged, up to the next info marker.
    expect((await post({ BaseConfig: { LogLevel: 'info' } })).status).toBe(200);
    await rest.call('GET', '/svc/app/none', { token: admin });
    expect((await post({ BaseConfig: { Description: 'marker' } })).status).toBe(200);
    const after = await waitFor(
      async () => {
        const lines = await logLines();
        const changes = lines.flatMap((l, i) => (l.msg === 'configuration changed' ? [i] : []));
        return changes.length >= 3 ? lines.slice(changes[1]! + 1, changes[2]) : undefined;
      },
      { what: 'the third configuration change', timeoutMs: 15_000 },
    );
    expect(after.filter((l) => l.level === 'debug' && l.path === '/svc/app/none')).toEqual([]);
  });

  it('answers the SDK set_log_level shape: BaseConfig.LogLevel of the returned document', async () => {
    const r = await post({ BaseConfig: { LogLevel: 'WARN' } });
    expect(r.json<Doc>()['BaseConfig']!['LogLevel']).toBe('WARN');
    expect((await post({ BaseConfig: { LogLevel: 'INFO' } })).status).toBe(200);
  });

  it('PosixTimezone applies at once to processes started after the POST, and clearing it restores the host zone', async () => {
    const rest = daemon.rest();
    const tzOf = async (): Promise<string> => {
      const r = await rest.call('POST', '/svc/app/syncrun', {
        token: admin,
        body: { command: 'echo "tz=${TZ-unset}"', shell: true },
      });
      expect(r.status, r.text()).toBe(200);
      return r.text().trim();
    };
    const before = await tzOf();
    const set = await post({ BaseConfig: { PosixTimezone: 'Asia/Tokyo' } });
    expect(set.status, set.text()).toBe(200);
    expect(set.json<Doc>().restart_required ?? []).not.toContain('BaseConfig.PosixTimezone');
    expect(await tzOf()).toBe('tz=Asia/Tokyo');
    expect((await post({ BaseConfig: { PosixTimezone: '' } })).status).toBe(200);
    expect(await tzOf()).toBe(before);
  });

  it('lists start-only keys in restart_required, persists them, and they apply after a restart', async () => {
    const r = await post({
      BaseConfig: { ScheduleIntervalSeconds: 3, DefaultExecUser: 'nobody', Description: 'lab host' },
      REST: { Limits: { MaxConnectionsPerIp: 77 } },
      Labels: { rack: 'r1' },
    });
    expect(r.status, r.text()).toBe(200);
    const doc = r.json<Doc>();
    expect(doc.restart_required!.sort()).toEqual([
      'BaseConfig.ScheduleIntervalSeconds',
      'REST.Limits.MaxConnectionsPerIp',
    ]);
    // Live keys show at once; start-only keys keep their running value until the restart.
    expect(doc['BaseConfig']).toMatchObject({ Description: 'lab host', DefaultExecUser: 'nobody' });
    expect(doc['BaseConfig']!['ScheduleIntervalSeconds']).toBe(10);
    expect(doc['Labels']).toEqual({ zone: 'flat-file', rack: 'r1' });
    // Sending a start-only key with its running value needs no restart.
    const same = await post({ REST: { Limits: { MaxConnections: 4096 } } });
    expect(same.json<Doc>().restart_required).toEqual([]);

    await daemon.stop();
    const again = await startTestDaemon({ home: daemon.home, issuer: daemon.issuer });
    try {
      const view = (await again.rest().call('GET', '/svc/config', { token: admin })).json<Doc>();
      expect(view['BaseConfig']).toMatchObject({ ScheduleIntervalSeconds: 3, Description: 'lab host' });
      expect((view['REST']!['Limits'] as Record<string, number>)['MaxConnectionsPerIp']).toBe(77);
      expect(view['Labels']).toEqual({ zone: 'flat-file', rack: 'r1' });
      const onDisk = await readFile(join(daemon.workDir, 'config', 'config.yaml'), 'utf8');
      expect(onDisk).toContain('BaseConfig:');
      expect(onDisk).not.toContain('log_level');
    } finally {
      await again.stop();
    }
    daemon = await startTestDaemon({ home: daemon.home, issuer: daemon.issuer });
  });

  it.each([
    ['an unknown key', { BaseConfig: { LogLevle: 'DEBUG' } }, /BaseConfig.*LogLevle/],
    ['an unknown section', { Security: {} }, /Security/],
    ['a bad level', { BaseConfig: { LogLevel: 'LOUD' } }, /BaseConfig\.LogLevel/],
    ['a port out of range', { REST: { RestPort: 70000 } }, /REST\.RestPort/],
    ['a wrong type', { BaseConfig: { DisableExecUser: 'no' } }, /BaseConfig\.DisableExecUser/],
    ['a hostile user name', { BaseConfig: { DefaultExecUser: '../../root\n' } }, /DefaultExecUser/],
    ['an unknown time zone', { BaseConfig: { PosixTimezone: 'Nowhere/Land' } }, /PosixTimezone/],
    ['the flat shape', { log_level: 'debug' }, /flat configuration shape/],
    ['an array', [], /JSON object/],
    [
      'inconsistent limits',
      { REST: { Limits: { HeadersTimeoutMs: 9000, RequestTimeoutMs: 1000 } } },
      /HeadersTimeoutMs/,
    ],
    ['an oversized label', { Labels: { big: 'x'.repeat(2000) } }, /Labels\.big/],
  ])('refuses %s with 400 and changes nothing', async (_label, body, message) => {
    const before = (await daemon.rest().call('GET', '/svc/config', { token: admin })).text();
    const r = await post(body);
    expect(r.status, r.text()).toBe(400);
    expect(r.json<{ error: string; message: string }>()).toMatchObject({ error: 'bad_request' });
    expect(r.json<{ message: string }>().message).toMatch(message);
    expect((await daemon.rest().call('GET', '/svc/config', { token: admin })).text()).toBe(before);
  });

  it('refuses a body that is not JSON, and a huge one', async () => {
    const rest = daemon.rest();
    const bad = await rest.call('POST', '/svc/config', {
      token: admin,
      rawBody: '{"BaseConfig": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    const many = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, 'v']));
    const tooMany = await post({ Labels: many });
    expect(tooMany.status).toBe(400);
  });

  it('keeps the labels endpoints on the Labels section', async () => {
    const rest = daemon.rest();
    expect(
      (await rest.call('PUT', '/svc/label/tier', { token: admin, query: { value: 'gold' } })).status,
    ).toBe(200);
    let doc = (await rest.call('GET', '/svc/config', { token: admin })).json<Doc>();
    expect(doc['Labels']).toMatchObject({ tier: 'gold' });
    expect((await rest.call('DELETE', '/svc/label/tier', { token: admin })).status).toBe(200);
    doc = (await rest.call('GET', '/svc/config', { token: admin })).json<Doc>();
    expect(doc['Labels']).not.toHaveProperty('tier');
    expect((await rest.call('GET', '/svc/labels', { token: admin })).json()).toEqual(doc['Labels']);
  });

  it('is refused without config-set (viewer, maintenance) and without a token', async () => {
    for (const role of ['viewer', 'maintenance', 'nobody'] as const) {
      const r = await post({ BaseConfig: { LogLevel: 'DEBUG' } }, await daemon.token(role));
      expect(r.status, role).toBe(403);
    }
    const anonymous = await daemon.rest().call('POST', '/svc/config', { body: { BaseConfig: {} } });
    expect(anonymous.status).toBe(401);
    const view = (await daemon.rest().call('GET', '/svc/config', { token: admin })).json<Doc>();
    expect(view['BaseConfig']!['LogLevel']).toBe('INFO');
  });
});
