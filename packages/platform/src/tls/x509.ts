// Certificate generation shared by svcd's server certificate (certificates.ts) and svc-identity's
// admin gRPC mutual-TLS material (packages/identity/src/admin/tls.ts): one key algorithm, one
// signature algorithm, one validity, and one lazy loader of @peculiar/x509.
import { webcrypto } from 'node:crypto';
import type * as X509 from '@peculiar/x509';

export const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
export const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
export const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

let x509Module: Promise<typeof X509> | undefined;

/**
 * @peculiar/x509 (with tsyringe and reflect-metadata, several MiB resident) is loaded only when
 * material must be generated: most starts read existing files.
 */
export function loadX509(): Promise<typeof X509> {
  x509Module ??= (async () => {
    // @peculiar/x509 resolves its ASN.1 services through tsyringe, which needs the Reflect metadata API.
    await import('reflect-metadata');
    const x509 = await import('@peculiar/x509');
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
    return x509;
  })();
  return x509Module;
}
