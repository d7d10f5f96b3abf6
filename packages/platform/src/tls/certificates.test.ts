import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateMaterial } from './certificates.ts';

describe('generateMaterial', () => {
  it('issues a server certificate signed by the generated CA with loopback and host SANs', async () => {
    const material = await generateMaterial('node-a.example');
    const ca = new X509Certificate(material.ca!);
    const cert = new X509Certificate(material.cert);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('node-a.example')).toBe('node-a.example');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkHost('evil.example')).toBeUndefined();
    expect(createPrivateKey(material.key).asymmetricKeyType).toBe('ec');
    const pub = createPublicKey(createPrivateKey(material.key)).export({ format: 'pem', type: 'spki' });
    expect(cert.publicKey.export({ format: 'pem', type: 'spki' })).toBe(pub);
  });
});
