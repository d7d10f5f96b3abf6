import { describe, expect, it } from 'vitest';
import { issuerLocation, publicOrigin, refusesProcessKey, routeOf } from './routes.ts';

describe('routeOf', () => {
  it('sends the API, its OpenAPI document and RFC 9728 metadata to the daemon', () => {
    for (const path of ['/svc/app', '/svc/app/a%2Fb/output?position=3', '/svc', '/openapi.json'])
      expect(routeOf('GET', path)).toEqual({ to: 'daemon' });
    expect(routeOf('POST', '/.well-known/oauth-protected-resource')).toEqual({ to: 'daemon' });
    // The daemon refuses dot-segments inside its routes itself; the agent passes the raw path on.
    expect(routeOf('GET', '/svc/../etc/passwd')).toEqual({ to: 'daemon' });
  });

  it('sends /auth and everything under it to the issuer, any method', () => {
    expect(routeOf('POST', '/auth/token')).toEqual({ to: 'issuer' });
    expect(routeOf('GET', '/auth/.well-known/openid-configuration')).toEqual({ to: 'issuer' });
    expect(routeOf('GET', '/auth')).toEqual({ to: 'issuer' });
    expect(routeOf('GET', '/authx')).toEqual({ to: 'web', file: 'authx' });
    expect(routeOf('GET', '/svcx')).toEqual({ to: 'web', file: 'svcx' });
  });

  it('sends /mcp (any method, any query) to the MCP endpoint and its RFC 9728 metadata to the agent', () => {
    for (const method of ['GET', 'POST', 'DELETE', 'PUT'])
      expect(routeOf(method, '/mcp')).toEqual({ to: 'mcp' });
    expect(routeOf('POST', '/mcp?x=1')).toEqual({ to: 'mcp' });
    expect(routeOf('GET', '/.well-known/oauth-protected-resource/mcp')).toEqual({ to: 'mcp-metadata' });
    expect(routeOf('GET', '/mcp/x')).toEqual({ to: 'web', file: 'mcp/x' });
    expect(routeOf('GET', '/mcpx')).toEqual({ to: 'web', file: 'mcpx' });
  });

  it('names the public origin only from a well-formed Host', () => {
    expect(publicOrigin('svc.example:6060')).toBe('https://svc.example:6060');
    expect(publicOrigin('[::1]:6060')).toBe('https://[::1]:6060');
    for (const host of [undefined, '', 'evil.example/x', 'a b', 'x"y', 'h:6060@evil'])
      expect(publicOrigin(host)).toBeUndefined();
  });

  it('maps web UI paths to plain relative file names only', () => {
    expect(routeOf('GET', '/')).toEqual({ to: 'web', file: 'index.html' });
    expect(routeOf('HEAD', '/assets/app-1.js?v=2')).toEqual({ to: 'web', file: 'assets/app-1.js' });
    for (const path of [
      '/../etc/passwd',
      '/assets/../../x',
      '/%2e%2e/x',
      '/a%2Fb',
      '/.env',
      '//etc/passwd',
      '/assets/',
      '/a\\..\\b',
    ])
      expect(routeOf('GET', path)).toMatchObject({ to: 'refuse', status: 404 });
    expect(routeOf('POST', '/index.html')).toMatchObject({ to: 'refuse', status: 405 });
  });
});

describe('issuerLocation', () => {
  const issuer = 'http://127.0.0.1:6062';
  it('moves a redirect to the loopback issuer onto the agent origin the client used', () => {
    expect(issuerLocation('http://127.0.0.1:6062/auth/auth/abc?x=1', issuer, 'svc.example:6060')).toBe(
      'https://svc.example:6060/auth/auth/abc?x=1',
    );
    expect(issuerLocation('/auth/interaction/abc', issuer, '[::1]:6060')).toBe(
      'https://[::1]:6060/auth/interaction/abc',
    );
  });
  it("leaves other origins alone: the client's redirect_uri, another site, another port", () => {
    for (const other of [
      'http://127.0.0.1:49152/callback?code=c&state=s',
      'https://evil.example/auth',
      'http://127.0.0.1:6063/healthz',
    ])
      expect(issuerLocation(other, issuer, 'svc.example:6060')).toBe(other);
  });
  it('leaves the location alone for a missing or hostile Host header', () => {
    const location = 'http://127.0.0.1:6062/auth/auth/abc';
    for (const host of [undefined, '', 'evil.example/path', 'a b', 'evil.example@x', 'x'.repeat(300)])
      expect(issuerLocation(location, issuer, host)).toBe(location);
  });
});

describe('refusesProcessKey', () => {
  it('relays a process key only from a loopback client', () => {
    const key = { 'x-svc-process-key': 'k' };
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.9.9.9'])
      expect(refusesProcessKey(key, address), address).toBe(false);
    for (const address of ['192.0.2.7', '10.0.0.1', '::ffff:10.0.0.1', 'fe80::1', '', undefined])
      expect(refusesProcessKey(key, address), String(address)).toBe(true);
    // No key, nothing to refuse; an empty or repeated header is still a key.
    expect(refusesProcessKey({}, '192.0.2.7')).toBe(false);
    expect(refusesProcessKey({ 'x-svc-process-key': '' }, '192.0.2.7')).toBe(true);
    expect(refusesProcessKey({ 'x-svc-process-key': ['a', 'b'] }, '192.0.2.7')).toBe(true);
  });
});
