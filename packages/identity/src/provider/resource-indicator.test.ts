import { describe, expect, it } from 'vitest';
import { isApiResource } from './clients.ts';

describe('isApiResource (RFC 8707 resource indicators the issuer maps to svc-api)', () => {
  it.each([
    'urn:svc:api',
    'https://svc.example',
    'https://svc.example:6060',
    'https://127.0.0.1:6060/',
    'https://svc.example:6060/mcp',
    'https://[::1]:6060/mcp',
  ])('accepts %s', (resource) => expect(isApiResource(resource)).toBe(true));

  it.each([
    '',
    'urn:svc:other',
    'http://svc.example:6060',
    'https://svc.example/other',
    'https://svc.example/mcp/x',
    'https://svc.example/mcp?x=1',
    'https://user@svc.example',
    'https://svc.example#x',
    `https://${'a'.repeat(400)}`,
    'javascript:alert(1)',
  ])('refuses %j', (resource) => expect(isApiResource(resource)).toBe(false));
});
