// Bearer tokens through the real daemon: every classic forgery and every garbage bearer is a 401
// invalid_token on REST, TCP and the WSS upgrade alike, no token ever reaches server.log (even at
// log level debug), and a tombstoned principal keeps only /svc/self. Also: the served OpenAPI
// document is the committed one.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgery } from '@svc/testkit';
import { startTestDaemon, type CallOptions, type PersistentClient, type TestDaemon } from '@svc/testkit';
import { ok, serverLog } from './helpers.ts';

const REPO_ROOT = resolve(import.meta.dirname, '../../../..');

let daemon: TestDaemon;
let tcp: PersistentClient;
beforeAll(async () => {
  daemon = await startTestDaemon({ files: { 'config/config.yaml': 'log_level: debug\n' } });
  tcp = await daemon.tcp();
});
afterAll(async () => {
  await daemon?.close();
});

const FORGERIES: Forgery[] = [
  'none',
  'HS256-with-public-key',
  'tampered',
  'unknown-kid',
  'expired',
  'wrong-aud',
  'wrong-iss',
];

interface Bad {
  label: string;
  /** Sent as `Authorization: Bearer <token>` unless `header` is set. */
  token?: string;
  header?: string;
  /** HTTP header values cannot carry characters above U+00FF: those go over TCP only. */
  tcpOnly?: boolean;
}

const INVALID_TOKEN_CHALLENGE =
  /^Bearer realm="svc", error="invalid_token", error_description="[\x20\x21\x23-\x5b\x5d-\x7e]+", resource_metadata="https:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource"$/;

async function badBearers(): Promise<Bad[]> {
  const bad: Bad[] = [];
  for (const alg of FORGERIES)
    bad.push({ label: `forged: ${alg}`, token: await daemon.issuer.mintWith({ alg }) });
  const valid = await daemon.token('admin');
  bad.push(
    { label: 'empty bearer', token: '' },
    { label: '"Bearer" followed by spaces only', token: '      ' },
    { label: 'bearer with inner spaces', token: 'garbage with spaces 5f3a9c' },
    { label: '20 KB bearer', token: 'A'.repeat(20 * 1024) },
    { label: '20 KB bearer shaped like a JWT', token: `${'a'.repeat(10 * 1024)}.${'b'.repeat(10 * 1024)}.c` },
    { label: 'Latin-1 bearer', token: 'tök\u00e9n-g\u00e4rbage-\u00ff' },
    { label: 'non-ASCII bearer', token: '令牌-🔑-garbage', tcpOnly: true },
    { label: 'control characters', token: 'abc\u0001\u0002def', tcpOnly: true },
    { label: 'a valid token with a trailing garbage segment', token: `${valid}.extra` },
    { label: 'a valid token, truncated signature', token: valid.slice(0, -10) },
    { label: 'Basic scheme', header: 'Basic dGVzdC1hZG1pbjpwYXNzd29yZA==' },
    { label: 'two bearers', header: `Bearer ${valid} Bearer ${valid}` },
  );
  return bad;
}

function callOptions(bad: Bad): CallOptions {
  return bad.header === undefined ? { token: bad.token! } : { headers: { authorization: bad.header } };
}

/** Strings that must appear nowhere: the whole credential and each long JWT segment. */
function secretsOf(bad: Bad): string[] {
  const value = bad.header ?? bad.token ?? '';
  const out = value.trim().length >= 8 ? [value.trim()] : [];
  for (const segment of value.split(/[.\s]/)) if (segment.length >= 16) out.push(segment);
  return out;
}

describe('invalid bearers are refused on every transport and never logged', () => {
  it('answers 401 invalid_token on REST (with the RFC 6750 challenge), TCP and the WSS upgrade', async () => {
    const bad = await badBearers();
    const rest = daemon.rest();
    for (const b of bad) {
      const secrets = secretsOf(b);
      if (b.tcpOnly !== true) {
        const r = await rest.call('GET', '/svc/applications', callOptions(b));
        expect({ label: b.label, status: r.status, error: r.json<{ error: string }>().error }).toEqual({
          label: b.label,
          status: 401,
          error: 'invalid_token',
        });
        expect(r.headers['www-authenticate'], b.label).toMatch(INVALID_TOKEN_CHALLENGE);
        for (const s of secrets) {
          expect(r.headers['www-authenticate'], b.label).not.toContain(s);
          expect(r.text(), b.label).not.toContain(s);
        }
        if (b.header === undefined)
          await expect(daemon.wss(b.token), b.label).rejects.toThrow(/^upgrade refused: 401$/);
      }
      const t = await tcp.call('GET', '/svc/applications', callOptions(b));
      expect({ label: b.label, status: t.status, error: t.json<{ error: string }>().error }).toEqual({
        label: b.label,
        status: 401,
        error: 'invalid_token',
      });
      for (const s of secrets) expect(t.text(), b.label).not.toContain(s);
    }

    // None of it pinned the TCP connection to anyone: a real token still works on it.
    const self = ok<{ principal_id: string }>(
      await tcp.call('GET', '/svc/self', { token: await daemon.token('admin') }),
      'self over TCP',
    );
    expect(self.principal_id).toBe('test-admin');

    const log = await serverLog(daemon);
    expect(log.length).toBeGreaterThan(0);
    for (const b of bad)
      for (const s of secretsOf(b)) expect(log.includes(s), `server.log contains ${b.label}`).toBe(false);
  });
});

describe('a tombstoned principal', () => {
  it('gets 403 on application operations but 200 with status tombstoned on /svc/self', async () => {
    const rest = daemon.rest();
    const developer = await daemon.token('developer');
    ok(
      await rest.call('PUT', '/svc/app/dev-owned', { token: developer, body: { command: 'sleep 600' } }),
      'developer registers its app',
    );
    const admin = await daemon.token('admin');
    const deleted = ok<{ status: string }>(
      await rest.call('DELETE', '/svc/principal/test-developer', { token: admin }),
      'tombstone',
    );
    expect(deleted.status).toBe('tombstoned');

    const attempts: [string, string, CallOptions?][] = [
      ['PUT', '/svc/app/dev-new', { body: { command: 'true' } }],
      ['PUT', '/svc/app/dev-owned', { body: { command: 'sleep 601' } }],
      ['GET', '/svc/app/dev-owned'],
      ['GET', '/svc/app/dev-owned/output'],
      ['POST', '/svc/app/dev-owned/disable'],
      ['DELETE', '/svc/app/dev-owned'],
      ['POST', '/svc/app/run', { body: { command: 'true' } }],
    ];
    const tcpDev = await daemon.tcp();
    for (const client of [rest, tcpDev]) {
      for (const [method, path, options] of attempts) {
        const r = await client.call(method, path, { ...options, token: developer });
        expect({
          via: client.kind,
          method,
          path,
          status: r.status,
          error: r.json<{ error: string }>().error,
        }).toEqual({
          via: client.kind,
          method,
          path,
          status: 403,
          error: 'principal_tombstoned',
        });
      }
      const self = ok<{ principal_id: string; status: string }>(
        await client.call('GET', '/svc/self', { token: developer }),
        'self',
      );
      expect(self).toMatchObject({ principal_id: 'test-developer', status: 'tombstoned' });
    }
    // The refusals changed nothing: the app is still there as registered.
    const app = ok<{ command: string; owner_principal_id: string }>(
      await rest.call('GET', '/svc/app/dev-owned', { token: admin }),
      'app still there',
    );
    expect(app).toMatchObject({ command: 'sleep 600', owner_principal_id: 'test-developer' });
  });
});

describe('served OpenAPI document', () => {
  it('GET /openapi.json deep-equals the committed spec/openapi.json', async () => {
    const committed: unknown = JSON.parse(await readFile(resolve(REPO_ROOT, 'spec/openapi.json'), 'utf8'));
    const served = ok(await daemon.rest().call('GET', '/openapi.json'), 'openapi');
    expect(served).toEqual(committed);
  });
});
