// One ApiError meaning across @svc/client and the CLI: the client's error keeps its status, registry
// code and message in the CLI, which only adds the exit code and a hint; transport failures of the
// client become the CLI's reachability errors.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError as ClientApiError, apiErrorFrom, TransportDisconnectedError } from '@svc/client';
import { describe, expect, it } from 'vitest';
import { cliErrorOf } from './api.ts';
import { ApiError, CliError, EXIT } from './errors.ts';

const body = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

describe('cliErrorOf', () => {
  it.each([
    [401, 'invalid_token', EXIT.auth],
    [403, 'forbidden', EXIT.forbidden],
    [403, 'system_app', EXIT.forbidden],
    [404, 'not_found', EXIT.notFound],
    [409, 'conflict', EXIT.conflict],
    [500, 'some_future_code', EXIT.error],
  ])('keeps status %i and code %s of the client ApiError', (status, code, exit) => {
    const source = apiErrorFrom(status, body({ error: code, message: `m-${code}` }));
    expect(source).toBeInstanceOf(ClientApiError);
    const mapped = cliErrorOf(source, 'https://h:1') as ApiError;
    expect(mapped).toBeInstanceOf(ApiError);
    expect([mapped.status, mapped.errorCode, mapped.message, mapped.code]).toEqual([
      status,
      code,
      `m-${code}`,
      exit,
    ]);
  });

  it('turns a refused connection into the reachability error', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const mapped = cliErrorOf(
      new TransportDisconnectedError('HTTPS request failed', { cause }),
      'https://h:1',
    );
    expect(mapped).toBeInstanceOf(CliError);
    expect((mapped as CliError).code).toBe(EXIT.unreachable);
  });

  it('passes anything else through unchanged', () => {
    const other = new Error('aborted');
    expect(cliErrorOf(other, 'https://h:1')).toBe(other);
  });
});

describe('the CLI sends every daemon request through @svc/client', () => {
  it('no CLI source opens HTTP(S) requests of its own (sign-in talks to the issuer, not the daemon)', () => {
    const dir = import.meta.dirname;
    // auth.ts: openid-client's fetch to the OIDC issuer and the loopback redirect listener of sign-in.
    const sources = readdirSync(dir).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && f !== 'auth.ts',
    );
    expect(sources).toContain('commands.ts');
    for (const file of sources) {
      const text = readFileSync(join(dir, file), 'utf8');
      expect(text, file).not.toMatch(/from 'node:https?'/);
    }
  });
});
