import { describe, expect, it } from 'vitest';
import {
  authenticateWorker,
  connectionRemoteAddress,
  hasProcessKey,
  type KeyVerdict,
} from './process-key.ts';
import { isLoopbackAddress } from '@svc/platform/process-key';

const KEY = 'a'.repeat(64);

function attempt(
  request: { query?: Record<string, string>; headers?: Record<string, string>; remoteAddress?: string },
  verdict: KeyVerdict = 'ok',
): { code: string; status: number; message: string } | 'ok' {
  try {
    authenticateWorker(
      {
        query: request.query ?? {},
        headers: request.headers ?? { 'x-svc-process-key': KEY },
        remoteAddress: request.remoteAddress ?? '127.0.0.1',
      },
      'app',
      () => verdict,
    );
    return 'ok';
  } catch (error) {
    const e = error as { code: string; status: number; message: string };
    return { code: e.code, status: e.status, message: e.message };
  }
}

describe('authenticateWorker', () => {
  it('accepts the current key in the header on loopback', () => {
    expect(attempt({})).toBe('ok');
  });

  it.each(['process_key', 'key', 'X-Svc-Process-Key', 'PROCESS_KEY'])(
    'answers a key in the query string (%s) with 400 obsolete_process_key, even with a valid header',
    (name) => {
      const result = attempt({ query: { [name]: KEY } });
      expect(result).toMatchObject({ code: 'obsolete_process_key', status: 400 });
      expect(JSON.stringify(result)).not.toContain(KEY);
    },
  );

  it('refuses a non-loopback transport with 403 process_key_transport', () => {
    expect(attempt({ remoteAddress: '10.1.2.3' })).toMatchObject({
      code: 'process_key_transport',
      status: 403,
    });
  });

  it.each([{ 'x-forwarded-for': '127.0.0.1' }, { 'x-forwarded-for': '' }, { forwarded: 'for=127.0.0.1' }])(
    'refuses a forwarded request on a loopback socket (%o) with 403 process_key_transport',
    (extra) => {
      expect(attempt({ headers: { 'x-svc-process-key': KEY, ...extra } })).toMatchObject({
        code: 'process_key_transport',
        status: 403,
      });
    },
  );

  it('marks a forwarded WSS upgrade so that its task session is never loopback', () => {
    expect(connectionRemoteAddress('127.0.0.1', {})).toBe('127.0.0.1');
    const marked = connectionRemoteAddress('127.0.0.1', { 'x-forwarded-for': '203.0.113.9' });
    expect(isLoopbackAddress(marked)).toBe(false);
    expect(attempt({ remoteAddress: marked })).toMatchObject({ code: 'process_key_transport' });
  });

  it('answers a missing header with 400 bad_request', () => {
    expect(attempt({ headers: {} })).toMatchObject({ code: 'bad_request', status: 400 });
  });

  it('answers a superseded key with 412 and an unknown key with 403, never echoing the key', () => {
    const superseded = attempt({}, 'superseded');
    const unknown = attempt({}, 'unknown');
    expect(superseded).toMatchObject({ code: 'process_superseded', status: 412 });
    expect(unknown).toMatchObject({ code: 'forbidden', status: 403 });
    expect(JSON.stringify([superseded, unknown])).not.toContain(KEY);
  });
});

describe('authenticateWorker: relays and pinned sessions', () => {
  const verify = (_app: string, key: string): KeyVerdict =>
    key === KEY || key === 'b'.repeat(64) ? 'ok' : 'unknown';
  const forwarded = { 'x-svc-process-key': KEY, 'x-forwarded-for': '127.0.0.1' };

  it('accepts a key svc-agent relayed from a loopback client, and refuses one relayed from elsewhere', () => {
    expect(() =>
      authenticateWorker(
        { query: {}, headers: forwarded, remoteAddress: '127.0.0.1', relayedByAgent: true },
        'app',
        verify,
      ),
    ).not.toThrow();
    expect(() =>
      authenticateWorker(
        { query: {}, headers: forwarded, remoteAddress: '192.0.2.7', relayedByAgent: true },
        'app',
        verify,
      ),
    ).toThrow(expect.objectContaining({ code: 'process_key_transport' }) as Error);
    // Forwarded without the agent's proof: refused although the socket is loopback.
    expect(() =>
      authenticateWorker({ query: {}, headers: forwarded, remoteAddress: '127.0.0.1' }, 'app', verify),
    ).toThrow(expect.objectContaining({ code: 'process_key_transport' }) as Error);
  });

  it('pins a bearer-less connection to the first key it presented', () => {
    const connection = { principalId: undefined };
    const withKey = (key: string, app = 'app') =>
      authenticateWorker(
        { query: {}, headers: { 'x-svc-process-key': key }, remoteAddress: '127.0.0.1', connection },
        app,
        verify,
      );
    expect(hasProcessKey(connection)).toBe(false);
    withKey(KEY);
    expect(hasProcessKey(connection)).toBe(true);
    withKey(KEY);
    expect(() => withKey('b'.repeat(64))).toThrow(expect.objectContaining({ code: 'forbidden' }) as Error);
    expect(() => withKey(KEY, 'other')).toThrow(expect.objectContaining({ code: 'forbidden' }) as Error);
    // A connection with a bearer is not pinned.
    const bearer = { principalId: 'alice' };
    for (const key of [KEY, 'b'.repeat(64)])
      authenticateWorker(
        { query: {}, headers: { 'x-svc-process-key': key }, remoteAddress: '::1', connection: bearer },
        'app',
        verify,
      );
    expect(hasProcessKey(bearer)).toBe(false);
  });
});
