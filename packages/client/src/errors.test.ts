import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '@svc/protocol';
import {
  API_ERRORS,
  ApiError,
  AppRemovedError,
  ProcessSupersededError,
  SvcClientError,
  TransportDisconnectedError,
  WorkerRejectedError,
  apiErrorFrom,
} from './errors.ts';

describe('client errors', () => {
  it('has one ApiError class per registry code, with its status and code', () => {
    expect(Object.keys(API_ERRORS).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      const error = new API_ERRORS[code]('m');
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toBeInstanceOf(SvcClientError);
      expect(error.code).toBe(code);
      expect(error.status).toBe(ERROR_CODES[code].status);
    }
    expect(API_ERRORS.app_not_found.name).toBe('AppNotFoundError');
    expect(new API_ERRORS.process_superseded('x').name).toBe(
      'ProcessSupersededError'.replace('Error', '') + 'Error',
    );
  });

  it('maps an error body to the class of its code, keeping message and headers', () => {
    const body = new TextEncoder().encode(
      JSON.stringify({ error: 'forbidden', message: 'permission app-reg is required' }),
    );
    const error = apiErrorFrom(403, body, { 'www-authenticate': 'Bearer' });
    expect(error).toBeInstanceOf(API_ERRORS.forbidden);
    expect(error.message).toBe('permission app-reg is required');
    expect(error.headers['www-authenticate']).toBe('Bearer');
    const unknown = apiErrorFrom(502, new TextEncoder().encode('<html>bad gateway</html>'));
    expect(unknown).toBeInstanceOf(ApiError);
    expect([unknown.status, unknown.code]).toEqual([502, 'http_502']);
  });

  it('names the run-wait and worker outcomes as the spec does for JavaScript', () => {
    for (const [cls, name] of [
      [AppRemovedError, 'AppRemovedError'],
      [TransportDisconnectedError, 'TransportDisconnectedError'],
      [ProcessSupersededError, 'ProcessSupersededError'],
      [WorkerRejectedError, 'WorkerRejectedError'],
    ] as const) {
      const error = cls === AppRemovedError ? new AppRemovedError('app') : new cls('m');
      expect(error.name).toBe(name);
      expect(error).toBeInstanceOf(SvcClientError);
    }
  });
});
