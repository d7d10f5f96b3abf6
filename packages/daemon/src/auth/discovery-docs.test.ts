import { describe, expect, it } from 'vitest';
import {
  authConfigDocument,
  protectedResourceDocument,
  publicBaseUrl,
  resourceMetadataUrl,
} from './discovery-docs.ts';

const base = { issuer: 'http://127.0.0.1:6062/auth', audience: 'svc-api' };

describe('authConfigDocument', () => {
  it('lists password only in builtin mode with the password flow enabled', () => {
    expect(authConfigDocument({ ...base, mode: 'builtin', passwordFlow: true }).flows).toContain('password');
    expect(authConfigDocument({ ...base, mode: 'builtin', passwordFlow: false }).flows).not.toContain(
      'password',
    );
    expect(authConfigDocument({ ...base, mode: 'external', passwordFlow: true }).flows).not.toContain(
      'password',
    );
  });

  it('names the issuer, audience and public clients, and the token endpoint only when given', () => {
    const doc = authConfigDocument({ ...base, mode: 'external', passwordFlow: false });
    expect(doc).toEqual({
      mode: 'external',
      issuer: base.issuer,
      audience: 'svc-api',
      flows: ['authorization_code', 'device_code', 'refresh_token', 'client_credentials'],
      clients: { cli: 'svc-cli', web: 'svc-web' },
      // App Mesh 3.0's OAuth client (oauth.py from_appmesh) reads these.
      public_client_id: 'svc-cli',
      scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
      refresh_token: true,
    });
    const withEndpoint = authConfigDocument({
      ...base,
      mode: 'builtin',
      passwordFlow: true,
      tokenEndpoint: 'https://h:6060/auth/token',
    });
    expect(withEndpoint.token_endpoint).toBe('https://h:6060/auth/token');
  });
});

describe('protectedResourceDocument', () => {
  it('follows RFC 9728', () => {
    expect(protectedResourceDocument({ ...base, resource: 'https://127.0.0.1:6060' })).toEqual({
      resource: 'https://127.0.0.1:6060',
      authorization_servers: [base.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: ['openid', 'audience:server:client_id:svc-api'],
      resource_name: 'svc',
    });
  });

  it('builds the metadata URL by inserting the well-known path', () => {
    expect(resourceMetadataUrl('https://h:6060')).toBe('https://h:6060/.well-known/oauth-protected-resource');
    expect(resourceMetadataUrl('https://h:6060/')).toBe(
      'https://h:6060/.well-known/oauth-protected-resource',
    );
    expect(resourceMetadataUrl('https://h/api/')).toBe('https://h/.well-known/oauth-protected-resource/api');
  });
});

describe('publicBaseUrl', () => {
  const own = 'https://127.0.0.1:6058';
  it('names the forwarded host when a proxy forwarded https', () => {
    expect(
      publicBaseUrl({ 'x-forwarded-host': 'svc.example.org:6060', 'x-forwarded-proto': 'https' }, own),
    ).toBe('https://svc.example.org:6060');
    expect(publicBaseUrl({ 'x-forwarded-host': '[::1]:6060', 'x-forwarded-proto': 'https' }, own)).toBe(
      'https://[::1]:6060',
    );
  });
  it('keeps its own URL without, or with a malformed, forwarded host', () => {
    expect(publicBaseUrl({}, own)).toBe(own);
    expect(publicBaseUrl({ 'x-forwarded-host': 'h:6060' }, own)).toBe(own);
    for (const host of ['evil.org/path', 'a b', 'h:6060@x', '"x"', ''])
      expect(publicBaseUrl({ 'x-forwarded-host': host, 'x-forwarded-proto': 'https' }, own)).toBe(own);
  });
});
