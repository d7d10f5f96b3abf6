import { describe, expect, it } from 'vitest';
import { clientOriginAllowed, redirectUriAllowed } from './loopback-redirect.ts';

const REGISTERED = [
  'https://127.0.0.1:6060/',
  'https://[::1]:6060/',
  'https://localhost:6060/',
  'https://box.example:6060/',
];

describe('redirect URIs on loopback: any port (RFC 8252 §7.3), nothing else', () => {
  it('accepts the registered URIs and their loopback forms on any port', () => {
    for (const uri of [
      ...REGISTERED,
      'https://127.0.0.1:7060/',
      'https://127.0.0.1:40123/',
      'https://127.0.0.1/',
      'https://[::1]:7060/',
      'https://localhost:9443/',
    ])
      expect(redirectUriAllowed(uri, REGISTERED), uri).toBe(true);
  });

  it('refuses another host, scheme, path, query, userinfo, fragment or a non-canonical spelling', () => {
    for (const uri of [
      'https://box.example:7060/', // a host name: exact only
      'http://127.0.0.1:7060/', // scheme
      'http://127.0.0.1:6064/callback', // the administration UI's port, once registered
      'https://127.0.0.1:7060/callback', // path
      'https://127.0.0.1:7060/?x=1', // query
      'https://127.0.0.1:7060/#x', // fragment
      'https://user@127.0.0.1:7060/', // userinfo
      'https://127.0.0.1:7060@evil.example/', // userinfo, host evil.example
      'https://127.0.0.1.evil.example:7060/', // a name that starts like loopback
      'https://127.0.0.2:7060/', // another loopback address, not registered
      'https://127.0.0.1:7060', // not canonical (no path)
      'https://127.0.0.1:443/', // not canonical (default port spelled out)
      'https://127.0.0.1:7060/./', // dot segment
      'https://127.0.0.1:7060\\@evil.example/', // backslash
      'https://0x7f.0.0.1:7060/', // another spelling of 127.0.0.1
      'https://LOCALHOST:7060/',
      'javascript:alert(1)',
      'not a url',
    ])
      expect(redirectUriAllowed(uri, REGISTERED), uri).toBe(false);
  });

  it('matches only the host a registered URI names (127.0.0.1 does not open localhost)', () => {
    expect(redirectUriAllowed('https://localhost:7060/', ['https://127.0.0.1:6060/'])).toBe(false);
    expect(redirectUriAllowed('https://127.0.0.1:7060/', ['https://127.0.0.1:6060'])).toBe(true);
  });
});

describe('CORS origins of browser clients (clientBasedCORS)', () => {
  const web = { clientAuthMethod: 'none', redirectUris: REGISTERED };
  it("allows the redirect URIs' origins, loopback ones on any port", () => {
    for (const origin of [
      'https://127.0.0.1:6060',
      'https://127.0.0.1:7060',
      'https://[::1]:9',
      'https://box.example:6060',
    ])
      expect(clientOriginAllowed(origin, web, 'token'), origin).toBe(true);
  });
  it('refuses other origins, `null`, and confidential clients outside userinfo', () => {
    for (const origin of [
      'null',
      'https://box.example:7060',
      'http://127.0.0.1:7060',
      'https://evil.example',
    ])
      expect(clientOriginAllowed(origin, web, 'token'), origin).toBe(false);
    const confidential = { clientAuthMethod: 'client_secret_basic', redirectUris: REGISTERED };
    expect(clientOriginAllowed('https://127.0.0.1:6060', confidential, 'token')).toBe(false);
    expect(clientOriginAllowed('https://127.0.0.1:6060', confidential, 'userinfo')).toBe(true);
  });
});
